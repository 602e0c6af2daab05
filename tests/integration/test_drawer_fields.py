"""The drawer's declared fields over a real daemon: a session read from a real transcript file, then its hits
(``search``), records (``get``) and session window (``session_drawers``) through ``mempal.Client`` over the real
socket carry only the fields the declaration returns there, each of its declared type, and never a hidden one
(the indexing context the store holds for every drawer but a session's first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

import pytest

from mempal import Client
from mempal.methods.drawer import DrawerRecord, SearchHit, by_name
from mempal.paths import socket_path
from mempald.features.disclosure import DRAWER_FIELDS
from mempald.features.viewer import HIDDEN
from mempald.search.ranking import HIT_FIELDS
from tests.conftest import Daemon
from tests.integration.test_disclosure import PROMPTS, SESSION, write_session

FIELD = by_name()


def _of_type(value: Any, declared: Any) -> bool:
    if get_origin(declared) is list:
        return isinstance(value, list) and all(isinstance(v, get_args(declared)[0]) for v in value)
    if declared is int:  # the store may hand a whole number back as a float
        return isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer()
    if declared is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, declared)


def _declared_fields_ok(item: dict[str, Any], allowed: set[str]) -> None:
    assert set(item) <= allowed, set(item) - allowed
    for hidden in HIDDEN:
        assert hidden not in item
    for key, value in item.items():
        if key in FIELD:
            assert _of_type(value, FIELD[key].type), (key, value)


@pytest.mark.timeout(300)
def test_hits_records_and_windows_carry_the_declared_fields_only(daemon: Daemon, home: Path) -> None:
    write_session(home)
    daemon.start()
    daemon.idle()
    with Client(socket=socket_path(daemon.env)) as client:
        found = client.search("heron partition writer memory cap", limit=len(PROMPTS), min_score=0.0)
        hits = found["hits"]
        assert len(hits) >= 3
        for hit in hits:
            _declared_fields_ok(dict(hit), set(get_type_hints(SearchHit)))
            assert [k for k in hit if k in HIT_FIELDS] == [k for k in HIT_FIELDS if k in hit]
            assert hit["session_id"] == SESSION and "heron" in hit.get("text", "")
        got = client.get([h["drawer_id"] for h in hits])
        assert len(got["drawers"]) == len(hits) and not got["missing"]
        for record in got["drawers"]:
            _declared_fields_ok(dict(record), set(get_type_hints(DrawerRecord)))
            assert set(DRAWER_FIELDS) - {"files"} <= set(record)
            assert record["text"] and record["tokens"] > 0
        window = client.session_drawers(drawer_id=hits[0]["drawer_id"], before=10, after=10)
        # ``drawers`` pages the stored payloads as they are (exports, audits): there the context shows
        stored = client.drawers(session_id=SESSION, fields=["context", "position"], limit=50)["drawers"]
    assert sorted(bool(d.get("context")) for d in stored) == [False] + [True] * (len(PROMPTS) - 1)
    # the store holds a context for every drawer after the session's first: the window's records show none
    assert len(window["drawers"]) == len(PROMPTS)
    for record in [window["anchor"], *window["drawers"]]:
        _declared_fields_ok(record, {"drawer_id", *FIELD} - set(HIDDEN))
