"""Behaviour of the qdrant-client store that the embedded one does not have: URLs, API keys, retries,
an unreachable server, schema checks, server-side fusion and several daemons sharing one collection."""

from __future__ import annotations

import dataclasses
import random
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from structlog.testing import capture_logs

from mempald.config import StoreSettings, parse_settings
from mempald.embed.sparse import Bm25Encoder
from mempald.store.base import DELETED, LIVE, Filters, PointData, StoreError, StoreRefused, StoreUnreachable
from mempald.store.server import ServerStore
from mempald.store.server_access import is_transient, parse_url, read_api_key
from mempald.store.server_schema import Collections

DIM = 8
KEY = "qk-Sup3r-S3cret-Value-0123456789"
BM25 = Bm25Encoder()


def point(n: int, machine: str = "m1", text: str | None = None, status: str = LIVE) -> PointData:
    rng = random.Random(n)
    text = text or f"note {n} about postgres and deploys"
    payload = {"wing": "w", "room": "r", "machine": machine, "user": "ada", "ts": float(n), "status": status,
               "deleted": status == DELETED, "content": text}
    return PointData(str(uuid.uuid5(uuid.NAMESPACE_URL, f"srv-{machine}-{n}")), payload, BM25.document(text),
                     [rng.uniform(-1, 1) for _ in range(DIM)])


# url parsing ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (":memory:", ("memory", "")),
        ("path:/srv/qdrant", ("path", "/srv/qdrant")),
        ("http://qdrant.lan:6333", ("remote", "http://qdrant.lan:6333")),
        ("https://x.cloud.qdrant.io:6333/", ("remote", "https://x.cloud.qdrant.io:6333")),
        ("http://localhost:6333/prefix", ("remote", "http://localhost:6333/prefix")),
    ],
)
def test_parse_url(url: str, expected: tuple[str, str]) -> None:
    assert parse_url(url) == expected


def test_parse_url_expands_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_url("path:~/q") == ("path", str(tmp_path / "q"))


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://host", "expected http"),
        ("/plain/folder", "expected http"),
        ("path:", "needs a folder"),
        ("http://", "no host"),
        ("http://admin:pw@host:6333", "credentials"),
        ("https://host:6333/?api-key=x", "query string"),
    ],
)
def test_parse_url_errors(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message) as err:
        parse_url(url)
    assert "pw" not in str(err.value)


def test_locations() -> None:
    store = ServerStore(":memory:", DIM, collection="team")
    try:
        assert store.location == "server::memory:/team"
        assert repr(store) == "ServerStore('server::memory:/team')"
    finally:
        store.close()


def test_from_settings_in_memory() -> None:
    settings = parse_settings({"store": {"url": ":memory:", "collection": "palace"}}, env={})
    store = ServerStore.from_settings(settings, DIM)
    try:
        assert store.location == "server::memory:/palace"
        assert store.collection == "palace" and store.meta_collection == "palace_meta"
    finally:
        store.close()


# api key -------------------------------------------------------------------------------------------------------
def test_api_key_from_env_then_file(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "-file\n")
    key_file.chmod(0o600)
    s = StoreSettings(api_key_env="MY_QDRANT_KEY", api_key_file=str(key_file))
    assert read_api_key(s, env={"MY_QDRANT_KEY": f" {KEY} "}) == KEY
    assert read_api_key(s, env={"MY_QDRANT_KEY": ""}) == KEY + "-file"
    assert read_api_key(s, env={}) == KEY + "-file"
    assert read_api_key(StoreSettings(api_key_env="MY_QDRANT_KEY"), env={}) is None


def test_api_key_file_errors_name_the_file_not_the_key(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot read .*nope"):
        read_api_key(StoreSettings(api_key_env="", api_key_file=str(tmp_path / "nope")), env={})
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(StoreError, match="is empty"):
        read_api_key(StoreSettings(api_key_env="", api_key_file=str(empty)), env={})


def test_api_key_file_readable_by_others_is_logged(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    key_file.chmod(0o644)
    with capture_logs() as logs:
        assert read_api_key(StoreSettings(api_key_env="", api_key_file=str(key_file)), env={}) == KEY
    assert [e["event"] for e in logs] == ["store.api_key_file_open"]
    assert KEY not in repr(logs)


def test_unreachable_server_fails_fast_and_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMPAL_TEST_QDRANT_KEY", KEY)
    settings = parse_settings(
        {"store": {"url": "http://127.0.0.1:9", "api_key_env": "MEMPAL_TEST_QDRANT_KEY", "timeout_s": 1.0}}, env={})
    started = time.monotonic()
    with capture_logs() as logs, pytest.raises(StoreError) as err:
        ServerStore.from_settings(settings, DIM)
    assert time.monotonic() - started < 5
    msg = str(err.value)
    assert "cannot reach the Qdrant server" in msg
    assert "127.0.0.1:9" in msg
    assert "3 attempts" in msg
    assert KEY not in msg and KEY not in repr(err.value.__cause__) and KEY not in repr(logs)
    assert [e["event"] for e in logs].count("store.retry") == 2


def closed_port() -> int:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def away_store(**kw: Any) -> ServerStore:
    """A store whose server does not answer when it is opened (the daemon's start while a server is away)."""
    return ServerStore(f"http://127.0.0.1:{closed_port()}", DIM, timeout_s=1, backoff_s=0.01, wait_for_server=True,
                       **kw)


def server_answers(store: ServerStore, client: QdrantClient) -> None:
    """The server comes back: the store's client now reaches one (local mode), and the next call may try it."""
    store._client = client
    store._schema = dataclasses.replace(store._schema, client=client)
    store._next_try = 0.0


def test_a_server_away_at_start_is_reached_later_and_checked_first() -> None:
    with capture_logs() as logs:
        store = away_store()
    try:
        assert not store.connected and "cannot reach the Qdrant server" in store.away
        assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["store.away_at_start"]
        # until the next try, every call fails at once with the reason (a write then waits in the outbox)
        started = time.monotonic()
        for _ in range(20):
            with pytest.raises(StoreUnreachable, match="cannot reach the Qdrant server"):
                store.count(Filters())
        assert time.monotonic() - started < 1.0
        checked: list[tuple[int, dict[str, Any]]] = []
        others: list[str] = []
        threads: list[threading.Thread] = []

        def checks() -> None:  # the daemon's start-up checks: their own calls go through, nobody else's
            meta = store.get_meta()
            other = threading.Thread(target=lambda: others.append(f"{store.points()} after {len(checked)} checks"))
            threads.append(other)
            other.start()
            other.join(0.3)
            assert other.is_alive()  # waiting for the checks to end
            store.set_meta({"model": "m"})
            checked.append((store.count(Filters()), meta))

        store.on_connect = checks
        server_answers(store, QdrantClient(location=":memory:"))
        with capture_logs() as logs:
            store.upsert([point(1), point(2)])
        assert store.connected and not store.away
        threads[0].join(5)
        assert checked == [(0, {})] and others[0].endswith("after 1 checks")  # it ran once the checks had
        assert store.count(Filters()) == 2 and store.get_meta() == {"model": "m"}
        assert "store.reached" in [e["event"] for e in logs]
    finally:
        store.close()


def test_a_store_a_check_refuses_when_its_server_answers_refuses_every_call() -> None:
    store = away_store()
    try:
        def refuse() -> None:
            raise StoreError("the store was filled by model 'other' but config says 'mine': run `mempal reindex`")

        store.on_connect = refuse
        server_answers(store, QdrantClient(location=":memory:"))
        with capture_logs() as logs:
            for _ in range(2):
                with pytest.raises(StoreError, match="filled by model 'other'") as err:
                    store.upsert([point(1)])
                assert isinstance(err.value, StoreRefused) and not isinstance(err.value, StoreUnreachable)
        assert not store.connected
        assert [e["event"] for e in logs if e["log_level"] == "error"] == ["store.refused"]
    finally:
        store.close()


def test_without_wait_for_server_an_away_server_fails_the_open() -> None:
    with pytest.raises(StoreUnreachable):
        ServerStore(f"http://127.0.0.1:{closed_port()}", DIM, timeout_s=1, backoff_s=0.01)


def test_api_key_over_plain_http_is_logged_not_warned(monkeypatch: pytest.MonkeyPatch) -> None:
    # No request is made: collection checks are skipped, and the client is lazy.
    monkeypatch.setattr(Collections, "ensure", lambda self: None)
    with capture_logs() as logs:
        store = ServerStore("http://10.11.12.13:6333", DIM, api_key=KEY)
    try:
        assert store.location == "server:http://10.11.12.13:6333/mempal"
        assert KEY not in repr(store) and KEY not in store.location and KEY not in str(vars(store).get("location"))
        assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["store.insecure_api_key"]
        assert KEY not in repr(logs)
    finally:
        store.close()


def test_errors_never_carry_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    store = ServerStore(":memory:", DIM, backoff_s=0.0)
    store._secret = KEY  # as if a key had been configured

    def leak(*args: Any, **kwargs: Any) -> Any:
        raise UnexpectedResponse(403, "Forbidden", f'{{"status": {{"error": "bad key {KEY}"}}}}'.encode(),
                                 httpx.Headers())

    monkeypatch.setattr(store._client, "count", leak)
    try:
        with pytest.raises(StoreError) as err:
            store.count(Filters())
        assert KEY not in str(err.value)
        assert "HTTP 403 (Forbidden)" in str(err.value)
    finally:
        store.close()


# retries -------------------------------------------------------------------------------------------------------
def test_transient_errors_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    store = ServerStore(":memory:", DIM, backoff_s=0.0)
    real = store._client.count
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ResponseHandlingException(httpx.ConnectError("connection reset"))
        if calls["n"] == 2:
            raise UnexpectedResponse(503, "Service Unavailable", b"", httpx.Headers())
        return real(*args, **kwargs)

    monkeypatch.setattr(store._client, "count", flaky)
    try:
        store.upsert([point(1)])
        assert store.count(Filters()) == 1
        assert calls["n"] == 3
    finally:
        store.close()


def test_client_errors_are_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    store = ServerStore(":memory:", DIM, backoff_s=0.0)
    calls = {"n": 0}

    def bad(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        raise UnexpectedResponse(400, "Bad Request", b'{"status": {"error": "Wrong input"}}', httpx.Headers())

    monkeypatch.setattr(store._client, "count", bad)
    try:
        with pytest.raises(StoreError, match=r"count failed on server::memory:/mempal: HTTP 400 .*Wrong input"):
            store.count(Filters())
        assert calls["n"] == 1
    finally:
        store.close()


def test_closed_store_says_so() -> None:
    store = ServerStore(":memory:", DIM)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.count(Filters())


def test_unknown_point_is_a_store_error() -> None:
    store = ServerStore(":memory:", DIM)
    try:
        with pytest.raises(StoreError, match="no point with id"):
            store.set_dense([(str(uuid.uuid4()), [0.1] * DIM)])
    finally:
        store.close()


# schema --------------------------------------------------------------------------------------------------------
def test_schema_created(tmp_path: Path) -> None:
    store = ServerStore(f"path:{tmp_path}", DIM, collection="c1")
    try:
        info = store._client.get_collection("c1")
        vectors = info.config.params.vectors
        assert isinstance(vectors, dict)
        assert vectors["dense"].size == DIM and vectors["dense"].distance == models.Distance.COSINE
        sparse = info.config.params.sparse_vectors
        assert sparse is not None and sparse["sparse"].modifier == models.Modifier.IDF
        assert store._client.collection_exists("c1_meta")
    finally:
        store.close()


def test_dim_mismatch_asks_for_reindex(tmp_path: Path) -> None:
    ServerStore(f"path:{tmp_path}", DIM).close()
    with pytest.raises(StoreError, match=r"holds 8-d vectors .* 16-d .*mempal reindex"):
        ServerStore(f"path:{tmp_path}", 16)
    # The failed open released the folder: it opens again with the right size.
    ServerStore(f"path:{tmp_path}", DIM).close()


def test_foreign_collection_is_refused(tmp_path: Path) -> None:
    client = QdrantClient(path=str(tmp_path))
    client.create_collection("mempal", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.DOT))
    client.close()
    with pytest.raises(StoreError, match="not a mempal collection"):
        ServerStore(f"path:{tmp_path}", DIM)


def test_folder_in_use_is_a_store_error(tmp_path: Path) -> None:
    first = ServerStore(f"path:{tmp_path}", DIM)
    try:
        with pytest.raises(StoreError, match=r"cannot open .* in use"):
            ServerStore(f"path:{tmp_path}", DIM)
    finally:
        first.close()


# search --------------------------------------------------------------------------------------------------------
def test_query_fused_server_side_rrf() -> None:
    store = ServerStore(":memory:", DIM)
    try:
        pts = [point(i, text=t) for i, t in enumerate([
            "postgres migrations with alembic", "dark mode dashboard", "postgres vacuum schedule",
            "billing api retries", "backups to object storage"])]
        pts.append(point(9, text="postgres replica failover", status=DELETED))
        store.upsert(pts)
        q = BM25.query("postgres")
        fused = store.query_fused(pts[1].dense, q, Filters(), 3)
        ids = [h.id for h in fused]
        # 0 and 2 are in both lists, 1 tops the dense list; 3 and 4 only trail in the dense list.
        assert set(ids) == {pts[0].id, pts[1].id, pts[2].id}
        assert pts[5].id not in ids  # soft-deleted hidden
        assert fused[0].score == pytest.approx(max(h.score for h in fused))
        # RRF scores are 1/(k + rank) sums: at most 2/(60+1) with k = 60.
        assert all(0 < h.score <= 2 / 61 + 1e-9 for h in fused)
        # The top hit of both lists wins.
        both = store.query_fused(pts[0].dense, BM25.query("alembic migrations"), Filters(), 5)
        assert both[0].id == pts[0].id and both[0].payload["content"] == "postgres migrations with alembic"
        # Filters apply to the fused result.
        only = store.query_fused(pts[0].dense, q, Filters(ids=(pts[2].id,)), 5)
        assert [h.id for h in only] == [pts[2].id]
        # One vector: a plain query on it.
        assert store.query_fused(None, q, Filters(), 5)[0].payload["content"].startswith("postgres")
        assert store.query_fused(pts[3].dense, None, Filters(), 1)[0].id == pts[3].id
        assert store.query_fused(None, None, Filters(), 5) == []
    finally:
        store.close()


def test_several_daemons_share_one_collection(tmp_path: Path) -> None:
    url = f"path:{tmp_path}"
    laptop = ServerStore(url, DIM, collection="team")
    laptop.upsert([point(i, machine="laptop") for i in range(3)])
    laptop.set_meta({"model": "m", "dim": DIM})
    laptop.close()
    desktop = ServerStore(url, DIM, collection="team")
    try:
        desktop.upsert([point(i, machine="desktop") for i in range(4)])  # same n, other machine: other ids
        assert desktop.get_meta() == {"model": "m", "dim": DIM}
        assert desktop.count(Filters()) == 7
        assert desktop.facet("machine", Filters()) == {"laptop": 3, "desktop": 4}
        assert desktop.count(Filters(machine=("laptop",))) == 3
        q = BM25.query("postgres deploys")
        dense_hits, sparse_hits = desktop.query(point(0, machine="laptop").dense, q, Filters(machine=("desktop",)), 10)
        assert {h.payload["machine"] for h in dense_hits + sparse_hits} == {"desktop"}
        dense_hits, sparse_hits = desktop.query(point(0, machine="laptop").dense, q, Filters(), 10)
        assert dense_hits[0].payload["machine"] == "laptop"
        assert {h.payload["machine"] for h in sparse_hits} == {"laptop", "desktop"}
        assert {h.payload["user"] for h in sparse_hits} == {"ada"}
        desktop.delete(Filters(machine=("laptop",)))
        assert desktop.facet("machine", Filters()) == {"desktop": 4}
    finally:
        desktop.close()


def test_points_counts_every_point() -> None:
    store = ServerStore(":memory:", DIM)
    try:
        store.upsert([point(1), point(2, status=DELETED)])
        store.set_meta({"model": "m"})
        assert store.points() == 2
    finally:
        store.close()


def test_transient_classification() -> None:
    t = is_transient
    assert t(ResponseHandlingException(httpx.ConnectError("refused")))
    assert t(ResponseHandlingException(httpx.ReadTimeout("slow")))
    assert t(UnexpectedResponse(502, "Bad Gateway", b"", httpx.Headers()))
    assert t(UnexpectedResponse(429, "Too Many Requests", b"", httpx.Headers()))
    assert not t(UnexpectedResponse(404, "Not Found", b"", httpx.Headers()))
    assert not t(ResponseHandlingException(ValueError("bad json")))
    assert not t(ValueError("Collection not found"))
