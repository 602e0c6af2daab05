"""The answer-type signal of search: a question asks for a kind of answer, and the drawer that answers names one.

"When did we switch to uv?" is answered by the turn that says when ("yesterday", "last week", "on 3 May"). Among
the drawers of one session, the one that says when is the likelier answer to a question that asks when, so
:func:`when_boost` lifts it, up to its session's best score and never past it: the signal picks which drawer of a
session answers, not which session (uncapped, drawers of unrelated sessions that merely mention a time crowded out
the right session on LoCoMo's messaging cut).  *Where* (a place) and *how many* (a number) were measured too and did
not hold on top of *when* (``bench/RESEARCH_locomo.md``, tenth round).

Pure apart from the ranking helpers of ``fusion``. English question words only, like the dense model.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping

from mempald.search.fusion import Ranked, best_first
from mempald.search.temporal import MONTH_RE

DEFAULT_WHEN_BOOST = 0.5
"""For a query that asks *when*, the relative lift of a drawer that says when (:func:`tells_when`), within its
session and never past its session's best score (:func:`when_boost`; 0 disables).  Issue 24 (tenth round of
``bench/RESEARCH_locomo.md``): against 0, turn R@10 +0.004 on LoCoMo's turns and +0.001 on its messaging
cut, on both folds of both, temporal questions +0.024 / +0.007, no category or session figure lower.  1 loses to
0.5 on the messaging cut's second fold and 2 does not beat 1 on the first fold of either view, so by the rule the
weaker value stays; uncapped, the lift cost the messaging cut session R@10."""

_ASKS_WHEN = re.compile(
    r"^\W*when\b|\bwhen\s+(?:did|do|does|was|were|is|are|will|would|had|has|have)\b"
    r"|\bwhat\s+(?:date|day|year|month|time)\b|\bhow\s+long\s+ago\b|\bsince\s+when\b",
    re.I,
)
# Words that say when on their own: "yesterday", "three days ago", "on Friday", "in August" ("may" and "march"
# need a day or a year beside them: they are words too).
_WHEN_WORDS = frozenset([
    "yesterday", "today", "tonight", "tomorrow", "ago", "recently", "lately", "weekend", "weekends",
    "january", "february", "april", "june", "july", "august", "september", "october", "november", "december",
    *(d + s for d in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun") for s in ("day", "days")),
])
_LEADS = frozenset(["last", "next", "this", "past", "coming", "previous"])
_UNITS = frozenset(["night", "week", "month", "year", "summer", "winter", "spring", "fall", "autumn", "morning",
                    "evening", "afternoon", "time"])
_MONTHS = frozenset(["jan", "feb", "mar", "march", "apr", "may", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
                     "dec"])
_WORD = re.compile(r"[a-z]+|\d+")
# What the words alone cannot tell (a text is lowercased first): "last week", "may 5", "3rd of june", "in 2023".
_TELLS_WHEN = re.compile(
    r"\b(?:(?:last|next|this|past|coming|previous)\s+(?:night|week|month|year|summer|winter|spring|fall|autumn"
    r"|morning|evening|afternoon|time)"
    rf"|{MONTH_RE}\.?,?\s+(?:\d{{1,2}}|(?:19|20)\d\d)|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH_RE}"
    r"|(?:in|since|during|from|until|till|by|of|early|late|mid)[\s-]+(?:19|20)\d\d)\b",  # a year, not a port
)


def asks_when(query: str) -> bool:
    """Whether a query asks *when* something happened: "When did ...", "what date / year ...", "how long ago"."""
    return _ASKS_WHEN.search(query) is not None


def tells_when(text: str) -> bool:
    """Whether a text says when something happened: a relative time word ("yesterday", "last week", "three days
    ago", "on Friday"), a month with or without its day, or a year after "in", "since", "by" ... (a bare
    number like ``2048`` is not one).  English only, like the dense model.  The words are looked up first; the
    pattern reads only a text whose words could make one of the phrases (a quarter of the time of a pattern
    over every text)."""
    low = text.lower()
    words = set(_WORD.findall(low))
    if not words.isdisjoint(_WHEN_WORDS):
        return True
    digits = any(w.isdigit() for w in words)
    if not ((digits and (not words.isdisjoint(_MONTHS) or any(len(w) == 4 for w in words if w.isdigit())))
            or (not words.isdisjoint(_LEADS) and not words.isdisjoint(_UNITS))):
        return False
    return _TELLS_WHEN.search(low) is not None


def session_capped_boost(
    ranked: Iterable[tuple[str, float]],
    lifted: Iterable[str],
    sessions: Mapping[str, Hashable],
    boost: float,
) -> Ranked:
    """Multiply by ``1 + boost`` the score of the drawers in ``lifted``, but never past the best score in their
    session (``sessions``: each drawer's session; a drawer without one is left as it is).

    It chooses which drawer of a session answers, not which session: the sessions' order by their best drawer
    does not change.
    """
    base = dict(ranked)
    out = dict(base)
    if boost <= 0:
        return best_first(out)
    best: dict[Hashable, float] = {}
    for key, score in base.items():
        sess = sessions.get(key)
        if sess is not None:
            best[sess] = max(best.get(sess, score), score)
    for key in set(lifted):
        sess = sessions.get(key)
        if sess is not None and key in base:
            out[key] = max(base[key], min(base[key] * (1.0 + boost), best[sess]))
    return best_first(out)


def when_boost(
    ranked: Iterable[tuple[str, float]],
    texts: Mapping[str, str],
    sessions: Mapping[str, Hashable],
    query: str,
    boost: float = DEFAULT_WHEN_BOOST,
    reach: int | None = None,
) -> Ranked:
    """For a query that asks when, lift the drawers whose text says when, within their session
    (:func:`session_capped_boost`); any other query's ranking is left as it is.  ``reach``: only drawers whose
    lifted score could pass the ``reach``-th best score are read (the others cannot reach the first ``reach``)."""
    ranked = list(ranked)
    if boost <= 0 or not asks_when(query):
        return ranked
    floor = ranked[reach - 1][1] if reach is not None and 0 < reach <= len(ranked) else float("-inf")
    says = [k for k, score in ranked if score * (1.0 + boost) > floor and tells_when(texts.get(k, ""))]
    return session_capped_boost(ranked, says, sessions, boost)
