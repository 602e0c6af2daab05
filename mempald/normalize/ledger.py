"""Line accounting: what a reader did with every line or record of its input (pure).

Every record ends in exactly one of three outcomes: **stored** (its text is in an exchange), **folded** (it
was summarised into an exchange: a tool call, a tool result, a sub-agent's step, a command's output) or
**skipped** with a named reason (meta, injected context, progress, duplicate, unknown...). ``mempal inspect
FILE`` prints this table; a property test checks, on every real fixture, that no record is left out.

A record's ``ref`` is the byte offset of its line in a JSONL file, or a short path in a document
(``line 12`` of a Markdown file, ``messages[3]`` of a Gemini session, ``2/<node id>`` of a ChatGPT export).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

STORED = "stored"
FOLDED = "folded"
SKIPPED = "skipped"

Ref = int | str


@dataclass(frozen=True, slots=True)
class Account:
    ref: Ref
    outcome: str  # stored | folded | skipped
    exchange: str = ""  # the exchange key (stored, folded)
    what: str = ""  # folded: what it was (tool call, tool result, sidechain...); skipped: the reason


@dataclass(slots=True)
class Ledger:
    entries: list[Account] = field(default_factory=list)

    def stored(self, ref: Ref, key: str, what: str = "") -> None:
        self.entries.append(Account(ref, STORED, key, what))

    def folded(self, ref: Ref, key: str, what: str) -> None:
        self.entries.append(Account(ref, FOLDED, key, what))

    def skipped(self, ref: Ref, reason: str) -> None:
        self.entries.append(Account(ref, SKIPPED, "", reason))

    def drop(self, key: str, reason: str) -> None:
        """The exchange ``key`` was not kept after all: what went into it is skipped for ``reason``."""
        self.entries = [replace(a, outcome=SKIPPED, exchange="", what=reason) if a.exchange == key and
                        a.outcome != SKIPPED else a for a in self.entries]

    def extend(self, other: Ledger) -> None:
        self.entries.extend(other.entries)

    def counts(self) -> dict[str, int]:
        """How many records ended each way: ``stored``, ``folded: <what>``, ``skipped: <reason>``."""
        c: Counter[str] = Counter()
        for a in self.entries:
            c[a.outcome if a.outcome == STORED else f"{a.outcome}: {a.what}"] += 1
        return dict(sorted(c.items()))
