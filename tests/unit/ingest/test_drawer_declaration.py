"""The drawer is declared once (``mempal.methods.drawer``): what ``build_drawers`` writes agrees with the
declaration on every shared format fixture and on a code project, the key lists derived from it are the lists
they replaced, the store indexes each field as declared, and the clients' answer types agree with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Required, get_args, get_origin, get_type_hints

import pytest

from mempal.methods.drawer import DrawerRecord, SearchHit, by_name, fields, required
from mempald.embed.embedder import Embedder
from mempald.features.disclosure import DRAWER_FIELDS
from mempald.features.viewer import HIDDEN, drawer_record
from mempald.ingest import inspect
from mempald.ingest.drawers import BuildStats, Drawer, SourceInfo, build_drawers
from mempald.ingest.projects import project_exchanges
from mempald.ingest.units import folder_wing
from mempald.ingest.writer import REFRESHED
from mempald.normalize.model import Exchange
from mempald.search.ranking import HIT_FIELDS, RANK_FIELDS, hit_dict
from mempald.sources.roots import Source
from mempald.store.base import BOOL_FIELDS, FLOAT_FIELDS, KEYWORD_FIELDS, StoredPoint
from mempald.store.field_index import indexed_fields

FIELDS = fields()
FIELD = by_name()
REQUIRED = required()
# The lists as they were written by hand before the declaration (issue #40), kept here once.
OLD_KEYWORD_FIELDS = ("wing", "room", "memory_type", "source_kind", "agent", "session_id", "source_path",
                      "exchange_key", "machine", "user", "kind", "status", "files")
OLD_FLOAT_FIELDS = ("ts", "importance", "position")
OLD_HIT_FIELDS = ("wing", "room", "memory_type", "source_kind", "source_path", "session_id", "agent", "timestamp",
                  "position", "exchange_key", "chunk_index", "importance", "title", "cwd", "git_branch", "machine",
                  "kind")
OLD_RANK_FIELDS = ("source_kind", "session_id", "position", "chunk_index", "ts", "text")
OLD_REFRESHED = ("wing", "room", "memory_type", "importance", "title", "kind", "agent", "cwd", "git_branch",
                 "position", "source_kind", "session_id", "tools", "files", "parent_exchange", "parent_id",
                 "subagent_type", "timestamp", "ts", "model", "chunk_count")
OLD_HIDDEN = ("context",)
OLD_DRAWER_FIELDS = ("drawer_id", "wing", "room", "memory_type", "importance", "timestamp", "agent", "session_id",
                     "source_kind", "source_path", "position", "chunk_index", "chunk_count", "git_branch", "cwd",
                     "files", "title")


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(models_dir=tmp_path_factory.mktemp("models"), threads=1)  # the packaged model's tokenizer


def test_the_derived_lists_are_the_lists_they_replaced() -> None:
    # a hit returns its fields in this order (its JSON as clients see it), so the order is kept too
    assert HIT_FIELDS == OLD_HIT_FIELDS
    assert RANK_FIELDS == OLD_RANK_FIELDS
    assert HIDDEN == OLD_HIDDEN
    # the others are sets (which fields are indexed, refreshed, returned): their order is not observable
    for derived, old in ((KEYWORD_FIELDS, OLD_KEYWORD_FIELDS), (FLOAT_FIELDS, OLD_FLOAT_FIELDS),
                         (REFRESHED, OLD_REFRESHED), (DRAWER_FIELDS, OLD_DRAWER_FIELDS)):
        assert len(set(derived)) == len(derived)
        assert set(derived) == set(old)
    assert BOOL_FIELDS == ()


def test_the_store_indexes_each_field_as_declared() -> None:
    placed = {name: str(kind).rsplit(".", 1)[-1].lower() for name, kind in indexed_fields().items()}
    assert placed == {f.name: f.index for f in FIELDS if f.index is not None}


def test_the_answer_types_agree_with_the_declaration() -> None:
    hit = get_type_hints(SearchHit)
    assert [k for k in hit if k in FIELD and k != "text"] == list(HIT_FIELDS)  # in the order a hit has them
    record = get_type_hints(DrawerRecord)
    assert set(record) == {*DRAWER_FIELDS, "text", "tokens"}
    for name in (*HIT_FIELDS, *DRAWER_FIELDS[1:], "text"):
        for answer in (hit, record):
            if name in answer:
                assert _strip(answer[name]) == FIELD[name].type, name
    assert not set(HIDDEN) & (set(hit) | set(record))


def _strip(hint: Any) -> Any:
    """``Required[X]`` -> ``X``."""
    return get_args(hint)[0] if get_origin(hint) is Required else hint


def _drawers_of_fixtures(formats_dir: Path, embedder: Embedder) -> tuple[list[Drawer], list[Exchange]]:
    drawers: list[Drawer] = []
    exchanges: list[Exchange] = []
    for path in sorted(p for p in formats_dir.rglob("*") if p.is_file() and p.suffix != ".md"):
        source = Source(key="fixtures", root=path.parent, mode="convos", fmt="auto")
        name, parsed, _, _ = inspect._parse(path, source, 16 << 20, 512 << 20)
        if parsed is None:
            continue
        info = SourceInfo(kind=name, path=str(path), source_key=source.key, machine="m", user="u",
                          default_wing=folder_wing(path, source.root))
        exchanges += parsed.exchanges
        drawers += build_drawers(parsed.exchanges, info, embedder.count_tokens, 256, BuildStats())
    return drawers, exchanges


def _drawers_of_project(root: Path, embedder: Embedder) -> list[Drawer]:
    drawers: list[Drawer] = []
    for path in sorted(root.glob("*.py")):
        chunks, _ = project_exchanges(path, root, path.stat().st_size)
        info = SourceInfo(kind="project", path=str(path), source_key="code", machine="m", user="u", wing="code")
        drawers += build_drawers(chunks, info, embedder.count_tokens, 256, BuildStats())
    return drawers


def _drawers_of_cursor_store(root: Path, embedder: Embedder) -> list[Drawer]:
    """A Cursor store (a database: no file of the shared fixtures) in the real schema, built by the tests."""
    from mempald.normalize import cursor
    from mempald.normalize.model import CursorContext
    from mempald.sources.look import LOOK
    from tests.cursor_samples import build_cursor_user

    db = build_cursor_user(root)
    parsed = cursor.parse(cursor.gather(db, CursorContext(format="cursor"), LOOK))
    info = SourceInfo(kind="cursor", path=str(db), source_key="cursor", machine="m", user="u")
    return build_drawers(parsed.exchanges, info, embedder.count_tokens, 256, BuildStats())


def _type_ok(value: Any, declared_type: Any) -> bool:
    if get_origin(declared_type) is list:
        (item,) = get_args(declared_type)
        return isinstance(value, list) and all(isinstance(v, item) for v in value)
    if declared_type is float:
        return isinstance(value, float)
    if declared_type is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, declared_type)


@pytest.mark.timeout(300)
def test_build_drawers_writes_what_is_declared(formats_dir: Path, embedder: Embedder, tmp_path: Path) -> None:
    drawers, exchanges = _drawers_of_fixtures(formats_dir, embedder)
    drawers += _drawers_of_project(Path(__file__).resolve().parents[3] / "mempald" / "ingest", embedder)
    drawers += _drawers_of_cursor_store(tmp_path, embedder)
    assert len(drawers) > 500
    written: set[str] = set()
    for d in drawers:
        keys = set(d.payload)
        assert keys <= set(FIELD), f"undeclared fields {keys - set(FIELD)} in {d.payload['source_path']}"
        assert set(REQUIRED) <= keys, f"required fields missing: {set(REQUIRED) - keys}"
        for key, value in d.payload.items():
            assert _type_ok(value, FIELD[key].type), (key, value)
        assert d.payload["text"] == d.text
        written |= keys
    # every format's extras are declared, as optional fields (a required one is never overwritten by them)
    extras = {k for ex in exchanges for k, _ in ex.extra}
    assert extras <= set(FIELD) - set(REQUIRED)
    # the fixtures exercise every field build_drawers may write (a delete's fields are set by delete and forget;
    # a capped exchange's by an exchange over ingest.max_drawers_per_exchange: tests/unit/ingest/test_drawer_cap.py)
    assert set(FIELD) - written == {"deleted_at", "deleted_by", "delete_reason", "forgotten", "capped", "text_chars",
                                    "stored_chars"}


def test_hidden_fields_never_reach_a_hit_or_a_record(embedder: Embedder) -> None:
    ex = [Exchange(source_kind="claude_code", session_id="s1", key=f"k{i}", position=i,
                   user=f"question {i} about the heron exporter", assistant=f"answer {i}: the partition writer")
          for i in range(3)]
    info = SourceInfo(kind="claude_code", path="/tmp/s1.jsonl", source_key="k", machine="m", user="u")
    drawers = build_drawers(ex, info, embedder.count_tokens, 256)
    assert [bool(d.payload.get("context")) for d in drawers] == [False, True, True]
    for d in drawers:
        hit = hit_dict(d.id, 1.0, d.payload)
        record = drawer_record(StoredPoint(d.id, d.payload))
        for hidden in HIDDEN:
            assert hidden not in hit
            assert hidden not in record
        assert set(hit) <= set(get_type_hints(SearchHit))
