"""runtime/casing.py: sentences in capitals read in usual case, translated back into capitals. Stand-in
word counts here; the shipped model's in test_real_input.py."""

import pytest

from mtkit.runtime.casing import in_capitals, to_capitals, usual_case

COUNTS = {"ich": 900, "Ich": 300, "Raum": 50, "raum": 1, "I": 800, "i": 5, "NASA": 7}


@pytest.mark.parametrize("text, keep, expected", [
    ("ACHTUNG: NICHT BERÜHREN!", (), True),
    ("WARNING: 230 V", (), True),
    ("Achtung: NICHT berühren", (), False),
    ("OK", (), False),                               # too few letters to tell
    ("ICH WOHNE IN Tom", {"Tom"}, True),             # a placeholder is no word of the sentence
    ("Tom", {"Tom"}, False),
    ("123 !!!", (), False),
])
def test_in_capitals(text, keep, expected):
    assert in_capitals(text, keep) is expected


def test_usual_case_takes_the_spelling_counted_most_else_the_fewest_pieces():
    count = lambda word: COUNTS.get(word, 0)                               # noqa: E731
    pieces = lambda word: 1 if word == "Zeit" else len(word)               # noqa: E731
    assert usual_case("ICH HABE ZEIT IM RAUM, I AND NASA.", count, pieces) == \
        "Ich habe Zeit im Raum, I and NASA."
    assert usual_case("„ICH UND Tom“", count, pieces, keep={"Tom"}) == "„Ich und Tom“"   # the first letter a capital


def test_to_capitals_keeps_placeholders():
    assert to_capitals("I live in Tom, near Peter's.", {"Tom", "Peter"}) == "I LIVE IN Tom, NEAR Peter'S."
    assert to_capitals("Straße") == "STRASSE"
