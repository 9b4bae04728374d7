"""devtools/ui_labels.py: which instruction pairs give a label pair, and which do not."""

from __future__ import annotations

import gzip
import importlib.util
import sys
from pathlib import Path

DEVTOOLS = Path(__file__).resolve().parents[1] / "devtools"


def load_tool():
    sys.path.insert(0, str(DEVTOOLS))      # it imports heldout_labels beside it, as when run as a script
    try:
        spec = importlib.util.spec_from_file_location("ui_labels", DEVTOOLS / "ui_labels.py")
        tool = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tool)
        return tool
    finally:
        sys.path.remove(str(DEVTOOLS))


PAIRS = [
    ("Wählen Sie Speichern aus.", "Select Save."),
    ("Klicken Sie auf Weiter, um fortzufahren.", "Click Next to continue."),
    ("Wählen Sie die Schaltfläche Position hinzufügen aus.", "Select the Add line button."),
    ("Wählen Sie Speichern aus.", "Select Save."),                        # counted again
    ("Wählen Sie diese Option aus.", "Select this option."),              # no label: an article
    ("Wählen Sie Speichern aus, um die Änderungen zu behalten.", "Select Save."),   # either ending
    ("Wählen Sie im Bereich Aktionen den Eintrag Neu aus.", "In the Actions pane, select New."),
    ("Das Speichern dauert.", "Saving takes a while."),
]


def test_labels_come_from_instructions_both_languages_phrase_alike(tmp_path):
    docs = tmp_path / "techdocs"
    docs.mkdir()
    for side, name in ((0, "de"), (1, "en")):
        with gzip.open(docs / f"msdocs.{name}.gz", "wt", encoding="utf-8") as f:
            f.writelines(pair[side] + "\n" for pair in PAIRS)
    labels = load_tool().ui_labels(tmp_path)
    assert labels == {("Speichern", "Save"): 3, ("Weiter", "Next"): 1, ("Position hinzufügen", "Add line"): 1}
