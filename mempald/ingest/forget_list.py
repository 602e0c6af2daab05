"""What the ingest may store: the forget list and the user's exclusions, consulted where drawers are written.

The forget list (``ForgetList``, a table of the state database) keeps one rule per forget: the transcript or
the session (a wing's forget keeps one rule per session it touched), the wing and room it was narrowed to, and
the time it covers: what happened up to the forget (or up to ``--before``). ``Admission`` is consulted where
drawers are written (``mempald.ingest.writer``): a drawer a rule covers is not stored again, so a transcript
still on disk, read again after a purge, a re-read or a cursor reset, does not bring back what was forgotten.
What a session says after the forget is stored as usual. ``Admission`` also holds the user's exclusions
(``mempald.sources.exclude``): excluded files are not read, sessions run in an excluded folder not stored.

The forget command itself is ``mempald.features.forget``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mempald.ingest.drawers import CONTEXT_CHARS, Drawer, SourceInfo
from mempald.normalize.wings import normal_wing
from mempald.sources.exclude import ExcludeFilter
from mempald.state.db import State
from mempald.text.redact import scrub_meta

SCHEMA = """
CREATE TABLE IF NOT EXISTS forgotten (
    source TEXT NOT NULL DEFAULT '',
    session TEXT NOT NULL DEFAULT '',
    wing TEXT NOT NULL DEFAULT '',
    room TEXT NOT NULL DEFAULT '',
    until REAL NOT NULL,
    at REAL NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    paths TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (source, session, wing, room)
)
"""
MIRROR_KEY = "forget_rules"  # the store metadata field holding a copy of every rule (``mirrored_rules``)
NOT_FROM_FILES = "mempal:"  # source paths of drawers saved by hand or made by mempal itself (no transcript)


def from_file(payload: Mapping[str, Any]) -> bool:
    path = str(payload.get("source_path") or "")
    return bool(path) and not path.startswith(NOT_FROM_FILES)


@dataclass(frozen=True, slots=True)
class Rule:
    """One forget: drawers of ``source`` (a transcript) or ``session``, narrowed to ``wing`` / ``room`` when
    set, whose time is at most ``until`` (epoch seconds; undated drawers count as old). ``paths``: the
    transcripts its drawers came from (read again when it is lifted)."""

    source: str = ""
    session: str = ""
    wing: str = ""
    room: str = ""
    until: float = 0.0
    at: float = 0.0
    actor: str = ""
    reason: str = ""
    paths: tuple[str, ...] = field(default=(), compare=False)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.source, self.session, self.wing, self.room

    def covers(self, p: Mapping[str, Any]) -> bool:
        return ((not self.source or p.get("source_path") == self.source)
                and (not self.session or p.get("session_id") == self.session)
                and (not self.wing or normal_wing(str(p.get("wing") or "")) == normal_wing(self.wing))
                and (not self.room or p.get("room") == self.room)
                and float(p.get("ts") or 0.0) <= self.until)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Rule:
        return cls(str(d.get("source") or ""), str(d.get("session") or ""), str(d.get("wing") or ""),
                   str(d.get("room") or ""), float(d.get("until") or 0.0), float(d.get("at") or 0.0),
                   str(d.get("actor") or ""), str(d.get("reason") or ""),
                   tuple(str(p) for p in d.get("paths") or () if isinstance(p, str)))

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "session": self.session, "wing": self.wing, "room": self.room,
                "until": self.until, "at": self.at, "actor": self.actor, "reason": self.reason,
                "paths": list(self.paths)}


def mirrored_rules(meta: Mapping[str, Any]) -> list[Rule]:
    """The rules copied into the store's metadata (``MIRROR_KEY``): the forget list survives a lost state
    database, and ``mempald repair`` puts them back (so a purged session is not read again from its transcript).
    Entries that do not read as rules are skipped."""
    raw = meta.get(MIRROR_KEY)
    out = []
    for d in raw if isinstance(raw, list) else ():
        if isinstance(d, dict):
            try:
                out.append(Rule.from_dict(d))
            except (TypeError, ValueError):
                continue
    return out


class ForgetList:
    """The rules of every forget, in the state database, with an index in memory (consulted for every drawer
    the ingest writes: two dictionary lookups). Blocking methods: call them from a worker thread."""

    def __init__(self, state: State) -> None:
        self.state = state
        with state.lock:
            state.conn.execute(SCHEMA)
            rows = state.conn.execute(
                "SELECT source, session, wing, room, until, at, actor, reason, paths FROM forgotten").fetchall()
        self._rules: dict[tuple[str, str, str, str], Rule] = {}
        for r in rows:
            rule = Rule(r[0], r[1], r[2], r[3], float(r[4]), float(r[5]), r[6], r[7], tuple(json.loads(r[8])))
            self._rules[rule.key] = rule
        self._index()

    def _index(self) -> None:
        by_session: dict[str, list[Rule]] = {}
        by_source: dict[str, list[Rule]] = {}
        for rule in self._rules.values():
            if rule.session:
                by_session.setdefault(rule.session, []).append(rule)
            else:
                by_source.setdefault(rule.source, []).append(rule)
        self._by_session, self._by_source = by_session, by_source  # swapped whole: readers never see half

    def rules(self) -> list[Rule]:
        return sorted(self._rules.values(), key=lambda r: r.at)

    def __len__(self) -> int:
        return len(self._rules)

    def covers(self, payload: Mapping[str, Any]) -> bool:
        """Does a forget cover this drawer (so it is not stored again)?"""
        session = self._by_session.get(str(payload.get("session_id") or ""), ())
        source = self._by_source.get(str(payload.get("source_path") or ""), ())
        return any(r.covers(payload) for r in (*session, *source))

    def covers_file(self, path: str, session: str) -> bool:
        """Did a forget name this transcript or its session (its archive is removed and not kept again)?"""
        return bool(self._by_source.get(path)) or bool(session and self._by_session.get(session))

    def add(self, rules: Iterable[Rule]) -> int:
        """Record ``rules``; a rule already there keeps the later ``until`` and both rules' paths."""
        out = []
        for given in rules:
            new = replace(given, actor=scrub_meta(given.actor), reason=scrub_meta(given.reason))  # as the audit's
            old = self._rules.get(new.key)
            out.append(new if old is None else replace(new, until=max(new.until, old.until),
                                                       paths=tuple(sorted({*old.paths, *new.paths}))))
        with self.state.lock:
            self.state.conn.execute("BEGIN")
            try:
                self.state.conn.executemany(
                    "INSERT OR REPLACE INTO forgotten (source, session, wing, room, until, at, actor, reason, paths)"
                    " VALUES (?,?,?,?,?,?,?,?,?)",
                    [(*r.key, r.until, r.at, r.actor, r.reason, json.dumps(list(r.paths))) for r in out])
                self.state.conn.execute("COMMIT")
            except BaseException:
                self.state.conn.execute("ROLLBACK")
                raise
        for rule in out:
            self._rules[rule.key] = rule
        self._index()
        return len(out)

    def lift(self, rules: Iterable[Rule]) -> list[Rule]:
        """Remove ``rules`` (by key); returns those that were there."""
        gone = [self._rules[r.key] for r in rules if r.key in self._rules]
        with self.state.lock:
            self.state.conn.executemany(
                "DELETE FROM forgotten WHERE source = ? AND session = ? AND wing = ? AND room = ?",
                [r.key for r in gone])
        for r in gone:
            self._rules.pop(r.key, None)
        self._index()
        return gone


class Admission:
    """What the ingest may read and store: not what the user excluded, not what was forgotten. Drawers saved
    by hand (``mempal save``, an agent's ``ingest``) come from no file and are always stored."""

    def __init__(self, exclude: ExcludeFilter, forgotten: ForgetList) -> None:
        self.exclude = exclude
        self.forgotten = forgotten
        self.blocked: Counter[str] = Counter()  # drawers not stored: "forgotten", "excluded"

    def readable(self, path: Path) -> bool:
        """May the unit at ``path`` be read at all?"""
        return not self.exclude.excludes(path)

    def drawers(self, drawers: Sequence[Drawer], info: SourceInfo) -> list[Drawer]:
        """``drawers`` without those a forget covers or whose session ran in an excluded folder. A kept drawer
        whose indexing context was a dropped one's text gets the last kept drawer's before it instead (none
        if there is none): nothing of what is not stored is stored in another drawer's context."""
        if not drawers or info.path.startswith(NOT_FROM_FILES):
            return list(drawers)
        kept: list[Drawer] = []
        verdicts: dict[tuple[str, str], bool] = {}
        last: dict[str, tuple[bool, str]] = {}  # session -> (was its last drawer dropped, the last kept text)
        for d in drawers:
            p = d.payload
            cwd, session = str(p.get("cwd") or ""), str(p.get("session_id") or "")
            out = verdicts.get((cwd, session))
            if out is None:
                out = verdicts[(cwd, session)] = self.exclude.excludes_session(cwd, session)
            dropped, text = last.get(session, (False, ""))
            if out or self.forgotten.covers(p):
                self.blocked["excluded" if out else "forgotten"] += 1
                last[session] = (True, text)
                continue
            if dropped:
                payload = p.copy()
                payload.pop("context", None)
                if text:
                    payload["context"] = text[-CONTEXT_CHARS:]
            kept.append(Drawer(d.id, d.text, payload) if dropped else d)
            last[session] = (False, d.text)
        return kept
