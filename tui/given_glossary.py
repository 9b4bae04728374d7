"""The glossary given with `mt-tui --glossary FILE`: read and checked as mt-translate and mt-serve read
and check theirs (runtime/glossary.py, with its one-line errors), and applied to the translations of each
model whose languages it fits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mtkit.runtime.glossary import Glossary, GlossaryError


@dataclass(frozen=True)
class GivenGlossary:
    glossary: Glossary

    @classmethod
    def read(cls, path: str) -> GivenGlossary:
        """The file read; a GlossaryError names the file and the line at fault."""
        return cls(Glossary.read(path))

    @property
    def path(self) -> str:
        """The file as given: the messages name it so, as mt-translate's do."""
        return self.glossary.path

    def misfit(self, translator) -> str | None:
        """Why the glossary cannot be used with `translator`'s model (its languages are others), or None."""
        try:
            self.glossary.check_model(translator)
        except GlossaryError as e:
            return str(e)               # names the file
        return None

    def describe(self) -> str:
        terms = len(self.glossary.entries)
        return (f"{Path(self.path).name}, {terms} term{'' if terms == 1 else 's'} "
                f"({self.glossary.source} ↔ {self.glossary.target})")
