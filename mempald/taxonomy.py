"""The room taxonomy: the default keyword table for conversation rooms, overridden by the user's
``taxonomy.json`` in the config dir (``mempal taxonomy list|edit``)."""

from __future__ import annotations

import json
from pathlib import Path

from mempald.classify import DEFAULT_ROOM_KEYWORDS
from mempald.config import config_dir


def taxonomy_path() -> Path:
    return config_dir() / "taxonomy.json"


def load_taxonomy() -> dict[str, list[str]]:
    table = {k: list(v) for k, v in DEFAULT_ROOM_KEYWORDS.items()}
    try:
        user = json.loads(taxonomy_path().read_text())
    except (FileNotFoundError, ValueError):
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
