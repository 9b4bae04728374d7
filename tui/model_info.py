"""The model-info panel: what the bundle's config.json says about the model in use."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from .state import bundle_directions, direction_label, language_name


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _fmt(value) -> str:
    """A BLEU score as the panel shows it."""
    if isinstance(value, (int, float)):
        return f"{value:.1f}"
    return "—" if value is None else str(value)


def parity_line(report: dict) -> str:
    """One variant's parity summary (keys as export/api.py writes them into config.json)."""
    if report.get("run") is False:
        return "not run" + (f" ({report['reason']})" if report.get("reason") else "")
    parts = []
    if "greedy_match_rate" in report:
        parts.append(f"greedy match {report['greedy_match_rate']:.0%}")
    if "beam_match_rate" in report:
        parts.append(f"beam match {report['beam_match_rate']:.0%}")
    if "max_abs_logit_diff" in report:
        parts.append(f"max logit diff {report['max_abs_logit_diff']:.1e}")
    if report.get("bleu") is not None:
        parts.append(f"BLEU {report['bleu']:.1f}")
    return " · ".join(parts) or "—"


def bleu_line(config) -> str | None:
    """BLEU as the training run and the export's parity check measured it."""
    scores = (config.provenance or {}).get("scores") or {}
    parts = []
    if scores.get("final_dev_bleu") is not None:
        parts.append(f"dev {_fmt(scores['final_dev_bleu'])} (final checkpoint)")
    best = scores.get("best_dev_bleu")
    if isinstance(best, (int, float)):
        parts.append(f"best dev {_fmt(best)}")
    elif isinstance(best, list) and best:
        # [[bleu, epoch, path], ...] as train/ records it (dicts or bare numbers also read)
        values = [b.get("bleu") if isinstance(b, dict) else b[0] if isinstance(b, (list, tuple)) and b else b
                  for b in best]
        values = [v for v in values if isinstance(v, (int, float))]
        if values:
            parts.append(f"best dev {_fmt(max(values))}")
    fp32 = (config.parity or {}).get("fp32") or {}
    if fp32.get("bleu") is not None:
        parts.append(f"parity set {fp32['bleu']:.1f} (ONNX fp32)")
    return " · ".join(parts) or None


def info_rows(translator, glossary: str | None = None) -> list[tuple[str, str]]:
    """(field, value) rows describing a loaded runtime Translator, and the glossary given, if one was."""
    config = translator.config
    path = Path(str(translator.path))
    rows = [("Model", path.name), ("Path", str(path))]
    langs = sorted(config.language_tags)
    rows.append(("Languages", ", ".join(f"{language_name(c)} ({c})" for c in langs)))
    rows.append(("Directions", ", ".join(direction_label(d) for d in bundle_directions(config))))
    if glossary:
        rows.append(("Glossary", glossary))
    rows.append(("Architecture", f"{config.encoder_layers}+{config.decoder_layers} layers, d_model {config.d_model}, "
                                 f"{config.n_heads} heads, vocabulary {config.vocab_size}, "
                                 f"max {config.max_positions} positions"))
    for name, entry in (config.variants or {}).items():
        entry = entry or {}
        sizes = entry.get("size_bytes") or {}
        size = f", {human_bytes(sum(sizes.values()))}" if sizes else ""
        in_use = "  ← in use" if name == translator.variant else ""
        rows.append((f"Variant {name}", f"{entry.get('precision', name)}{size}{in_use}"))
    rows.append(("Provider", str(translator.provider).upper()))
    parity = config.parity or {}
    if parity:
        if "passed" in parity:
            rows.append(("Parity", "passed" if parity["passed"] else "FAILED"))
        for name, report in parity.items():
            if isinstance(report, dict):
                rows.append((f"Parity {name}", parity_line(report)))
    bleu = bleu_line(config)
    if bleu:
        rows.append(("BLEU", bleu))
    scores = (config.provenance or {}).get("scores") or {}
    if scores.get("step") is not None:
        epochs = scores.get("epoch")
        rows.append(("Trained", f"{scores['step']} steps" + (f", {epochs} epoch{'s' if epochs != 1 else ''}"
                                                            if epochs else "")))
    if (config.provenance or {}).get("exported_at"):
        rows.append(("Exported", str(config.provenance["exported_at"])))
    return rows


class ModelInfo(Static):
    """A two-column table of the rows above, or a hint when no model is loaded."""

    def show_translator(self, translator, glossary: str | None = None) -> None:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, value in info_rows(translator, glossary):
            table.add_row(key, Text(value))     # literally: a path may hold [brackets]
        self.update(table)

    def show_message(self, message: str) -> None:
        self.update(Text(message, style="italic"))
