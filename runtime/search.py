"""Greedy, beam and sampled decoding over any decoder backend, in numpy.

A backend (ONNX Runtime here, PyTorch in `mtkit.train.reference`) owns the KV cache; the search
only sees log-probabilities and asks for rows to be kept or reordered. Because PyTorch and ONNX
run this same search, their outputs can be compared token for token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np

from .byte_pieces import open_rows, unfinishable
from .decode_options import DecodeOptions
from .prefix import Prefix, allowed_rows
from .repetition import Pieces, banned_tokens
from .vocab import BOS_ID, EOS_ID, PAD_ID


class DecoderBackend(Protocol):
    def start(self, src_ids: np.ndarray, src_mask: np.ndarray):
        """Encode a batch [B,S] and return a decoder state with an empty self-attention cache."""

    def step(self, state, tokens: np.ndarray, need_attention: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """Feed one new token per row ([N] int64); return float32 logits [N,V] and, if asked,
        the head-averaged cross-attention [N,S]. The state's cache grows by one position."""

    def select(self, state, rows: np.ndarray) -> None:
        """Keep (and reorder, or repeat) state rows: row i becomes old row rows[i]."""

    # Optional: a backend with `search_head_k = K > 0` also has
    #   step_top(state, tokens) -> (log-probs [N,K] best first, token ids [N,K], EOS log-prob [N]),
    # a step that ranks the vocabulary where the logits are (the ONNX decoder's search head).


@dataclass
class Hypothesis:
    tokens: list[int]                    # without BOS and EOS
    score: float                         # log-probability; length-normalised for beam search
    attention: list[list[float]] | None = None   # one source-length row per output token (+EOS)


def beam_score(log_prob: float, length: int, length_penalty: float) -> float:
    """A finished hypothesis's score in beam search: its log-prob / length ** length_penalty, the
    length counting EOS."""
    return log_prob / length ** length_penalty


class Beam(NamedTuple):
    """A live hypothesis carried into the next step of beam search."""
    row: int                             # the state row it continues
    score: float                         # log-probability so far (not normalised)
    token: int                           # its newest token, fed to the next step
    tokens: list[int]                    # all its tokens
    attention: list                      # its cross-attention rows (empty unless asked for)

    def normalised(self, length_penalty: float) -> float:
        return beam_score(self.score, len(self.tokens) + 1, length_penalty)


@dataclass
class Result:
    hypotheses: list[Hypothesis] = field(default_factory=list)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = logits.astype(np.float32, copy=False)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    shifted -= np.log(np.exp(shifted).sum(axis=-1, keepdims=True))     # in place: one [N,V] array less
    return shifted


def top_tokens(logp: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `width` most likely token ids [N,w] (in no particular order) and their log-probs."""
    vocab = logp.shape[1]
    w = min(width, vocab)
    ids = logp.argmax(axis=1)[:, None] if w == 1 else np.argpartition(logp, vocab - w, axis=1)[:, vocab - w:]
    return ids, np.take_along_axis(logp, ids, axis=1)


@dataclass
class StepRules:
    """What the rows of one decoding step may take next.

    `bans()`: {row: ids} it may not (repeats, repetition.py; lead bytes of characters that would not
    end before its length limit, byte_pieces.unfinishable). `allows`: {row: the only ids} inside a
    prefix (prefix.py): the whole distribution is needed there, and what the user wrote is never
    banned. `inside`: {row: the bytes} that may continue a started character (byte_pieces.open_rows).
    `never` [V]: the ids no row may take (Pieces.never)."""
    bans: Callable[[], dict[int, list[int]]]
    allows: dict[int, list[int]] = field(default_factory=dict)
    inside: dict[int, list[int]] = field(default_factory=dict)
    never: np.ndarray | None = None

    @classmethod
    def at(cls, histories: list[list[int]], last: np.ndarray, remaining: np.ndarray, opts: DecodeOptions,
           pieces: Pieces | None, prefixes: list[Prefix | None] | None = None) -> StepRules:
        """The rules for rows with these `histories`, newest tokens (`last`) and steps left (`remaining`,
        this one included). Bans are worked out only if the step asks for them."""
        def bans() -> dict[int, list[int]]:
            banned = banned_tokens(histories, opts, pieces)
            if pieces is not None:
                for row, leads in unfinishable(remaining, pieces).items():
                    banned.setdefault(row, []).extend(leads)
            return banned
        allows = allowed_rows(prefixes, histories, pieces) if prefixes else {}
        if pieces is None:
            return cls(bans, allows)
        return cls(bans, allows, open_rows(last, histories, pieces), pieces.never)


def next_tokens(backend, state, tokens: np.ndarray, width: int, opts: DecodeOptions, rules: StepRules):
    """One decoder step, reduced to what a search keeps: each row's `width` best token ids [N,w], their
    log-probs, EOS's log-prob [N] and the cross-attention (or None).

    The backend's search head ranks the vocabulary inside the graph when it has a wide enough one and
    nothing needs the whole distribution; tokens the rules rule out are then dropped from its
    candidates, which is exact unless a row loses so many that fewer than `width` are left. A row
    inside a character keeps only the bytes that continue it, if the head ranks one (as a trained model
    does after a lead byte); else it keeps its candidates, rather than all of them dropped.
    """
    if width <= getattr(backend, "search_head_k", 0) and not opts.return_alignment and not rules.allows:
        logp, ids, eos = backend.step_top(state, tokens)
        drop = rules.never[ids] if rules.never is not None else np.zeros(ids.shape, dtype=bool)
        for row, banned in rules.bans().items():
            drop[row] |= np.isin(ids[row], banned)
        for row, allowed in rules.inside.items():
            if (continues := np.isin(ids[row], allowed)).any():
                drop[row] = ~continues
        if drop.any():
            logp = np.where(drop, -np.inf, logp)
            order = np.argsort(-logp, axis=1, kind="stable")      # the survivors first, still best first
            logp, ids = np.take_along_axis(logp, order, axis=1), np.take_along_axis(ids, order, axis=1)
        return ids[:, :width], logp[:, :width], eos, None
    logp, attn = step_logprobs(backend, state, tokens, opts, rules)
    ids, top_logp = top_tokens(logp, width)
    return ids, top_logp, logp[:, EOS_ID], attn


def step_logprobs(backend, state, tokens: np.ndarray, opts: DecodeOptions, rules: StepRules):
    """One decoder step's full log-probabilities [N,V], what the rules rule out at -inf, and the
    cross-attention."""
    logits, attn = backend.step(state, tokens, need_attention=opts.return_alignment)
    logp = log_softmax(logits)
    only = {**rules.inside, **rules.allows}                  # a prefix's tokens win: the user wrote them
    kept = {row: logp[row, allowed] for row, allowed in only.items()}
    if rules.never is not None:
        logp[:, rules.never] = -np.inf
    for row, banned in rules.bans().items():
        if row not in rules.allows:
            logp[row, banned] = -np.inf
    for row, allowed in only.items():
        logp[row] = -np.inf
        logp[row, allowed] = kept[row]
    return logp, attn


def best_candidates(beam_scores: np.ndarray, ids: np.ndarray, logp: np.ndarray,
                    width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The `width` best continuations of each sentence, best first, ties broken by (beam, token):
    their beam [A, width], token and score beam_score + log p (float64).

    `ids` / `logp` [A*k, w] are each row's best w tokens: a sentence's best `width` candidates are
    among them when w >= width, because adding a row's beam score keeps the order within the row.
    """
    n_sent, k = beam_scores.shape
    w = ids.shape[1]
    scores = (beam_scores.reshape(-1, 1) + logp).reshape(n_sent, k * w)       # float64, as the beam scores
    beams = np.repeat(np.arange(k), w)[None, :].repeat(n_sent, axis=0)
    tokens = ids.reshape(n_sent, k * w)
    order = np.lexsort((tokens, beams, -scores), axis=1)[:, :width]
    pick = lambda a: np.take_along_axis(a, order, axis=1)   # noqa: E731
    return pick(beams), pick(tokens), pick(scores)


def max_lengths(src_mask: np.ndarray, opts: DecodeOptions, prefixes: list[Prefix | None] | None = None) -> np.ndarray:
    """Each sentence's last decoding step: the length ratio's, or past its prefix by max_length_extra,
    capped by the positions in max_length (if set)."""
    cap = np.iinfo(np.int32).max if opts.max_length is None else opts.max_length - 1
    # capped before the cast: a huge ratio times the length is no int64
    limits = np.minimum(np.ceil(opts.max_length_ratio * src_mask.sum(axis=1)) + opts.max_length_extra, cap)
    if prefixes is not None:
        limits = np.maximum(limits, [(p.most_steps if p else 0) + 1 + opts.max_length_extra for p in prefixes])
    return np.minimum(limits, cap).astype(np.int64)


def decode(backend: DecoderBackend, src_ids: np.ndarray, src_mask: np.ndarray, opts: DecodeOptions,
           pieces: Pieces | None = None, prefixes: list[Prefix | None] | None = None) -> list[Result]:
    """Decode a padded batch. With the vocabulary's `pieces`, the loop ban also sees words (repetition.py).
    `prefixes`, one per sentence (None: none), are what each output must start with (prefix.py)."""
    if prefixes is not None and not any(prefixes):
        prefixes = None
    if opts.sampling:
        n = max(opts.num_hypotheses, 1)
        if n == 1:
            return _sample(backend, src_ids, src_mask, opts, pieces, prefixes)
        # n independent samples per sentence: decode each sentence n times, best sample first.
        flat = _sample(backend, np.repeat(src_ids, n, axis=0), np.repeat(src_mask, n, axis=0), opts, pieces,
                       prefixes and [p for p in prefixes for _ in range(n)], copies=n)
        return [Result(sorted((h for r in flat[i * n:(i + 1) * n] for h in r.hypotheses), key=lambda h: -h.score))
                for i in range(src_ids.shape[0])]
    if opts.beam_size <= 1:
        return _greedy(backend, src_ids, src_mask, opts, pieces, prefixes)
    return _beam(backend, src_ids, src_mask, opts, pieces, prefixes)


def _greedy(backend, src_ids, src_mask, opts: DecodeOptions, pieces: Pieces | None = None,
            prefixes: list[Prefix | None] | None = None, pick=None) -> list[Result]:
    """Greedy search (or sampling, with `pick`). Finished rows leave the batch so that no step is
    spent on them."""
    batch = src_ids.shape[0]
    limits = max_lengths(src_mask, opts, prefixes)  # each state row's last step
    state = backend.start(src_ids, src_mask)
    active = np.arange(batch)                      # original sentence index of each state row
    histories = [[] for _ in range(batch)]
    scores = [0.0] * batch                         # float64 sums, as Python floats
    attention = [[] for _ in range(batch)]
    tokens = np.full(batch, BOS_ID, dtype=np.int64)
    step = 0
    # Few numpy calls a step, and Python scalars in the row loop: this runs right after each decoder
    # call, with the CPU caches cold, where a numpy call costs several microseconds.
    while active.size:
        step += 1
        sentences = active.tolist()
        so_far = [histories[i] for i in sentences]     # each state row's tokens so far
        remaining = limits - step
        rules = StepRules.at(so_far, tokens, remaining, opts, pieces, prefixes and [prefixes[i] for i in sentences])
        if pick is None:
            ids, logp, eos, attn = next_tokens(backend, state, tokens, 1, opts, rules)
            chosen, chosen_logp = ids[:, 0], logp[:, 0]
        else:
            logp, attn = step_logprobs(backend, state, tokens, opts, rules)
            chosen = pick(logp, active)
            chosen_logp, eos = logp[np.arange(len(active)), chosen], logp[:, EOS_ID]
        if (out_of_length := remaining <= 0).any():        # close the sentence: EOS, scored as EOS
            chosen = np.where(out_of_length, EOS_ID, chosen)
            chosen_logp = np.where(out_of_length, eos, chosen_logp)
        keep = []
        for row, (sent, token, token_logp) in enumerate(zip(sentences, chosen.tolist(), chosen_logp.tolist())):
            scores[sent] += token_logp
            if attn is not None:
                attention[sent].append(attn[row].tolist())
            if token == EOS_ID:
                continue
            histories[sent].append(token)
            keep.append(row)
        if len(keep) < len(active):
            keep = np.asarray(keep, dtype=np.int64)
            if keep.size:
                backend.select(state, keep)
            active, chosen, limits = active[keep], chosen[keep], limits[keep]
        tokens = chosen.astype(np.int64, copy=False)
    return [Result([Hypothesis(histories[i], scores[i], attention[i] if opts.return_alignment else None)])
            for i in range(batch)]


def row_draws(src_ids: np.ndarray, src_mask: np.ndarray, seed: int | None, copies: int = 1):
    """`draws(rows)`: a uniform number for each of those rows. With a seed, each row has its own generator,
    seeded by the seed, the row's source tokens and which of its sentence's `copies` it is, so a sentence's
    samples do not depend on the batch it shares or its place in the input."""
    if seed is None:
        rng = np.random.default_rng()
        return lambda rows: rng.random((len(rows), 1))
    generators = [np.random.default_rng([seed, row % copies, *ids[mask.astype(bool)].tolist()])
                  for row, (ids, mask) in enumerate(zip(src_ids, src_mask))]
    return lambda rows: np.array([[generators[row].random()] for row in rows])


def _sample(backend, src_ids, src_mask, opts: DecodeOptions, pieces: Pieces | None = None,
            prefixes: list[Prefix | None] | None = None, copies: int = 1) -> list[Result]:
    draws = row_draws(src_ids, src_mask, opts.seed, copies)

    def pick(logp: np.ndarray, rows: np.ndarray) -> np.ndarray:
        logits = logp / max(opts.temperature, 1e-6)
        if 0 < opts.top_k < logits.shape[-1]:           # a K of the whole vocabulary or more keeps all
            kth = -np.partition(-logits, opts.top_k - 1, axis=-1)[:, opts.top_k - 1:opts.top_k]
            logits = np.where(logits < kth, -np.inf, logits)
        probs = np.exp(log_softmax(logits))
        if opts.top_p < 1.0:
            order = np.argsort(-probs, axis=-1, kind="stable")
            sorted_probs = np.take_along_axis(probs, order, axis=-1)
            # Keep the smallest prefix whose mass reaches top_p (always at least one token).
            drop_sorted = np.cumsum(sorted_probs, axis=-1) - sorted_probs >= opts.top_p
            drop_sorted[:, 0] = False
            drop = np.zeros_like(drop_sorted)
            np.put_along_axis(drop, order, drop_sorted, axis=-1)
            probs = np.where(drop, 0.0, probs)
            probs /= probs.sum(axis=-1, keepdims=True)
        cumulative = probs.cumsum(axis=-1)
        u = draws(rows) * cumulative[:, -1:]
        return np.minimum((cumulative < u).sum(axis=-1), probs.shape[1] - 1)

    return _greedy(backend, src_ids, src_mask, opts, pieces, prefixes, pick=pick)


def keep_best(finished: list[Hypothesis], hyp: Hypothesis, k: int) -> None:
    """Add `hyp` to a sentence's finished list, keeping its best k."""
    if len(finished) < k:
        finished.append(hyp)
    else:
        worst = min(range(k), key=lambda i: finished[i].score)
        if hyp.score > finished[worst].score:
            finished[worst] = hyp


def _beam(backend, src_ids, src_mask, opts: DecodeOptions, pieces: Pieces | None = None,
          prefixes: list[Prefix | None] | None = None) -> list[Result]:
    """Batched beam search. A sentence is done once it holds `beam_size` finished hypotheses and
    none of its live beams, ended now, would score better than the worst of them (Hugging Face's
    default rule: stopping at the first `beam_size` finished, as fairseq does, lets unlikely early
    endings close a sentence while its best hypothesis is still running). Its rows then leave the batch."""
    batch, k = src_ids.shape[0], opts.beam_size
    n_best = min(max(opts.num_hypotheses, 1), k)
    limits = max_lengths(src_mask, opts, prefixes)
    state = backend.start(src_ids, src_mask)
    backend.select(state, np.repeat(np.arange(batch), k))           # k rows per sentence
    active = np.arange(batch)
    beam_scores = np.tile(np.array([0.0] + [-np.inf] * (k - 1)), (batch, 1))   # [A, k]
    beam_tokens = [[[] for _ in range(k)] for _ in range(batch)]
    beam_attn = [[[] for _ in range(k)] for _ in range(batch)]
    finished: list[list[Hypothesis]] = [[] for _ in range(batch)]
    tokens = np.full(batch * k, BOS_ID, dtype=np.int64)
    step = 0
    while active.size:
        step += 1
        so_far = [beam_tokens[s][b] for s in active for b in range(k)]   # each state row's tokens so far
        rules = StepRules.at(so_far, tokens, np.repeat(limits[active], k) - step, opts, pieces,
                             prefixes and [prefixes[s] for s in active for _ in range(k)])
        ids, logp, eos, attn = next_tokens(backend, state, tokens, 2 * k, opts, rules)
        # The best 2k candidates per sentence (k may end with EOS), as Python lists for the loop below.
        cand_beams, cand_tokens, cand_scores = (c.tolist() for c in best_candidates(beam_scores, ids, logp, 2 * k))

        rows, new_scores, new_tokens, still_active = [], [], [], []
        for a, sent in enumerate(active):
            if step >= limits[sent]:
                # Out of length: close every live beam once, scoring EOS in place of the next token.
                for beam in range(k):
                    if np.isfinite(beam_scores[a, beam]):
                        row, hist = a * k + beam, beam_tokens[sent][beam]
                        score = beam_scores[a, beam] + eos[row]
                        att = beam_attn[sent][beam] + ([attn[row].tolist()] if attn is not None else [])
                        norm = beam_score(score, len(hist) + 1, opts.length_penalty)
                        finished[sent].append(Hypothesis(list(hist), float(norm), att if opts.return_alignment else None))
                continue
            next_beams = []
            for beam, token, score in zip(cand_beams[a], cand_tokens[a], cand_scores[a]):
                if not np.isfinite(score):
                    break
                row = a * k + beam
                hist = beam_tokens[sent][beam]
                att = beam_attn[sent][beam] + ([attn[row].tolist()] if attn is not None else [])
                if token == EOS_ID:
                    norm = beam_score(score, len(hist) + 1, opts.length_penalty)
                    keep_best(finished[sent], Hypothesis(list(hist), float(norm), att if opts.return_alignment else None), k)
                    continue
                next_beams.append(Beam(row, score, token, hist + [token], att))
                if len(next_beams) == k:
                    break
            if not next_beams or (len(finished[sent]) >= k and min(h.score for h in finished[sent]) >=
                                  max(b.normalised(opts.length_penalty) for b in next_beams)):
                continue
            still_active.append(a)
            while len(next_beams) < k:      # keep k rows per sentence; spares can never win
                next_beams.append(next_beams[0]._replace(score=-np.inf, token=PAD_ID))
            for b, beam in enumerate(next_beams):
                rows.append(beam.row)
                new_scores.append(beam.score)
                new_tokens.append(beam.token)
                beam_tokens[sent][b] = beam.tokens
                beam_attn[sent][b] = beam.attention
        if not still_active:
            break
        backend.select(state, np.asarray(rows, dtype=np.int64))
        active = active[still_active]
        beam_scores = np.asarray(new_scores, dtype=np.float64).reshape(len(active), k)
        tokens = np.asarray(new_tokens, dtype=np.int64)

    results = []
    for sent in range(batch):
        hyps = sorted(finished[sent], key=lambda h: -h.score)[:n_best]
        results.append(Result(hyps))
    return results
