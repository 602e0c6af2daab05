"""The temporal cue of a query: the time span its date words name ("in May 2023", "last week").

Pure: standard library only.  ``mempald.search.fusion.temporal_boost`` lifts the drawers stamped inside the
window; a date in a question is a hint about where to look, never a filter.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

__all__ = ["temporal_window"]

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MONTHS["sept"] = 9
MONTH_RE = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{MONTH_RE}\.?,?\s+(\d{{4}})\b", re.I
)
_MONTH_DAY_YEAR = re.compile(rf"\b{MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{MONTH_RE}\.?,?\s+(\d{{4}})\b", re.I)
_YEAR = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.I)
_RELATIVE: dict[str, tuple[int, int]] = {
    # phrase -> (days back to window start, days back to window end)
    "today": (0, 0),
    "yesterday": (1, 1),
    "last night": (1, 1),
    "this week": (7, 0),
    "last week": (14, 7),
    "last weekend": (9, 1),
    "this month": (31, 0),
    "last month": (62, 28),
    "this year": (366, 0),
    "last year": (731, 365),
    "recently": (30, 0),
    "lately": (30, 0),
}


def _month_bounds(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1)
    end = datetime(year + (month == 12), month % 12 + 1, 1) - timedelta(microseconds=1)
    return start, end


def temporal_window(query: str, now: datetime) -> tuple[datetime, datetime] | None:
    """The time span a query's date words point at, or ``None``.

    Absolute dates win over relative ones: "on 3 June, 2023" / "June 3, 2023" (that day),
    "in May 2023" (that month), "in 2022" (that year); else relative phrases against ``now``:
    "yesterday", "last week", "last year", "recently" ...  The window is naive (no tzinfo) when
    ``now`` is naive.
    """
    tz = now.tzinfo
    for rx, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        m = rx.search(query)
        if m:
            if order == "dmy":
                day, mon, year = int(m.group(1)), m.group(2), int(m.group(3))
            else:
                mon, day, year = m.group(1), int(m.group(2)), int(m.group(3))
            try:
                start = datetime(year, _MONTHS[mon.lower()[:3]], day, tzinfo=tz)
            except ValueError:
                continue
            return start, start + timedelta(days=1) - timedelta(microseconds=1)
    m = _MONTH_YEAR.search(query)
    if m:
        start, end = _month_bounds(int(m.group(2)), _MONTHS[m.group(1).lower()[:3]])
        return start.replace(tzinfo=tz), end.replace(tzinfo=tz)
    m = _YEAR.search(query)
    if m:
        year = int(m.group(1))
        return datetime(year, 1, 1, tzinfo=tz), datetime(year, 12, 31, 23, 59, 59, tzinfo=tz)
    low = query.lower()
    for phrase, (back_start, back_end) in _RELATIVE.items():
        if re.search(rf"\b{phrase}\b", low):
            day0 = now.replace(hour=0, minute=0, second=0, microsecond=0)
            start = day0 - timedelta(days=back_start)
            end = day0 - timedelta(days=back_end) + timedelta(days=1) - timedelta(microseconds=1)
            return start, min(end, now) if back_end == 0 else end
    return None
