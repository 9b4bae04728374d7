"""What `Translator.translate` returns: plain dataclasses, one `Translation` per text."""

from __future__ import annotations

from dataclasses import dataclass, field

from .language_id import SourceLanguage


@dataclass
class Hypothesis:
    text: str
    tokens: list[str]          # target SentencePiece pieces
    score: float               # log-probability; length-normalised for beam search (see search.py)


@dataclass
class Alignment:
    """Cross-attention of the last decoder layer (averaged over heads) for the best hypothesis.

    Rows are `target_tokens` (the output pieces and the closing </s>), columns `source_tokens`
    (the language tag, the source pieces and </s>). A text decoded in several parts (sentences)
    gets a block-diagonal matrix: zeros between a part's target and another part's source."""

    source_tokens: list[str]
    target_tokens: list[str]
    weights: list[list[float]]


@dataclass
class Translation:
    text: str
    tokens: list[str]
    score: float
    hypotheses: list[Hypothesis]            # n-best, best first; hypotheses[0] is text/tokens/score
    alignment: Alignment | None = None
    source: str = ""
    num_tokens: int = 0                     # target pieces of the best hypothesis, without </s>
    num_source_tokens: int = 0              # source pieces, without the language tag and </s>
    num_parts: int = 0                      # sentences (and pieces of over-long ones) decoded
    timings: dict = field(default_factory=dict)   # ms spent by the whole call this came from, and its size
    warnings: list[str] = field(default_factory=list)
    languages: list[SourceLanguage] = field(default_factory=list)   # per sentence: taken as which language, translated?

    @property
    def language(self) -> str | None:
        """The language most sentences were taken to be in (the first on a tie): as detected and decided, or as
        given. A sentence left as it is counts as the target language."""
        found = [sentence.language for sentence in self.languages if sentence.language]
        return max(found, key=found.count) if found else None

    @property
    def translated(self) -> bool:
        """False when the whole text came back unchanged: it was already in the target language."""
        return any(sentence.translated for sentence in self.languages)
