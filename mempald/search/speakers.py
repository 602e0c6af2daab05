"""The speaker signal of search (off by default): a drawer said by someone the query names rises.

A line of a conversation between people reads ``Name: words`` (LoCoMo's turns, Slack messages as mempald
stores them). People refer back by name ("what did Tim say about ..."), and a person's own words answer
questions about them. On LoCoMo it gains on both folds and on three of the four large question categories
but loses on the adversarial ones, which name the wrong person on purpose, so the fold rule keeps it off
(``bench/RESEARCH_locomo.md``, fifth round); ``SearchOptions.speaker_boost`` turns it on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from mempald.search.fusion import Ranked, best_first

DEFAULT_SPEAKER_BOOST = 0.0
"""Relative boost for drawers said by someone the query names (:func:`speaker_boost`; 0 disables).  Issue 24:
0.5 gains turn R@10 on both folds (+0.011 / +0.021) and on multi-hop, temporal and single-hop questions (+0.049,
+0.038, +0.017; 0.804 in all) but loses on adversarial ones (-0.027: they name the wrong person on purpose), so
by the fold rule it stays off."""


_SPEAKER_LINE = re.compile(r"^([^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*){0,2}): ", re.MULTILINE)


def speakers(text: str) -> list[str]:
    """The speakers of a drawer's lines, in line order: a line of a conversation between people reads
    ``Name: words`` (Slack messages, chat turns); lowercased first names (``"Tim Smith: ..."`` -> ``tim``)."""
    return [m.group(1).split(" ", 1)[0].lower() for m in _SPEAKER_LINE.finditer(text)]


def speaker_boost(
    ranked: Iterable[tuple[str, float]],
    texts: Mapping[str, str],
    query: str,
    boost: float = DEFAULT_SPEAKER_BOOST,
) -> Ranked:
    """Multiply by ``1 + boost * share`` the score of drawers whose lines were said by someone the query names
    (``share``: the part of the drawer's speaker lines that are theirs). People refer back by name ("what did
    Tim say about ..."), and a person's own words answer questions about them; a drawer that only addresses
    them ("Thanks, Tim!") is someone else's. A name counts when it is a speaker of at least two of the
    candidates (a participant of the conversation, not a ``Note:`` line) and a word of the query."""
    base = dict(ranked)
    if boost <= 0 or not base:
        return best_first(base)
    words = set(re.findall(r"[^\W_]+", query.lower()))
    said = {key: speakers(texts.get(key, "")) for key in base}
    seen: dict[str, int] = {}
    for names in said.values():
        for name in set(names):
            seen[name] = seen.get(name, 0) + 1
    named = {n for n, c in seen.items() if c >= 2 and n in words}
    if not named:
        return best_first(base)
    out = {}
    for key, score in base.items():
        names = said[key]
        share = sum(n in named for n in names) / len(names) if names else 0.0
        out[key] = score * (1.0 + boost * share)
    return best_first(out)
