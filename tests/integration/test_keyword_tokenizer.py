"""Keyword search beyond English, through a real daemon: a Chinese or Japanese keyword inside a sentence of a
Claude Code transcript is found by keyword search alone, code identifiers by their parts; a palace whose keyword
vectors were made by the old English tokenizer is detected at start, re-encoded by ``reindex`` (keyword vectors
only: the dense vectors stay bit for bit) and the re-encode survives a kill mid-way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mempald.config import load_settings
from mempald.embed.embedder import DEFAULT_DIM
from mempald.embed.sparse import DEFAULT_TOKENIZER, META_KEY, Bm25Encoder
from mempald.features.keyword_reindex import PAGE, PENDING_KEY
from mempald.ingest.drawers import index_text
from mempald.store.base import Filters, StoreError
from mempald.store.edge import EdgeStore
from tests.conftest import Daemon

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code_cjk"
FILLER = 80  # exchanges in one more session: with the fixtures, more than one page of the re-encode


def install_transcripts(home: Path, filler: int = 0) -> None:
    projects = home / ".claude" / "projects"
    for d in FIXTURES.iterdir():
        shutil.copytree(d, projects / d.name)
    if filler:  # one more session in the same line shape, written from a fixture line
        src = next((FIXTURES / "-home-USER-projects-dingdan").glob("*.jsonl")).read_text(encoding="utf-8")
        user, reply = (json.loads(x) for x in src.splitlines()[:2])
        lines = []
        for i in range(filler):
            u = {**user, "sessionId": "ffffffff-0000-4000-8000-000000000000",
                 "uuid": f"00000000-0000-4000-8000-{i:012d}",
                 "message": {"role": "user", "content": f"第{i}批订单的 handleOrderBatch{i} 处理失败了"},
                 "timestamp": f"2026-03-02T10:{i // 60:02d}:{i % 60:02d}.000Z"}
            a = {**reply, "sessionId": u["sessionId"], "parentUuid": u["uuid"],
                 "uuid": f"00000000-0000-4000-9000-{i:012d}",
                 "timestamp": f"2026-03-02T11:{i // 60:02d}:{i % 60:02d}.000Z",
                 "message": {**reply["message"], "content": [{"type": "text", "text": f"重新提交第{i}批订单即可。"}]}}
            lines += [json.dumps(u, ensure_ascii=False, separators=(",", ":")),
                      json.dumps(a, ensure_ascii=False, separators=(",", ":"))]
        d = projects / "-home-USER-projects-filler"
        d.mkdir()
        (d / "ffffffff-0000-4000-8000-000000000000.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def keyword_hits(d: Daemon, query: str) -> list[dict[str, Any]]:
    res = d.call("search", {"query": query, "dense_weight": 0.0, "min_score": 0.0, "limit": 5})
    hits: list[dict[str, Any]] = res["hits"]
    return hits


def text_of(hit: dict[str, Any]) -> str:
    return str(hit.get("text", ""))


def found(hits: list[dict[str, Any]], expect: str, within: int = 2) -> bool:
    """Whether a drawer holding ``expect`` is among the first hits of a keyword-only search."""
    return any(expect in text_of(h) for h in hits[:within])


@pytest.mark.timeout(240)
def test_cjk_keywords_and_identifier_parts_found_by_keyword_search(daemon: Daemon, home: Path) -> None:
    install_transcripts(home)
    daemon.start()
    st = daemon.idle()
    assert st["drawers"] >= 9, st
    for query, expect in (("死锁", "死锁"), ("数据库", "数据库连接池"), ("重试次数", "重试次数"),
                          ("データベース", "データベースの移行"), ("移行", "移行作業"), ("有効期限", "有効期限"),
                          ("parse config", "parseConfigFile"), ("config file", "parseConfigFile"),
                          ("user", "user_id"), ("edge.py", "src/store/edge.py"), ("store", "src/store/edge.py")):
        # (a drawer is indexed with the one before it in its session: that neighbour may come first)
        assert found(keyword_hits(daemon, query), expect), query
    # the old tokenizer made a CJK sentence one token: the same keyword found nothing by keyword
    old = Bm25Encoder("english")
    doc = old.document("迁移订单表的时候出现了死锁问题，怎么办？")
    assert not set(old.query("死锁").indices) & set(doc.indices)


def open_store(d: Daemon, path: Path) -> EdgeStore:
    """The palace's store, opened here once the daemon's store process has let it go (it dies with its parent)."""
    def attempt() -> EdgeStore | None:
        try:
            return EdgeStore(path, DEFAULT_DIM)
        except StoreError:
            return None
    store: EdgeStore = d.wait_for(attempt, timeout=30)
    return store


def _snapshot(store: EdgeStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    offset = None
    while True:
        page, offset = store.scroll(Filters(include_deleted=True), 200, offset, with_vectors=True)
        out.update({p.id: p for p in page})
        if offset is None:
            return out


def _encoded_with(points: dict[str, Any], enc: Bm25Encoder) -> set[str]:
    return {pid for pid, p in points.items()
            if p.sparse is not None and set(p.sparse.indices) == set(enc.document(index_text(p.payload)).indices)}


@pytest.mark.timeout(420)
def test_reindex_reencodes_an_old_tokenizers_keywords_only_and_survives_a_kill(daemon: Daemon, home: Path) -> None:
    install_transcripts(home, filler=FILLER)
    daemon.start()
    daemon.idle()
    daemon.stop()
    path = load_settings().store_path()
    old, new = Bm25Encoder("english"), Bm25Encoder(DEFAULT_TOKENIZER)

    # the palace as an older release left it: English keyword vectors, the tokenizer recorded as english
    store = open_store(daemon, path)
    try:
        before = _snapshot(store)
        assert len(before) > PAGE + 10
        assert _encoded_with(before, new) == set(before)  # written by the current tokenizer
        store.set_sparse([(pid, old.document(index_text(p.payload))) for pid, p in before.items()])
        meta = store.get_meta()
        assert meta[META_KEY] == DEFAULT_TOKENIZER
        store.set_meta({**meta, META_KEY: "english"})
        legacy = _snapshot(store)
        # the tokenizers differ on every drawer with CJK text or a camelCase identifier (all but one here)
        differ = set(legacy) - _encoded_with(legacy, new)
        assert len(differ) >= len(legacy) - 2
    finally:
        store.close()

    # detected at start; reindex re-encodes keyword vectors only; the first page is written, then writes fail
    daemon.start(extra_env={"MEMPAL_FAULTS": "set_sparse_fail_after=1"})
    daemon.wait_for(lambda: "keyword_tokenizer_stale" in daemon.logs())
    assert any("run `mempal reindex`" in w for w in daemon.call("status")["warnings"])  # status says so too
    res = daemon.call("reindex")
    assert res["queued"] == 0 and res["keywords_queued"] == len(before) and res["tokenizer"] == DEFAULT_TOKENIZER
    daemon.wait_for(lambda: "keyword_reindex_retry" in daemon.logs())
    daemon.kill()  # SIGKILL mid-way

    store = open_store(daemon, path)
    try:
        meta = store.get_meta()
        assert meta[META_KEY] == "english" and meta[PENDING_KEY]["done"] == PAGE, meta
        mid = _snapshot(store)
        first_page = set(list(mid)[:PAGE])  # the scroll order the re-encode follows
        assert first_page <= _encoded_with(mid, new)
        assert differ - first_page and (differ - first_page) <= _encoded_with(mid, old) - _encoded_with(mid, new)
    finally:
        store.close()

    # a plain restart finishes it
    daemon.start()
    daemon.wait_for(lambda: "keyword_reindex_done" in daemon.logs())
    assert not any("tokenizer" in w for w in daemon.call("status")["warnings"])
    assert found(keyword_hits(daemon, "死锁"), "死锁")
    assert found(keyword_hits(daemon, "parse config"), "parseConfigFile")
    daemon.stop()

    store = open_store(daemon, path)
    try:
        meta = store.get_meta()
        assert meta[META_KEY] == DEFAULT_TOKENIZER and PENDING_KEY not in meta, meta
        after = _snapshot(store)
    finally:
        store.close()
    assert set(after) == set(before)
    assert _encoded_with(after, new) == set(after)
    for pid, p in before.items():  # dense vectors untouched, payloads too
        assert after[pid].dense == p.dense, pid
        assert after[pid].payload == p.payload, pid
