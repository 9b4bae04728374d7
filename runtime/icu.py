"""ICU MessageFormat's plural and select, as locale files write them (FormatJS, vue-i18n, Flutter ARB):

    "You have {count, plural, one {# new message} other {# new messages}}."

Each branch is translated as a whole sentence: the text around the choice moves into every branch,
as ICU's guidelines advise translators to write it ("{count, plural, one {You have # new message.}
other {You have # new messages.}}"), since a fragment ("You have") has no translation of its own.
The "#" of a plural branch, the number, travels as "{#}", which protect.py keeps as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

CHOICE = re.compile(r"\{\s*(\w+)\s*,\s*(plural|select|selectordinal)\s*,")
BRANCH = re.compile(r"\s*(offset:\s*\d+\s+)?(=?[\w-]+)\s*\{")
NUMBER_SIGN = re.compile(r"(?<![{\w])#(?![}\w])")


@dataclass
class Choice:
    head: str                                  # "{count, plural, " and its offset ("offset:1 ")
    branches: list[tuple[str, Message]]        # (key, its message), in order


Message = str | Choice                         # plain text (with "{name}" arguments), or a choice


def has_choice(text: str) -> bool:
    return CHOICE.search(text) is not None


def parse(text: str) -> Message:
    """`text` as a tree of choices whose branches hold whole messages; a ValueError if its braces do
    not match."""
    found = CHOICE.search(text)
    if not found:
        return text
    end = closing(text, found.start())
    before, after, body = text[:found.start()], text[end + 1:], text[found.end():end]
    head, branches, at = found.group() + " ", [], 0
    while at < len(body.rstrip()):
        branch = BRANCH.match(body, at)
        if not branch:
            raise ValueError(f"not a branch at {body[at:at + 20]!r}")
        stop = closing(body, branch.end() - 1)
        head += branch.group(1) or ""
        inner = body[branch.end():stop]
        if found.group(2) != "select":
            inner = NUMBER_SIGN.sub("{#}", inner)
        branches.append((branch.group(2), parse(before + inner + after)))
        at = stop + 1
    return Choice(head, branches)


def closing(text: str, start: int) -> int:
    """The index of the brace that closes the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise ValueError("a brace that is never closed")


def texts(message: Message) -> list[str]:
    """The plain texts of a message tree, to translate."""
    if isinstance(message, str):
        return [message]
    return [text for _, branch in message.branches for text in texts(branch)]


def rebuild(message: Message, translated: Callable[[str], str]) -> str:
    """The message tree written as ICU again, each plain text through `translated`."""
    if isinstance(message, str):
        return translated(message).replace("{#}", "#")
    return message.head + " ".join(f"{key} {{{rebuild(branch, translated)}}}" for key, branch in message.branches) + "}"
