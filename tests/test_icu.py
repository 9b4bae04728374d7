"""runtime/icu.py: ICU plural and select, taken apart into whole sentences and written back."""

import pytest

from mtkit.runtime import icu


def test_the_text_around_a_choice_moves_into_each_branch_and_number_signs_travel_as_arguments():
    message = icu.parse("You have {count, plural, offset:1 =0 {no file} one {# file} other {# files}} left.")
    assert icu.texts(message) == ["You have no file left.", "You have {#} file left.", "You have {#} files left."]
    upper = icu.rebuild(message, str.upper)
    assert upper == "{count, plural, offset:1 =0 {YOU HAVE NO FILE LEFT.} one {YOU HAVE # FILE LEFT.} " \
                    "other {YOU HAVE # FILES LEFT.}}"
    assert icu.parse(upper).branches[1] == ("one", "YOU HAVE {#} FILE LEFT.")       # it reads back


def test_nested_choices_and_selects():
    message = icu.parse("{g, select, male {He has {n, plural, one {# cat} other {# cats}}} other {They do}}")
    assert icu.texts(message) == ["He has {#} cat", "He has {#} cats", "They do"]
    assert icu.rebuild(message, lambda t: t) == \
        "{g, select, male {{n, plural, one {He has # cat} other {He has # cats}}} other {They do}}"
    assert icu.parse("Hello {name}") == "Hello {name}" and not icu.has_choice("Hello {name}")


@pytest.mark.parametrize("text", ["{n, plural, one {x}", "{n, plural, one x}", "{n, select, {x}}"])
def test_a_choice_that_cannot_be_read_is_a_value_error(text):
    with pytest.raises(ValueError):
        icu.parse(text)
