"""The search (runtime/search.py, runtime/batching.py) against a numpy backend with known log-probs.

No model and no ONNX Runtime: `TableBackend` answers each step with logits that are a fixed
function of (source sentence, target prefix), either a hand-written table or a pseudo-random one.
Every result is therefore known, worked out by hand or by enumerating every hypothesis, and is
asserted exactly (token for token; scores to float32 precision). The search over the real graphs,
and their in-graph search head, are tested in test_runtime_search.py.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import pytest

from mtkit.runtime import repetition, search
from mtkit.runtime.byte_pieces import next_bytes
from mtkit.runtime.batching import decode_all, length_batches, pad_batch
from mtkit.runtime.prefix import Prefix, spelling_out
from mtkit.runtime.search import DecodeOptions, decode
from mtkit.runtime.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID

V = 12                                                   # the special ids and eight words
WORDS = [t for t in range(V) if t not in (PAD_ID, UNK_ID, BOS_ID, EOS_ID)]
A, B, C, D, E, F, G, H = WORDS
EOS = EOS_ID
LOG = math.log


# ---------------------------------------------------------------------------------------------
# Models: model(source ids, target prefix) -> float64 logits [V]; -inf marks an impossible token.

def dist(probs: dict[int, float]) -> np.ndarray:
    """Logits whose softmax is exactly `probs` (tokens left out are impossible)."""
    assert math.isclose(sum(probs.values()), 1.0)
    logits = np.full(V, -np.inf)
    for token, p in probs.items():
        logits[token] = LOG(p)
    return logits


def table(entries: dict[tuple[int, ...], dict[int, float]]):
    """The distribution after each listed target prefix; after any other prefix, EOS."""
    return lambda src, prefix: dist(entries.get(prefix, {EOS: 1.0}))


def markov(first: dict[int, float], after: dict[int, dict[int, float]]):
    """`first` after BOS, then `after[previous token]` (EOS where absent)."""
    return lambda src, prefix: dist(after.get(prefix[-1], {EOS: 1.0}) if prefix else first)


def per_source(models: dict[tuple[int, ...], object]):
    return lambda src, prefix: models[src](src, prefix)


def random_model(seed: int, dense: bool = False):
    """Pseudo-random logits, a fixed function of (seed, source, prefix), without ties. Sparse: EOS
    and one to three of A, B, C, UNK are possible (few enough hypotheses to enumerate them all);
    dense: every token but BOS is."""
    @lru_cache(maxsize=None)
    def model(src, prefix):
        rng = np.random.default_rng([seed, zlib.crc32(repr((src, prefix)).encode())])
        logits = rng.normal(0.0, 2.0, V)
        possible = np.zeros(V, dtype=bool)
        if dense:
            possible[:] = True
            possible[BOS_ID] = False
        else:
            possible[rng.choice([A, B, C, UNK_ID], size=rng.integers(1, 4), replace=False)] = True
            possible[EOS] = True
        logits[~possible] = -np.inf
        logits.flags.writeable = False
        return logits
    return model


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """In float64, independently of search.log_softmax."""
    top = logits.max(axis=-1, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))


def attention_row(src: tuple, prefix: tuple, width: int) -> np.ndarray:
    """The backend's cross-attention after `prefix`: a distribution over the source, different for each prefix."""
    rng = np.random.default_rng(zlib.crc32(repr((src, prefix)).encode()))
    row = np.zeros(width, dtype=np.float32)
    row[:len(src)] = rng.dirichlet(np.ones(len(src)))
    return row


# ---------------------------------------------------------------------------------------------
# Backends

@dataclass
class State:
    sources: list[tuple[int, ...]]          # each row's source ids, padding removed
    fed: list[tuple[int, ...]]              # each row's tokens fed so far: BOS, then its target prefix
    width: int                              # the padded source length S


class TableBackend:
    """A DecoderBackend whose logits are model(source, target prefix). It also checks how it is driven."""

    def __init__(self, model):
        self.model = model
        self.starts = self.steps = self.head_steps = self.selects = 0

    def start(self, src_ids: np.ndarray, src_mask: np.ndarray) -> State:
        assert src_ids.ndim == 2 and src_ids.shape == src_mask.shape
        self.starts += 1
        sources = [tuple(int(t) for t in ids[mask.astype(bool)]) for ids, mask in zip(src_ids, src_mask)]
        return State(sources, [() for _ in sources], src_ids.shape[1])

    def step(self, state: State, tokens: np.ndarray, need_attention: bool = False):
        self.steps += 1
        logits = self._advance(state, tokens)
        if not need_attention:
            return logits, None
        return logits, np.stack([attention_row(s, f[1:], state.width) for s, f in zip(state.sources, state.fed)])

    def select(self, state: State, rows: np.ndarray) -> None:
        assert rows.ndim == 1 and rows.dtype.kind == "i" and rows.size
        assert ((rows >= 0) & (rows < len(state.fed))).all()
        self.selects += 1
        state.sources = [state.sources[r] for r in rows]
        state.fed = [state.fed[r] for r in rows]

    def _advance(self, state: State, tokens: np.ndarray) -> np.ndarray:
        assert tokens.dtype == np.int64 and tokens.shape == (len(state.fed),)
        assert EOS not in tokens                                    # a finished row is never fed again
        assert all((t == BOS_ID) == (not fed) for t, fed in zip(tokens, state.fed))   # BOS first, only first
        state.fed = [fed + (int(t),) for fed, t in zip(state.fed, tokens)]
        return np.stack([self.model(s, f[1:]) for s, f in zip(state.sources, state.fed)]).astype(np.float32)


class HeadBackend(TableBackend):
    """With a search head shaped as the ONNX decoder's (export/search_head.py): `step_top` returns each
    row's `search_head_k` best log-probs best first, their token ids (ties: lower id first, as ONNX
    TopK) and EOS's log-prob."""

    search_head_k = 8

    def step_top(self, state: State, tokens: np.ndarray):
        self.head_steps += 1
        logp = log_softmax(self._advance(state, tokens).astype(np.float64)).astype(np.float32)
        ids = np.argsort(-logp, axis=1, kind="stable")[:, :self.search_head_k]
        return np.take_along_axis(logp, ids, axis=1), ids.astype(np.int64), logp[:, EOS].copy()


def greedy_unless(**options) -> DecodeOptions:
    """DecodeOptions for these tests: greedy unless they ask for a beam (the product's default is beam 4),
    and length penalty 1, which their hand-worked beam scores assume, unless they ask for another."""
    return DecodeOptions(**{"beam_size": 1, "length_penalty": 1.0, **options})


def run(model, sources, backend_cls=TableBackend, **options):
    backend = backend_cls(model)
    return decode(backend, *pad_batch(sources), greedy_unless(**options)), backend


# ---------------------------------------------------------------------------------------------
# References, computed without the search

def limit(src_len: int, opts: DecodeOptions) -> int:
    """The step at which a hypothesis is closed (EOS forced): it has at most limit - 1 tokens."""
    stop = math.ceil(opts.max_length_ratio * src_len) + opts.max_length_extra
    return stop if opts.max_length is None else min(stop, opts.max_length - 1)


def has_repeat(tokens, n: int) -> bool:
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return n > 0 and len(grams) != len(set(grams))


def ends_in_loop(tokens, max_period: int) -> bool:
    """Whether `tokens` end in a loop the search bans: a run of 1 or 2 tokens three times back to
    back, or of 3 to max_period tokens twice."""
    for p in range(1, max_period + 1):
        copies = 3 if p <= 2 else 2
        if len(tokens) >= copies * p and list(tokens[-copies * p:]) == list(tokens[-p:]) * copies:
            return True
    return False


def banned(tokens, opts: DecodeOptions) -> bool:
    """Whether the search may not end `tokens` with their last token."""
    return has_repeat(tokens, opts.no_repeat_ngram_size) or ends_in_loop(tokens, opts.no_repeat_loop)


def every_hypothesis(model, src, opts: DecodeOptions) -> list[tuple[list[int], float]]:
    """Every hypothesis the search may return for `src`, with its log-probability (EOS included):
    at most limit - 1 tokens, none that a ban (n-grams, loops) rules out."""
    src, found, stop = tuple(src), [], limit(len(src), opts)

    def walk(prefix, score):
        logp = log_softmax(model(src, prefix))
        found.append((list(prefix), score + logp[EOS]))
        if len(prefix) + 1 < stop:
            for t in map(int, np.flatnonzero(np.isfinite(logp))):
                if t != EOS and not banned(prefix + (t,), opts):
                    walk(prefix + (t,), score + logp[t])

    walk((), 0.0)
    return [(tokens, score) for tokens, score in found if np.isfinite(score)]


def best_first(hypotheses, length_penalty: float):
    """Hypotheses by beam score: log p / length ** length_penalty, the length counting EOS."""
    scored = [(tokens, score / (len(tokens) + 1) ** length_penalty) for tokens, score in hypotheses]
    return sorted(scored, key=lambda h: -h[1])


def log_prob(model, src, tokens) -> float:
    """The log-probability of `tokens` then EOS."""
    logps = [log_softmax(model(tuple(src), tuple(tokens[:i]))) for i in range(len(tokens) + 1)]
    return float(sum(lp[t] for lp, t in zip(logps, [*tokens, EOS])))


def greedy_walk(model, src, opts: DecodeOptions) -> tuple[list[int], float]:
    """The most likely next token at every step (lowest id on a tie), EOS forced at the limit."""
    src, prefix, score, stop = tuple(src), (), 0.0, limit(len(src), opts)
    for step in range(1, stop + 1):
        logp = log_softmax(model(src, prefix))
        for t in range(V):
            if t != EOS and banned(prefix + (t,), opts):
                logp[t] = -np.inf
        token = EOS if step >= stop else int(np.argmax(logp))
        score += logp[token]
        if token == EOS:
            return list(prefix), score
        prefix += (token,)
    raise AssertionError("unreachable")


def hyps(result) -> list[tuple[list[int], float]]:
    return [(h.tokens, h.score) for h in result.hypotheses]


def assert_hyps(result, expected) -> None:
    """Same tokens, in the same order; the same scores to float32 precision."""
    assert [h.tokens for h in result.hypotheses] == [list(t) for t, _ in expected]
    assert [h.score for h in result.hypotheses] == pytest.approx([s for _, s in expected], abs=1e-5)


def assert_same(results_a, results_b) -> None:
    assert len(results_a) == len(results_b)
    for a, b in zip(results_a, results_b):
        assert_hyps(a, hyps(b))


# ---------------------------------------------------------------------------------------------
# Hand-written tables

# Greedy: A (.5), then C (.6), then EOS (.7).
GREEDY = table({(): {A: .5, B: .3, EOS: .2}, (A,): {C: .6, EOS: .4}, (A, C): {EOS: .7, D: .3}})

# A garden path: A is the likelier first token, but every continuation of A is weak.
#   A C .24, A D .21, A E .15, B F .36, B .04 (each then EOS)
GARDEN = table({(): {A: .6, B: .4}, (A,): {C: .4, D: .35, E: .25}, (B,): {F: .9, EOS: .1}})

# Short against long: A .45 (2 steps with EOS), E .2, B .035, B C .0315, B C D .2835 (4 steps).
LENGTHS = table({(): {A: .45, B: .35, E: .2}, (B,): {C: .9, EOS: .1}, (B, C): {D: .9, EOS: .1}})
LENGTHS_HYPS = [([A], .45), ([E], .2), ([B], .35 * .1), ([B, C], .35 * .9 * .1), ([B, C, D], .35 * .9 * .9)]

# Would alternate A B A B ... for ever: EOS has .1 after every token.
LOOP = markov({A: .6, B: .3, EOS: .1}, {A: {B: .9, EOS: .1}, B: {A: .9, EOS: .1}})

# Ends at once, most likely: [] .7, [A] .3.
QUIET = table({(): {EOS: .7, A: .3}})

BACKENDS = pytest.mark.parametrize("backend_cls", [TableBackend, HeadBackend])


# ---------------------------------------------------------------------------------------------
# Greedy

@BACKENDS
def test_greedy_takes_the_argmax_at_each_step_and_sums_its_log_probs(backend_cls):
    [result], backend = run(GREEDY, [[A]], backend_cls)
    assert_hyps(result, [([A, C], LOG(.5) + LOG(.6) + LOG(.7))])
    assert backend.steps + backend.head_steps == 3           # no step after EOS


@pytest.mark.parametrize("ngram", [0, 2])
@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_greedy_is_the_step_by_step_argmax(seed, dense, ngram):
    """A batch whose rows end at different steps (and leave it) against a walk per sentence."""
    model = random_model(seed, dense)
    sources = [[A], [B, C], [C, A, B, D, E], [D, D], [A, A, A]]
    opts = greedy_unless(max_length_ratio=1.0, max_length_extra=3, no_repeat_ngram_size=ngram)
    results, _ = run(model, sources, **vars(opts))
    for src, result in zip(sources, results):
        assert_hyps(result, [greedy_walk(model, src, opts)])


@pytest.mark.parametrize("seed", range(4))
def test_a_beam_of_one_is_greedy(seed):
    model = random_model(seed, dense=True)
    ids, mask = pad_batch([[A], [B, C, D], [E, E]])
    opts = DecodeOptions(beam_size=1, length_penalty=0.0, max_length_ratio=1.0, max_length_extra=4)
    greedy = search._greedy(TableBackend(model), ids, mask, opts)
    beam = search._beam(TableBackend(model), ids, mask, opts)
    assert_same(beam, greedy)      # length_penalty 0: the beam score is the plain log-prob, as greedy's


# ---------------------------------------------------------------------------------------------
# Beam search and n-best lists

@BACKENDS
def test_beam_escapes_the_garden_path_that_greedy_takes(backend_cls):
    [greedy], _ = run(GARDEN, [[A]], backend_cls)
    assert_hyps(greedy, [([A, C], LOG(.6 * .4))])
    [beam], _ = run(GARDEN, [[A]], backend_cls, beam_size=2, num_hypotheses=2, length_penalty=1.0)
    assert_hyps(beam, [([B, F], LOG(.4 * .9) / 3), ([A, C], LOG(.6 * .4) / 3)])
    # ... which are the two best of all its hypotheses.
    assert_hyps(beam, best_first(every_hypothesis(GARDEN, [A], greedy_unless()), 1.0)[:2])


@pytest.mark.parametrize("length_penalty", [0.0, 0.6, 1.0, 2.0])
@pytest.mark.parametrize("seed", range(8))
def test_a_wide_enough_beam_returns_every_hypothesis_best_first(seed, length_penalty):
    """With a beam as wide as the number of hypotheses nothing is pruned: the n-best list is all of
    them, ranked and scored as enumeration ranks and scores them."""
    model = random_model(seed)
    sources = [[A], [B, C], [C, A, B, D]]                    # limits 2, 3, 5: up to 1, 2, 4 tokens
    opts = greedy_unless(max_length_ratio=1.0, max_length_extra=1, length_penalty=length_penalty)
    every = [every_hypothesis(model, src, opts) for src in sources]
    opts = replace(opts, beam_size=max(map(len, every)), num_hypotheses=max(map(len, every)))
    results, _ = run(model, sources, **vars(opts))
    for result, hypotheses in zip(results, every):
        assert_hyps(result, best_first(hypotheses, length_penalty))


@pytest.mark.parametrize("ngram", [1, 2, 3])
@pytest.mark.parametrize("seed", range(4))
def test_a_wide_enough_beam_with_an_ngram_ban_returns_every_allowed_hypothesis(seed, ngram):
    model = random_model(seed)
    sources = [[A, B], [C, A, B, D, E]]                      # limits 4, 6
    opts = greedy_unless(max_length_ratio=1.0, max_length_extra=1, no_repeat_ngram_size=ngram)
    every = [every_hypothesis(model, src, opts) for src in sources]
    opts = replace(opts, beam_size=max(map(len, every)), num_hypotheses=max(map(len, every)))
    results, _ = run(model, sources, **vars(opts))
    for result, hypotheses in zip(results, every):
        assert_hyps(result, best_first(hypotheses, opts.length_penalty))


@pytest.mark.parametrize("seed", range(4))
def test_nbest_is_sorted_distinct_led_by_the_best_and_truly_scored(seed):
    model = random_model(seed, dense=True)                   # far too many hypotheses for the beam
    sources = [[A], [B, C, D]]
    opts = dict(beam_size=5, max_length_ratio=1.0, max_length_extra=4, length_penalty=0.8)
    results, _ = run(model, sources, num_hypotheses=5, **opts)
    best, _ = run(model, sources, num_hypotheses=1, **opts)
    for src, result, one in zip(sources, results, best):
        tokens, scores = [h.tokens for h in result.hypotheses], [h.score for h in result.hypotheses]
        assert len(tokens) == 5 and len({tuple(t) for t in tokens}) == 5
        assert scores == sorted(scores, reverse=True)
        assert_hyps(one, hyps(result)[:1])
        assert all(len(t) <= limit(len(src), greedy_unless(**opts)) - 1 for t in tokens)
        assert scores == pytest.approx([log_prob(model, src, t) / (len(t) + 1) ** 0.8 for t in tokens], abs=1e-5)


@pytest.mark.parametrize("length_penalty, best", [(0.0, [A]), (0.5, [A]), (1.0, [B, C, D]), (2.0, [B, C, D])])
def test_length_penalty_moves_the_pick_to_longer_hypotheses(length_penalty, best):
    """log .45 / 2**lp against log .2835 / 4**lp: the short A wins up to lp ~0.66, then B C D."""
    [result], _ = run(LENGTHS, [[A]], beam_size=5, num_hypotheses=5, length_penalty=length_penalty)
    assert result.hypotheses[0].tokens == best
    assert_hyps(result, best_first([(t, LOG(p)) for t, p in LENGTHS_HYPS], length_penalty))
    [greedy], _ = run(LENGTHS, [[A]], length_penalty=length_penalty)      # greedy scores are not normalised
    assert_hyps(greedy, [([A], LOG(.45))])


def test_beam_runs_on_while_a_live_hypothesis_could_beat_the_finished_ones():
    """Beam 2 on LENGTHS: step 2 finishes A (.45) and B (.035), but the live B C, ended now, would beat
    B, so the search goes on; B C (.0315 / 3) then replaces B, and B C D (.2835 / 4) replaces B C:
    the exhaustive best two. (Stopping at the first beam_size finished, fairseq's rule, returned
    A and B after 2 steps.)"""
    [result], backend = run(LENGTHS, [[A]], beam_size=2, num_hypotheses=2, length_penalty=1.0)
    assert_hyps(result, [([B, C, D], LOG(.2835) / 4), ([A], LOG(.45) / 2)])
    assert backend.steps == 4
    # A better finished hypothesis replaces the worst one kept: step 1 finishes [] (.3); step 2 finishes
    # A (.45) and B (.18, and log .18 / 2 > log .3), which replaces []. The live A C and B D, ended
    # now, score below both, so the search stops there.
    early = table({(): {A: .5, EOS: .3, B: .2}, (A,): {EOS: .9, C: .1}, (B,): {EOS: .9, D: .1}})
    [result], backend = run(early, [[A]], beam_size=2, num_hypotheses=2, length_penalty=1.0)
    assert_hyps(result, [([A], LOG(.45) / 2), ([B], LOG(.18) / 2)])
    assert backend.steps == 2


# ---------------------------------------------------------------------------------------------
# Length limits

def alternating(n: int) -> list[int]:
    return [A, B] * (n // 2) + [A] * (n % 2)


@BACKENDS
def test_greedy_is_closed_at_each_sentences_max_length(backend_cls):
    sources = [[C] * 2, [C] * 5, [C] * 9]
    # ceil(0.5 * length) + 1 = 2, 4, 6: 1, 3, 5 tokens, then a forced EOS, scored as EOS (.1).
    results, _ = run(LOOP, sources, backend_cls, max_length_ratio=0.5, max_length_extra=1)
    for result, n in zip(results, [1, 3, 5]):
        assert_hyps(result, [(alternating(n), LOG(.6) + (n - 1) * LOG(.9) + LOG(.1))])
    # max_length caps every sentence: min(2|4|6, 3) = 2, 3, 3.
    results, _ = run(LOOP, sources, backend_cls, max_length_ratio=0.5, max_length_extra=1, max_length=4)
    assert [r.hypotheses[0].tokens for r in results] == [[A], [A, B], [A, B]]
    results, _ = run(LOOP, sources, backend_cls, max_length=2)            # the first step is the last
    for result in results:
        assert_hyps(result, [([], LOG(.1))])
    # A ratio too large to count in int64 is capped all the same.
    results, _ = run(LOOP, sources, backend_cls, max_length_ratio=1e300, max_length=4)
    assert [r.hypotheses[0].tokens for r in results] == [[A, B]] * 3


@BACKENDS
def test_beam_closes_every_live_hypothesis_once_at_max_length(backend_cls):
    """LOOP with beam 2 and limit 4: A B A (.486) and B A B (.243) are live at step 4 and closed there
    with EOS (.1); nothing has finished before ([] and A were never among the best two)."""
    [result], backend = run(LOOP, [[C] * 5], backend_cls, beam_size=2, num_hypotheses=2,
                            max_length_ratio=0.5, max_length_extra=1)
    assert_hyps(result, [([A, B, A], LOG(.6 * .9 * .9 * .1) / 4), ([B, A, B], LOG(.3 * .9 * .9 * .1) / 4)])
    assert backend.steps + backend.head_steps == 4


@pytest.mark.parametrize("beam_size", [2, 3, 4, 8])
def test_beam_hypotheses_respect_each_sentences_limit_without_duplicates(beam_size):
    sources = [[C] * 2, [C] * 5, [C] * 9]                     # limits 2, 4, 6
    opts = DecodeOptions(beam_size=beam_size, num_hypotheses=beam_size, max_length_ratio=0.5, max_length_extra=1)
    results, _ = run(LOOP, sources, **vars(opts))
    for src, result in zip(sources, results):
        tokens = [h.tokens for h in result.hypotheses]
        every = best_first(every_hypothesis(LOOP, src, opts), opts.length_penalty)
        assert len({tuple(t) for t in tokens}) == len(tokens) == min(beam_size, len(every))
        assert max(map(len, tokens)) <= limit(len(src), opts) - 1
        assert [h.score for h in result.hypotheses] == pytest.approx(
            [log_prob(LOOP, src, t) / (len(t) + 1) ** opts.length_penalty for t in tokens], abs=1e-5)
        if beam_size >= len(every):
            assert_hyps(result, every)


# ---------------------------------------------------------------------------------------------
# n-gram ban

@pytest.mark.parametrize("backend_cls", [TableBackend, HeadBackend])
@pytest.mark.parametrize("n, expected", [(1, [A, B]), (2, [A, B, A]), (3, [A, B, A, B])])
def test_no_repeat_ngram_bans_the_repeat_the_table_would_make(n, expected, backend_cls):
    src = [C] * 4                                             # limit ceil(1.5 * 4) + 10 = 16
    [plain], _ = run(LOOP, [src], backend_cls, no_repeat_loop=0)
    assert plain.hypotheses[0].tokens == alternating(15)
    [banned], backend = run(LOOP, [src], backend_cls, no_repeat_ngram_size=n)
    # The next alternating token would repeat an n-gram, so EOS, scored with the table's own .1: the
    # ban removes tokens without renormalising the others.
    assert_hyps(banned, [(expected, LOG(.6) + n * LOG(.9) + LOG(.1))])
    assert backend.steps == 0 or backend_cls is TableBackend  # a search head stays in use

    opts = DecodeOptions(beam_size=3, num_hypotheses=3, no_repeat_ngram_size=n)
    [beam], _ = run(LOOP, [src], backend_cls, **vars(opts))
    assert beam.hypotheses and all(not has_repeat(h.tokens, n) for h in beam.hypotheses)
    assert [h.score for h in beam.hypotheses] == pytest.approx(
        [log_prob(LOOP, src, h.tokens) / (len(h.tokens) + 1) ** opts.length_penalty for h in beam.hypotheses], abs=1e-5)
    every = every_hypothesis(LOOP, src, opts)                # alternating, at most n + 1 tokens
    assert len(every) == 1 + 2 * (n + 1)
    opts = replace(opts, beam_size=len(every))
    [wide], _ = run(LOOP, [src], backend_cls, **vars(opts))
    assert_hyps(wide, best_first(every, opts.length_penalty)[:3])


@pytest.mark.parametrize("backend_cls", [TableBackend, HeadBackend])
def test_a_loop_is_stopped_by_default(backend_cls):
    """LOOP alternates A B A B ...: the third "A B" would close a loop, so EOS comes instead."""
    [result], backend = run(LOOP, [[C] * 4], backend_cls)
    assert_hyps(result, [([A, B, A, B, A], LOG(.6) + 4 * LOG(.9) + LOG(.1))])
    assert backend.steps == 0 or backend_cls is TableBackend  # the ban keeps the search head in use
    [beam], _ = run(LOOP, [[C] * 4], backend_cls, beam_size=3, num_hypotheses=3)
    assert beam.hypotheses and not any(ends_in_loop(h.tokens[:i], 10) for h in beam.hypotheses
                                       for i in range(len(h.tokens) + 1))


def test_loop_bans():
    histories = [[7, 5, 5], [5, 6, 5, 6, 5], [5, 6, 8, 5, 6], [9, 9, 5, 6, 7, 5, 6], [5, 6, 7, 8], [6, 5, 6, 5]]
    bans = repetition.loop_bans(histories, 10)
    assert bans == {0: [5], 1: [6], 2: [8], 3: [7]}          # 5 5 [5]; 5 6 5 6 5 [6]; 5 6 8 5 6 [8]; 5 6 7 5 6 [7]
    assert repetition.loop_bans(histories, 2) == {0: [5], 1: [6]}   # periods up to 2 only
    assert repetition.loop_bans(histories, 0) == {} and repetition.loop_bans([[1], [2]], 10) == {}


def test_word_loop_bans_see_a_copy_spelled_in_other_pieces():
    """"in der Euro zone in der" must not go on with "▁Eurozone", nor "... in der Euro" with "zone":
    the ids differ from the first copy's, the words do not."""
    pieces = repetition.Pieces.of(["<pad>", "<unk>", "<s>", "</s>", "▁in", "▁der", "▁Euro", "zone", "▁Eurozone",
                                   "▁die", ",", "▁ha", "z", "one"])
    p = pieces.ids
    first = [p["▁die"], p["▁in"], p["▁der"], p["▁Euro"], p["zone"], p["▁in"], p["▁der"]]
    assert repetition.word_loop_bans([first], 10, pieces) == {0: [p["▁Eurozone"]]}
    assert repetition.loop_bans([first], 10) == {}                 # in ids, "▁Eurozone" copies nothing
    assert repetition.word_loop_bans([first + [p["▁Euro"]]], 10, pieces) == {0: [p["zone"]]}
    assert repetition.word_loop_bans([first + [p["▁Euro"], p["z"]]], 10, pieces) == {0: [p["one"]]}
    assert repetition.word_loop_bans([[p["▁ha"], p["▁ha"]]], 10, pieces) == {0: [p["▁ha"]]}   # a third "ha"
    assert repetition.word_loop_bans([[p["▁ha"], p["▁ha"]]], 0, pieces) == {}
    assert repetition.word_loop_bans([first[:5], [p["▁in"]], []], 10, pieces) == {}    # no loop begun
    assert repetition.last_words([p["zone"], p[","], p["▁in"], p["▁der"], p["▁Euro"], p["zone"], p[","]],
                                 pieces.by_id, 10) == ["zone,", "in", "der", "Eurozone,"]
    opts = DecodeOptions()
    assert repetition.banned_tokens([first], opts, pieces) == {0: [p["▁Eurozone"]]}
    assert repetition.banned_tokens([first], opts) == {}                                    # without the pieces


def test_repeated_ngram_ends():
    histories = [[5, 6, 7, 5], [5, 6, 5, 6], [5]]
    assert repetition.repeated_ngram_ends(histories[0], 2) == [6]     # "5 6" was seen: 6 may not follow 5 again
    assert repetition.repeated_ngram_ends(histories[1], 3) == [5]     # "5 6 5" was seen: 5 may not follow "5 6"
    assert repetition.repeated_ngram_ends(histories[2], 1) == [5]     # n = 1: no token twice
    assert all(repetition.repeated_ngram_ends(h, 3) == [] for h in ([], [1], [1, 2], [3]))   # shorter than n
    opts = DecodeOptions(no_repeat_ngram_size=2, no_repeat_loop=0)
    assert repetition.banned_tokens(histories, opts) == {0: [6], 1: [5]}
    assert repetition.banned_tokens(histories, replace(opts, no_repeat_ngram_size=0)) == {}   # off


# ---------------------------------------------------------------------------------------------
# Sampling

def sample(model, sources, **options):
    results, _ = run(model, sources, sampling=True, max_length_ratio=1.0, max_length_extra=5, **options)
    return results


def distinct_sources(n: int) -> list[list[int]]:
    """n different sources of four words each (8 ** 4 of them)."""
    return [[WORDS[(i >> 3 * place) & 7] for place in range(4)] for i in range(n)]


def test_sampling_with_a_seed_is_reproducible_and_scores_the_samples():
    model = random_model(1, dense=True)
    sources = [[A], [B, C], [A], [D]]
    a = sample(model, sources, seed=7, temperature=1.5)
    assert_same(sample(model, sources, seed=7, temperature=1.5), a)
    assert_same([a[0]], [a[2]])                    # a sentence's sample depends on it and the seed alone
    by_seed = {tuple(sample(model, [[A]], seed=seed, temperature=1.5)[0].hypotheses[0].tokens) for seed in range(12)}
    assert len(by_seed) > 1                                                  # they are random
    for src, result in zip(sources, a):       # the model's log-prob of the sample, not the tempered one's
        assert result.hypotheses[0].score == pytest.approx(log_prob(model, src, result.hypotheses[0].tokens), abs=1e-5)


# Ids 0, 2 and 4-7 are never output: padding, BOS, a language tag, and three control characters' bytes.
NEVER_PIECES = repetition.Pieces.of(["<pad>", "<unk>", "<s>", "</s>", "<2de>", "<0x0A>", "<0x09>", "<0x7F>",
                                     "<0x41>", "▁a", "b", "c"])
JUNK_FIRST = lambda src, prefix: dist({0: .15, 2: .15, 4: .15, 5: .15, 6: .15, 7: .1, 8: .05, 9: .05, EOS: .05}  # noqa: E731
                                      if len(prefix) < 3 else {EOS: 1.0})


def run_with_pieces(model, sources, pieces, backend_cls=TableBackend, **options):
    backend = backend_cls(model)
    opts = greedy_unless(max_length_ratio=1.0, max_length_extra=8, no_repeat_loop=0, **options)
    return decode(backend, *pad_batch(sources), opts, pieces), backend


def test_the_ids_never_output_are_special_tags_and_control_bytes():
    assert np.flatnonzero(NEVER_PIECES.never).tolist() == [0, 2, 4, 5, 6, 7]
    assert np.flatnonzero(UTF8_PIECES.never).tolist() == [0, 2, 5, 6, 7, 9]     # and bytes no character starts with
    assert np.flatnonzero(PIECES.never).tolist() == [0, 2]


@BACKENDS
@pytest.mark.parametrize("options", [dict(), dict(beam_size=2, num_hypotheses=2), dict(sampling=True, seed=1),
                                     dict(sampling=True, seed=2, temperature=3.0, num_hypotheses=4)])
def test_no_search_outputs_a_tag_or_a_control_character_however_likely(options, backend_cls):
    """A sampled "<0x0A>" was a line break inside one translation (one input line, two output lines)."""
    backend = backend_cls(JUNK_FIRST)
    opts = greedy_unless(max_length_ratio=1.0, max_length_extra=3, no_repeat_loop=0, **options)
    results = decode(backend, *pad_batch([[A], [B, C]]), opts, NEVER_PIECES)
    for result in results:
        assert result.hypotheses and all(set(h.tokens) <= {8, 9} for h in result.hypotheses)
    written = decode(backend, *pad_batch([[A]]), opts, NEVER_PIECES, [Prefix((5, 8))])   # what the user wrote stays
    assert all(h.tokens[:2] == [5, 8] and set(h.tokens[2:]) <= {8, 9} for h in written[0].hypotheses)


# Byte pieces: 4 and 8 start a character of 2 and 3 bytes, 5, 6 and 9 continue one, 7 (0xFF) is never UTF-8.
UTF8_PIECES = repetition.Pieces.of(["<pad>", "<unk>", "<s>", "</s>", "<0xC3>", "<0xA4>", "<0xBC>", "<0xFF>",
                                    "<0xE2>", "<0x82>", "▁a", "b"])
# The likeliest token is always a wrong one: a stray continuation byte, an invalid byte, or EOS (or a
# word) inside a character.
BYTE_SOUP = table({(): {6: .4, 7: .2, 4: .25, 10: .1, EOS: .05}, (4,): {EOS: .5, 10: .3, 6: .15, 5: .05},
                   (4, 6): {8: .6, EOS: .4}, (4, 6, 8): {EOS: .7, 9: .2, 5: .1}, (4, 6, 8, 9): {EOS: .6, 5: .3, 11: .1}})


# Leads whose second byte is narrower: F4 (80-8F), E0 (A0-BF), ED (80-9F).
NARROW_PIECES = repetition.Pieces.of(["<pad>", "<unk>", "<s>", "</s>", "<0xF4>", "<0x80>", "<0x90>", "<0xBF>",
                                      "<0xE0>", "<0xA0>", "<0xED>", "b"])


def as_text(tokens: list[int], pieces=UTF8_PIECES) -> str:
    """The hypothesis as text, its byte pieces strictly UTF-8 (a UnicodeDecodeError if not)."""
    out = b"".join(bytes([v]) if (v := int(pieces.byte_values[t])) >= 0 else pieces.by_id[t].encode()
                   for t in tokens)
    return out.decode("utf-8")


def test_the_bytes_a_started_character_may_take_next():
    values = UTF8_PIECES.byte_values
    cont = range(0x80, 0xC0)
    assert [next_bytes(h, values) for h in ([], [10], [4], [4, 6], [8], [8, 9], [8, 9, 5], [10, 8, 9])] == \
        [None, None, cont, None, cont, cont, None, cont]
    values = np.array([0xE0, 0xED, 0xF0, 0xF4, 0xF1, 0x90, 0x41, -1, 0xC2])
    assert [next_bytes(h, values) for h in ([0], [1], [2], [3], [4], [2, 5], [6], [7], [8])] == \
        [range(0xA0, 0xC0), range(0x80, 0xA0), range(0x90, 0xC0), range(0x80, 0x90), cont, cont, None, None,
         range(0xA0, 0xC0)]                                  # C2 80-9F are the C1 control characters


@BACKENDS
def test_greedy_completes_every_character_it_starts_and_starts_none_midway(backend_cls):
    [result], _ = run_with_pieces(BYTE_SOUP, [[A]], UTF8_PIECES, backend_cls)
    assert_hyps(result, [([4, 6, 8, 9, 5], LOG(.25) + LOG(.15) + LOG(.6) + LOG(.2) + LOG(.3) + LOG(1.0))])
    assert as_text(result.hypotheses[0].tokens) == "ü₤"


def completing(model, pieces):
    """`model`, with the bytes that continue a started character made likely, as a trained model has them."""
    def completing_model(src, prefix):
        logits = model(src, prefix).copy()
        if (allowed := next_bytes(list(prefix), pieces.byte_values)) is not None:
            logits[[i for i in pieces.byte_ids[allowed.start:allowed.stop] if i >= 0]] += 6.0
        return logits
    return completing_model


@pytest.mark.parametrize("backend_cls, trained", [(TableBackend, False), (HeadBackend, True)],
                         ids=["whole-distribution", "search-head"])
@pytest.mark.parametrize("pieces", [UTF8_PIECES, NARROW_PIECES], ids=["bytes", "narrow"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("options", [dict(), dict(beam_size=3, num_hypotheses=3),
                                     dict(sampling=True, seed=3, temperature=3.0, num_hypotheses=16)])
def test_every_hypothesis_is_well_formed_utf8(options, seed, pieces, backend_cls, trained):
    """Random logits over mostly byte pieces: unconstrained, most hypotheses would break a character.
    With the whole distribution any model is held to UTF-8; the search head needs one that ranks a
    continuing byte among its K after a lead byte, as trained models do (next test)."""
    model = completing(random_model(seed, dense=True), pieces) if trained else random_model(seed, dense=True)
    results, _ = run_with_pieces(model, [[A], [B, C], [D]], pieces, backend_cls, **options)
    for result in results:
        assert result.hypotheses
        for h in result.hypotheses:
            assert np.isfinite(h.score)
            as_text(h.tokens, pieces)                         # raises on a broken character


def test_where_the_search_head_ranks_no_continuing_byte_the_row_keeps_its_candidates():
    """After "<0xC3>" a continuation byte must follow; the head's 8 best are all else. Dropping them all
    would leave the row nothing; it takes its best, and the translator drops the broken character
    (Translator.model_text)."""
    model = table({(): {4: .9, EOS: .1}, (4,): {EOS: .25, 10: .2, 11: .15, 1: .1, 7: .1, 8: .08, 0: .05, 2: .04,
                                                 5: .02, 6: .01}})
    [head], _ = run_with_pieces(model, [[A]], UTF8_PIECES, HeadBackend)
    [whole], _ = run_with_pieces(model, [[A]], UTF8_PIECES, TableBackend)
    assert head.hypotheses[0].tokens == [4]                  # EOS, its best, with the C3 left open
    assert whole.hypotheses[0].tokens == [4, 5]              # the whole distribution has 0xA4 to finish it


@pytest.mark.parametrize("seed", range(4))
def test_top_k_one_and_a_tiny_top_p_are_greedy(seed):
    model = random_model(seed, dense=True)
    sources = [[A], [B, C, D], [E, E], [A]]
    greedy, _ = run(model, sources, max_length_ratio=1.0, max_length_extra=5)
    assert_same(sample(model, sources, top_k=1, seed=1, temperature=3.0), greedy)
    assert_same(sample(model, sources, top_p=1e-6, seed=1), greedy)       # the nucleus is the top token


@pytest.mark.parametrize("options, expected", [
    ({}, {A: .5, B: .3, C: .2}),
    ({"temperature": 2.0}, {t: math.sqrt(p) / (math.sqrt(.5) + math.sqrt(.3) + math.sqrt(.2))
                            for t, p in {A: .5, B: .3, C: .2}.items()}),
    ({"top_k": 2}, {A: .625, B: .375}),
    ({"top_k": 10 ** 6}, {A: .5, B: .3, C: .2}),               # more than the vocabulary: all of it
    ({"top_p": 0.6}, {A: .625, B: .375}),                    # A (.5) is short of .6, A + B reach it
    ({"top_p": 0.45}, {A: 1.0}),
])
def test_sampling_draws_from_the_tempered_filtered_distribution(options, expected):
    one_step = table({(): {A: .5, B: .3, C: .2}})
    results = sample(one_step, distinct_sources(4000), seed=3, **options)
    counts = Counter(tuple(r.hypotheses[0].tokens) for r in results)
    assert set(counts) <= {(t,) for t in expected}
    for token, p in expected.items():
        assert counts[(token,)] / 4000 == pytest.approx(p, abs=0.03)
    for r in results:                                         # scored with the model's probabilities
        assert r.hypotheses[0].score == pytest.approx(LOG({A: .5, B: .3, C: .2}[r.hypotheses[0].tokens[0]]), abs=1e-6)


def test_several_samples_come_best_first_and_truly_scored():
    model = random_model(2, dense=True)
    sources = [[A], [B, C, D]]
    results = sample(model, sources, num_hypotheses=3, seed=1, temperature=2.0)
    assert_same(sample(model, sources, num_hypotheses=3, seed=1, temperature=2.0), results)
    for src, result in zip(sources, results):
        scores = [h.score for h in result.hypotheses]
        assert len(scores) == 3 and scores == sorted(scores, reverse=True)
        assert scores == pytest.approx([log_prob(model, src, h.tokens) for h in result.hypotheses], abs=1e-5)


# ---------------------------------------------------------------------------------------------
# EOS at the first step

@BACKENDS
def test_eos_at_the_first_step_gives_an_empty_hypothesis(backend_cls):
    [greedy], backend = run(QUIET, [[A]], backend_cls)
    assert_hyps(greedy, [([], LOG(.7))])
    assert backend.steps + backend.head_steps == 1
    # Beam 4 finds the only two hypotheses there are and does not pad the n-best list.
    [beam], _ = run(QUIET, [[A]], backend_cls, beam_size=4, num_hypotheses=4)
    assert_hyps(beam, [([], LOG(.7)), ([A], LOG(.3) / 2)])
    [sampled], _ = run(QUIET, [[A]], backend_cls, sampling=True, top_k=1, seed=0)
    assert_hyps(sampled, [([], LOG(.7))])
    [attended], _ = run(QUIET, [[A, B]], backend_cls, return_alignment=True)
    assert attended.hypotheses[0].attention == [attention_row((A, B), (), 2).tolist()]   # the EOS step's


@pytest.mark.parametrize("beam_size", [1, 2])
def test_sentences_that_end_at_the_first_step_leave_the_batch(beam_size):
    model = per_source({(A,): QUIET, (B,): LOOP, (C,): QUIET})
    results, _ = run(model, [[A], [B], [C]], beam_size=beam_size, num_hypotheses=beam_size, max_length_extra=3)  # limits 5
    if beam_size == 1:
        quiet, loop = [([], LOG(.7))], [(alternating(4), LOG(.6) + 3 * LOG(.9) + LOG(.1))]
    else:   # QUIET: [] at step 1, A at step 2, then done; LOOP: both live beams closed at step 5
        quiet = [([], LOG(.7)), ([A], LOG(.3) / 2)]
        loop = [([A, B, A, B], LOG(.6 * .9 ** 3 * .1) / 5), ([B, A, B, A], LOG(.3 * .9 ** 3 * .1) / 5)]
    for result, expected in zip(results, [quiet, loop, quiet]):
        assert_hyps(result, expected)
    # Every sentence ends at the first step: one step, nothing to select.
    _, backend = run(per_source({(A,): QUIET, (C,): QUIET}), [[A], [C]])
    assert (backend.steps, backend.selects) == (1, 0)


# ---------------------------------------------------------------------------------------------
# Batches: select() and decode_all

@pytest.mark.parametrize("options", [dict(), dict(beam_size=3, num_hypotheses=2, length_penalty=0.7),
                                     dict(beam_size=2, num_hypotheses=2, no_repeat_ngram_size=2),
                                     dict(sampling=True, seed=4, temperature=2.0),
                                     dict(sampling=True, seed=4, num_hypotheses=3)])
def test_decode_all_in_batches_equals_decoding_each_source_alone(options):
    """Seven sources of several lengths, each with its own table, decoded in length-sorted batches
    whose rows end (and are dropped by select) at different steps, come back in input order. A seeded
    sample too: its draws are its own, whatever shares its batch."""
    model = random_model(3, dense=True)
    sources = [[A], [B, C, D, E], [C, C], [D], [E, F, G], [A], [H, A, B, C, D]]
    opts = greedy_unless(max_length_ratio=1.0, max_length_extra=2, **options)
    backend = TableBackend(model)
    together = decode_all(backend, sources, opts, max_tokens=10 * opts.beam_size, max_sentences=3 * opts.beam_size)
    assert backend.starts > 1
    alone = [decode_all(TableBackend(model), [src], opts)[0] for src in sources]
    assert_same(together, alone)
    if opts.beam_size == 1 and not opts.sampling:
        for src, result in zip(sources, together):
            assert_hyps(result, [greedy_walk(model, src, opts)])


def test_a_source_given_twice_is_decoded_once_unless_sampling_without_a_seed():
    model = random_model(3, dense=True)
    sources = [[A, B], [C], [A, B], [A, B]]
    for options in dict(beam_size=2), dict(sampling=True, seed=1):
        results = decode_all(TableBackend(model), sources, greedy_unless(max_length_ratio=1.0, max_length_extra=2,
                                                                          **options))
        assert results[0] is results[2] is results[3] and results[1] is not results[0]
    sampled = decode_all(TableBackend(model), sources, greedy_unless(sampling=True, max_length_ratio=1.0,
                                                                      max_length_extra=2))
    assert len({id(r) for r in sampled}) == 4


@BACKENDS
def test_each_row_keeps_its_own_table_through_reorders(backend_cls):
    """Three different hand tables in one beam batch: rows are repeated, reordered and dropped."""
    model = per_source({(A, A, A): GARDEN, (B, B): LENGTHS, (C, C, C): LOOP})
    results, _ = run(model, [[A, A, A], [B, B], [C, C, C]], backend_cls, beam_size=2, num_hypotheses=2,
                     max_length_ratio=1.0, max_length_extra=1)         # limits 4, 3, 4
    assert_hyps(results[0], [([B, F], LOG(.36) / 3), ([A, C], LOG(.24) / 3)])
    assert_hyps(results[1], [([A], LOG(.45) / 2), ([B, C], LOG(.0315) / 3)])       # B C closed at its limit
    assert_hyps(results[2], [([A, B, A], LOG(.6 * .9 * .9 * .1) / 4), ([B, A, B], LOG(.3 * .9 * .9 * .1) / 4)])


def test_length_batches_cover_every_index_once():
    lengths = [5, 1, 9, 3, 3, 7, 2, 8]
    batches = list(length_batches(lengths, max_tokens=16, max_sentences=3))
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len(b) <= 3 and max(lengths[i] for i in b) * len(b) <= 16 or len(b) == 1 for b in batches)
    assert [lengths[i] for b in batches for i in b] == sorted(lengths)


def test_pad_batch():
    ids, mask = pad_batch([[5, 6, 7], [8]])
    np.testing.assert_array_equal(ids, [[5, 6, 7], [8, PAD_ID, PAD_ID]])
    np.testing.assert_array_equal(mask, [[True, True, True], [True, False, False]])


# ---------------------------------------------------------------------------------------------
# The search head and attention

HEAD_CASES = [dict(), dict(beam_size=2, num_hypotheses=2), dict(beam_size=4, num_hypotheses=4, length_penalty=0.6),
              dict(beam_size=3, num_hypotheses=3, max_length_ratio=0.5, max_length_extra=1),   # out of length
              dict(no_repeat_ngram_size=3), dict(beam_size=2, num_hypotheses=2, no_repeat_ngram_size=3),
              dict(no_repeat_loop=0)]                   # bans drop the head's candidates; no ban


@pytest.mark.parametrize("options", HEAD_CASES)
@pytest.mark.parametrize("seed", range(3))
def test_a_search_head_gives_the_numpy_search_results(seed, options):
    model = random_model(seed, dense=True)
    sources = [[A], [B, C, D], [E, E], [F, G, H, A, B]]
    options = {"max_length_ratio": 1.0, "max_length_extra": 3, **options}
    plain, numpy_backend = run(model, sources, **options)
    in_head, head_backend = run(model, sources, HeadBackend, **options)
    assert_same(in_head, plain)
    assert head_backend.head_steps == numpy_backend.steps and head_backend.steps == 0


@pytest.mark.parametrize("options", [dict(return_alignment=True),
                                     dict(beam_size=5, num_hypotheses=2),       # 2k candidates > K = 8
                                     dict(sampling=True, seed=4)])
def test_the_search_head_is_bypassed_where_the_whole_distribution_is_needed(options):
    model = random_model(6, dense=True)
    sources = [[A], [B, C, D]]
    options = {"max_length_ratio": 1.0, "max_length_extra": 3, **options}
    plain, _ = run(model, sources, **options)
    in_head, backend = run(model, sources, HeadBackend, **options)
    assert_same(in_head, plain)
    assert backend.head_steps == 0 and backend.steps > 0


@pytest.mark.parametrize("options", [dict(), dict(beam_size=3, num_hypotheses=3),
                                     dict(beam_size=2, num_hypotheses=2, max_length_ratio=0.5, max_length_extra=1)])
def test_attention_rows_follow_each_hypothesis(options):
    """One source-length row per output token and one for EOS, each the backend's row for that
    hypothesis's own prefix, through beam reorders and the out-of-length close."""
    model = random_model(7, dense=True)
    sources = [[A], [B, C, D], [E, E]]
    options = {"max_length_ratio": 1.0, "max_length_extra": 3, **options}
    results, _ = run(model, sources, return_alignment=True, **options)
    plain, _ = run(model, sources, **options)
    assert_same(results, plain)
    for src, result, without in zip(sources, results, plain):
        for h in result.hypotheses:
            assert h.attention == [attention_row(tuple(src), tuple(h.tokens[:i]), 3).tolist()
                                   for i in range(len(h.tokens) + 1)]
        assert all(h.attention is None for h in without.hypotheses)


# ---------------------------------------------------------------------------------------------
# Prefixes: what an output must start with (runtime/prefix.py)

# Pieces for the table's ids: "▁ab" is spelled "▁ab", "▁a"+"b", "▁a"+"bc", "▁"+"a"+"b", "▁"+"a"+"bc",
# "▁abz"... ("▁x" and "c" spell no part of it).
PIECES = repetition.Pieces.of(["<pad>", "<unk>", "<s>", "</s>", "▁a", "b", "▁ab", "c", "▁", "▁x", "a", "bc"])


def spelled(tokens) -> str:
    return "".join(PIECES.by_id[t] for t in tokens)


def free_model(tokens, seed: int):
    """Pseudo-random logits over `tokens` and EOS only: few enough hypotheses to enumerate."""
    base = random_model(seed, dense=True)

    def model(src, prefix):
        logits = np.full(V, -np.inf)
        logits[[*tokens, EOS]] = base(src, prefix)[[*tokens, EOS]]
        return logits
    return model


def hypotheses_within(model, src, stop: int) -> list[tuple[list[int], float]]:
    """Every hypothesis of at most stop - 1 tokens with its log-probability (EOS included), no bans."""
    found = []

    def walk(prefix, score):
        logp = log_softmax(model(tuple(src), prefix))
        found.append((list(prefix), score + logp[EOS]))
        if len(prefix) + 1 < stop:
            for t in map(int, np.flatnonzero(np.isfinite(logp))):
                if t != EOS:
                    walk(prefix + (t,), score + logp[t])

    walk((), 0.0)
    return [(t, s) for t, s in found if np.isfinite(s)]


def run_with(model, sources, prefixes, backend_cls=TableBackend, **options):
    backend = backend_cls(model)
    return decode(backend, *pad_batch(sources), greedy_unless(**options), PIECES, prefixes), backend


@BACKENDS
@pytest.mark.parametrize("seed", range(4))
def test_greedy_forces_the_prefix_then_takes_the_argmax(seed, backend_cls):
    """Forced tokens are fed and scored, then the walk goes on as greedy would from there; a sentence
    without a prefix in the same batch is decoded as it would be alone."""
    model = random_model(seed, dense=True)
    sources, prefixes = [[A, B], [C], [D, E, F]], [Prefix((E, E, E)), None, Prefix((F,))]
    opts = greedy_unless(max_length_ratio=1.0, max_length_extra=2, no_repeat_loop=0)
    results, _ = run_with(model, sources, prefixes, backend_cls, **vars(opts))
    for src, prefix, result in zip(sources, prefixes, results):
        forced = prefix.tokens if prefix else ()
        stop = max(limit(len(src), opts), len(forced) + 1 + opts.max_length_extra)
        tokens = list(forced)
        while len(tokens) + 1 < stop:
            logp = log_softmax(model(tuple(src), tuple(tokens)))
            logp[PIECES.never] = -np.inf                      # padding and BOS are never output
            if (best := int(np.argmax(logp))) == EOS:
                break
            tokens.append(best)
        assert_hyps(result, [(tokens, log_prob(model, src, tokens))])


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
@pytest.mark.parametrize("seed", range(4))
def test_a_wide_beam_with_a_prefix_returns_every_hypothesis_that_starts_with_it(seed, length_penalty):
    model = free_model([A, B, C], seed)
    src, prefix = [A], Prefix((B,))
    opts = greedy_unless(beam_size=16, num_hypotheses=13, max_length_ratio=1.0, max_length_extra=2,
                         length_penalty=length_penalty, no_repeat_loop=0)
    [result], _ = run_with(model, [src], [prefix], **vars(opts))
    every = [h for h in hypotheses_within(model, src, stop=4) if h[0][:1] == [B]]     # 1 + 3 + 9
    assert len(every) == 13
    assert_hyps(result, best_first(every, length_penalty))


@pytest.mark.parametrize("seed", range(6))
def test_an_unfinished_word_is_spelled_out_in_every_way_the_pieces_allow(seed):
    """Every hypothesis whose text starts with "▁ab", however its pieces spell it, and no other."""
    model = free_model([A, B, C, E, G, F], seed)            # "▁a" "b" "▁ab" "▁" "a" "▁x"
    prefix = Prefix((), "▁ab")
    opts = greedy_unless(beam_size=60, num_hypotheses=51, max_length_ratio=1.0, max_length_extra=0,
                         length_penalty=1.0, no_repeat_loop=0)
    [result], _ = run_with(model, [[A]], [prefix], **vars(opts))       # stop: "▁ab" takes up to 3 steps, + 1
    every = [h for h in hypotheses_within(model, [A], stop=4) if spelled(h[0]).startswith("▁ab")]
    assert len(every) == 51           # "▁ab" + up to 2 of 6 (43), "▁a" "b" + up to 1 of 6 (7), "▁" "a" "b"
    assert_hyps(result, best_first(every, 1.0))


def test_spelling_out_skips_pieces_that_lead_nowhere_and_control_pieces():
    assert sorted(spelling_out("▁ab", PIECES)) == sorted([C, A, E])      # "▁ab", "▁a" (+ "b"), "▁" (+ "a" "b")
    assert spelling_out("b", PIECES) == [B, H]                            # "b", "bc": both complete it
    assert sorted(spelling_out("▁abz", PIECES)) == []                     # nothing can spell "z"
    assert Prefix((), "▁abz").allowed([], PIECES) is None                 # so the model is free
    assert spelling_out("<", repetition.Pieces.of(["<pad>", "<s>", "<"])) == [2]


def test_prefix_allowed_follows_a_hypothesis_through_its_prefix():
    prefix = Prefix((D, F), "▁ab")
    assert prefix.allowed([], PIECES) == [D] and prefix.allowed([D], PIECES) == [F]
    assert sorted(prefix.allowed([D, F], PIECES)) == sorted([C, A, E])
    assert prefix.allowed([D, F, A], PIECES) == [B, H]
    assert prefix.allowed([D, F, A, H], PIECES) is None and prefix.allowed([D, F, C], PIECES) is None
    assert Prefix((D,)).allowed([D], None) is None
    with pytest.raises(ValueError, match="pieces"):
        prefix.allowed([D, F], None)


@pytest.mark.parametrize("options", [dict(), dict(beam_size=3, num_hypotheses=3),
                                     dict(sampling=True, seed=5, num_hypotheses=3)])
def test_every_hypothesis_starts_with_its_prefix_in_any_search(options):
    model = random_model(2, dense=True)
    sources, prefixes = [[A], [B, C], [D]], [Prefix((G, G), "b"), Prefix((), "▁ab"), None]
    results, _ = run_with(model, sources, prefixes, max_length_ratio=1.0, max_length_extra=3, **options)
    for result in results[:2]:
        assert result.hypotheses
    assert all(h.tokens[:2] == [G, G] and spelled(h.tokens[2:]).startswith("b") for h in results[0].hypotheses)
    assert all(spelled(h.tokens).startswith("▁ab") for h in results[1].hypotheses)
    without, _ = run_with(model, [[D]], None, max_length_ratio=1.0, max_length_extra=3, **options)
    assert_hyps(results[2], hyps(without[0]))


def test_a_forced_token_is_never_banned():
    """The user's "a a a a" stays, though the loop ban would stop the model writing it."""
    [result], _ = run_with(random_model(1, dense=True), [[A]], [Prefix((A, A, A, A))], max_length_extra=2)
    assert result.hypotheses[0].tokens[:4] == [A, A, A, A] and np.isfinite(result.hypotheses[0].score)


def test_prefix_steps_use_the_whole_distribution_and_the_head_after():
    model = random_model(4, dense=True)
    sources, prefixes = [[A], [B, C, D]], [Prefix((E, F)), Prefix((), "▁ab")]
    options = dict(beam_size=2, num_hypotheses=2, max_length_ratio=1.0, max_length_extra=3)
    plain, _ = run_with(model, sources, prefixes, **options)
    in_head, backend = run_with(model, sources, prefixes, HeadBackend, **options)
    assert_same(in_head, plain)
    assert backend.steps >= 2 and backend.head_steps > 0


def test_decode_all_keeps_sources_with_different_prefixes_apart():
    model = random_model(3, dense=True)
    sources, prefixes = [[A, B], [A, B], [A, B], [C]], [Prefix((E,)), None, Prefix((E,)), Prefix((F,))]
    opts = greedy_unless(beam_size=2, max_length_ratio=1.0, max_length_extra=2)
    results = decode_all(TableBackend(model), sources, opts, pieces=PIECES, prefixes=prefixes)
    assert results[0] is results[2] and results[1] is not results[0]
    assert results[0].hypotheses[0].tokens[0] == E and results[3].hypotheses[0].tokens[0] == F
    assert_hyps(results[1], hyps(decode_all(TableBackend(model), [[A, B]], opts)[0]))
