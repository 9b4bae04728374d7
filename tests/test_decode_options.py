"""`DecodeOptions`: the one definition of decoding options, its defaults, its rules and its flags."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pytest

from mtkit.runtime import DecodeOptions, OptionError, TranslationError
from mtkit.runtime.cli_options import flag
from mtkit.runtime.decode_options import ACCEPTED, FIELD_TYPES


def test_defaults_are_one_set_and_frozen():
    o = DecodeOptions()
    assert (o.beam_size, o.num_hypotheses, o.length_penalty, o.sampling, o.max_length_ratio) == (4, 1, 1.5, False, 1.5)
    assert o.max_length is None                    # the model's positions decide (Translator, trainer, CT2 runner)
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.beam_size = 1
    assert dataclasses.replace(o, beam_size=1).beam_size == 1 and o.beam_size == 4


@pytest.mark.parametrize("values, message", [
    (dict(beam_size=0), "beam_size must be from 1 to 256, not 0"),
    (dict(beam_size=257), "beam_size must be from 1 to 256, not 257"),       # 100,000 was killed for memory
    (dict(num_hypotheses=0), "num_hypotheses must be from 1 to 256, not 0"),
    (dict(num_hypotheses=10 ** 5, sampling=True), "num_hypotheses must be from 1 to 256, not 100000"),
    (dict(length_penalty=-400.0), "length_penalty must be from -10 to 10, not -400.0"),   # length ** x: 0
    (dict(length_penalty=400.0), "length_penalty must be from -10 to 10, not 400.0"),     # overflow
    (dict(seed=-1), "seed must be 0 or positive, not -1"),
    (dict(num_hypotheses=5), "num_hypotheses (5) cannot exceed beam_size (4) without sampling"),
    (dict(temperature=0.0), "temperature must be positive, not 0.0"),
    (dict(top_k=-1), "top_k must be 0 (off) or positive, not -1"),
    (dict(top_p=0.0), "top_p must be in (0, 1], not 0.0"),
    (dict(top_p=1.5), "top_p must be in (0, 1], not 1.5"),
    (dict(no_repeat_ngram_size=-1), "no_repeat_ngram_size must be 0 (off) or positive, not -1"),
    (dict(max_length_ratio=0.0), "max_length_ratio must be positive, not 0.0"),
    (dict(max_length_extra=-1), "max_length_extra must be 0 or positive, not -1"),
    (dict(max_length=1), "max_length must be at least 2, not 1"),
])
def test_out_of_range_values_are_refused(values, message):
    with pytest.raises(OptionError) as info:
        DecodeOptions(**values)
    assert str(info.value) == message
    assert isinstance(info.value, TranslationError) and isinstance(info.value, ValueError)
    with pytest.raises(OptionError):              # replace() checks again
        dataclasses.replace(DecodeOptions(), **values)


@pytest.mark.parametrize("values, message", [
    (dict(beam_size=2.5), "beam_size must be an int, not float (2.5)"),
    (dict(beam_size="4"), "beam_size must be an int, not str ('4')"),
    (dict(beam_size=True), "beam_size must be an int, not bool (True)"),
    (dict(top_k=0.0), "top_k must be an int, not float (0.0)"),
    (dict(temperature="1"), "temperature must be a number, not str ('1')"),
    (dict(temperature=True), "temperature must be a number, not bool (True)"),
    (dict(sampling=1), "sampling must be True or False, not int (1)"),
    (dict(seed=1.0), "seed must be an int or None, not float (1.0)"),
    (dict(max_length="512"), "max_length must be an int or None, not str ('512')"),
])
def test_wrong_types_are_refused_by_name(values, message):
    """Checked first, from the field types: a str or float never reaches a rule or the search."""
    with pytest.raises(OptionError) as info:
        DecodeOptions(**values)
    assert str(info.value) == message
    with pytest.raises(OptionError):
        dataclasses.replace(DecodeOptions(), **values)


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(DecodeOptions) if float in FIELD_TYPES[f.name]])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float32("nan")])
def test_nan_and_infinity_are_refused(name, value):
    """nan fails every rule's comparison, but inf passes the one-sided ones: `temperature > 0`."""
    with pytest.raises(OptionError) as info:
        DecodeOptions(**{name: value})
    assert str(info.value) == f"{name} must be a finite number, not {value}"


def test_every_field_type_is_checked_and_numbers_of_either_kind_pass():
    assert FIELD_TYPES["beam_size"] == (int,) and FIELD_TYPES["seed"] == (int, type(None))
    assert {t for types in FIELD_TYPES.values() for t in types} <= set(ACCEPTED)    # a new type needs a rule
    DecodeOptions(temperature=1, top_p=1, length_penalty=0, max_length_ratio=2, seed=None, max_length=None)
    DecodeOptions(beam_size=np.int64(2), top_p=np.float32(0.5))
    with pytest.raises(OptionError) as info:
        DecodeOptions(beam_size=2.0)
    assert info.value.message(flag) == "--beam-size must be an int, not float (2.0)"


def test_help_lists_every_field_with_its_help():
    doc = " ".join(DecodeOptions.__doc__.split())            # help text wraps
    for f in dataclasses.fields(DecodeOptions):
        assert f.metadata["help"] and f"{f.name}: {f.type} = {f.default!r}" in doc and f.metadata["help"] in doc
        assert not f.metadata["flag"] or f.metadata["flag"] in doc


def test_values_at_the_edges_are_accepted():
    DecodeOptions(beam_size=1, num_hypotheses=1, top_p=1.0, top_k=0, max_length=2, max_length_extra=0)
    DecodeOptions(beam_size=1, num_hypotheses=8, sampling=True)         # n samples need no beam
    DecodeOptions(temperature=1e-3, top_p=1e-6, length_penalty=-1.0, seed=0)
    DecodeOptions(beam_size=256, num_hypotheses=256, length_penalty=10.0, seed=10 ** 30, max_length_ratio=1e300)
    DecodeOptions(length_penalty=-10, temperature=1e300)


def test_messages_can_name_flags_instead_of_fields():
    with pytest.raises(OptionError) as info:
        DecodeOptions(beam_size=4, num_hypotheses=5)
    assert info.value.message(flag) == "--n-best (5) cannot exceed --beam-size (4) without --sampling"


def test_an_option_error_crosses_a_process_boundary():
    # multiprocessing pickles a worker's exception: OptionError's own __init__ arguments made unpickling
    # fail, which broke a ProcessPoolExecutor (BrokenProcessPool) and hung a multiprocessing.Pool
    with pytest.raises(OptionError) as info:
        DecodeOptions(beam_size=4, num_hypotheses=5)
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is OptionError and str(back) == str(info.value)
    assert back.message(flag) == "--n-best (5) cannot exceed --beam-size (4) without --sampling"


def test_every_flag_is_unique_and_explained():
    flagged = [f for f in dataclasses.fields(DecodeOptions) if f.metadata["flag"]]
    flags = [f.metadata["flag"] for f in flagged]
    assert len(set(flags)) == len(flags) and all(f.startswith("--") for f in flags)
    assert all(f.metadata["help"].endswith(".") for f in flagged)
    # The API-only fields have no flag: the model sets the length cap, the ratio's constant stays fixed.
    assert {f.name for f in dataclasses.fields(DecodeOptions)} - {f.name for f in flagged} == \
        {"max_length", "max_length_extra"}


def test_the_model_caps_max_length():
    assert DecodeOptions().for_model(256).max_length == 256
    assert DecodeOptions(max_length=512).for_model(256).max_length == 256
    assert DecodeOptions(max_length=100).for_model(256).max_length == 100
