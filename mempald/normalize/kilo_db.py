"""Kilo (the ``kilo`` CLI, a fork of OpenCode): its SQLite database ``$XDG_DATA_HOME/kilo/kilo.db`` has OpenCode's
schema (its ``session`` table adds token and cost columns, which are not read) and is owned by the running Kilo,
kept in WAL mode (read, never written). It is read as ``opencode_db`` reads OpenCode's (the same rows, the same
change tracking by ``time_updated``), its exchanges under agent and source kind ``kilo`` (the Kilo Code editor
extension's tasks are ``cline``'s, also agent ``kilo``).
"""

from __future__ import annotations

from dataclasses import replace

from mempald.normalize import opencode, opencode_db
from mempald.normalize.format import Format, Input, Parsed, Place, Probe

NAME = "kilo_db"
SOURCE_KIND = AGENT = "kilo"
PLACES = (Place("Kilo", linux=("$XDG_DATA_HOME/kilo",), macos=("$XDG_DATA_HOME/kilo",),
                windows=("%USERPROFILE%/.local/share/kilo", "%LOCALAPPDATA%/kilo"), globs=("kilo.db",)),)


def parse(inp: Input) -> Parsed:
    parsed = opencode_db.parse(inp)
    exchanges = [replace(ex, source_kind=SOURCE_KIND, agent=AGENT + (ex.agent or opencode.AGENT)[len(opencode.AGENT):])
                 for ex in parsed.exchanges]
    return replace(parsed, exchanges=exchanges, context=replace(parsed.context, format=NAME))


def detect(probe: Probe) -> bool:
    """An SQLite file named ``kilo.db``."""
    return probe.base == "kilo.db" and probe.head.startswith(b"SQLite format 3\x00")


FORMAT = Format(NAME, "rows", detect, parse, names=("kilo.db",), summary="Kilo CLI sessions in its database",
                agent=AGENT, places=PLACES, ids="message", gather=opencode_db.gather)
