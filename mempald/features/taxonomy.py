"""The room taxonomy: the default keyword table for conversation rooms, overridden by the user's
``taxonomy.json`` in the config dir (``mempal taxonomy list|edit``)."""

from __future__ import annotations

import json
from pathlib import Path

from mempald.config import config_dir
from mempald.sources.reader import read_capped
from mempald.text.classify import DEFAULT_ROOM_KEYWORDS

TAXONOMY_MAX = 1024 * 1024


def taxonomy_path() -> Path:
    return config_dir() / "taxonomy.json"


def load_taxonomy() -> dict[str, list[str]]:
    table = {k: list(v) for k, v in DEFAULT_ROOM_KEYWORDS.items()}
    try:
        user = json.loads(read_capped(taxonomy_path(), TAXONOMY_MAX, limit="the largest taxonomy.json"))
    except (OSError, ValueError):  # (a FIFO or a device by that name: Refused, never waited on)
        return table
    if isinstance(user, dict):
        for room, words in user.items():
            if isinstance(words, list) and all(isinstance(w, str) for w in words):
                table[str(room)] = list(words)
    return table


def save_taxonomy(table: dict[str, list[str]]) -> None:
    path = taxonomy_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table, indent=2, sort_keys=True))


class Taxonomy:
    """The room keywords in force: read at start, replaced when the user edits a room (the ingest asks for the
    current table with ``current``)."""

    def __init__(self) -> None:
        self.table: dict[str, list[str]] | None = None

    def load(self) -> None:
        """Blocking: read the table (defaults plus the user's file)."""
        self.table = load_taxonomy()

    def current(self) -> dict[str, list[str]] | None:
        return self.table

    def set_room(self, room: str, keywords: list[str]) -> dict[str, list[str]]:
        """Blocking: set one room's keywords (an empty list removes the room), save, and use it from now on."""
        table = load_taxonomy()
        if keywords:
            table[room] = keywords
        else:
            table.pop(room, None)
        save_taxonomy(table)
        self.table = table
        return table
