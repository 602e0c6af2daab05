"""Wing names take one form (issue 47 M6): look-alikes of a name are that name."""

from __future__ import annotations

import unicodedata

import pytest

from mempald.normalize.wings import normal_wing, slug, wing_from_cwd

CAFE = unicodedata.normalize("NFC", "café")


@pytest.mark.parametrize("name", [
    CAFE,
    unicodedata.normalize("NFD", "café"),  # combining accent
    "\uff43\uff41\uff46é",  # fullwidth letters
    "ca\u200bf\u200dé",  # zero-width space and joiner
    "\u202ecafé\u202c",  # a bidi override
    "\u2067café\u2069\u200e",  # bidi isolates and a mark
    "\ufeffcafé\u00ad",  # a BOM and a soft hyphen
    "  café\u2060 ",  # a word joiner, spaces around
])
def test_look_alikes_of_a_wing_are_that_wing(name: str) -> None:
    assert normal_wing(name) == CAFE
    assert slug(name) == CAFE
    assert wing_from_cwd(f"/home/u/{name}") == CAFE


def test_what_normalising_keeps_and_drops() -> None:
    assert normal_wing("Acme  Corp") == "Acme Corp"  # case and inner words kept, spacing collapsed
    assert normal_wing("\u200b\u200e") == ""  # only invisible characters: nothing (refused where it is asked)
    assert normal_wing("") == ""
    assert slug("\u200b") == "general"
    assert normal_wing("日本語") == "日本語"
