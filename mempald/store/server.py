"""A Qdrant server or cluster through qdrant-client: the scale-out store, chosen by ``store.url``.

``store.url`` selects the client mode:

- ``http://host:6333`` or ``https://...``: a real server (REST). The API key comes from the environment
  variable named by ``store.api_key_env`` or from ``store.api_key_file``; it is never logged and never appears
  in ``repr``, ``location`` or error messages.
- ``:memory:`` or ``path:/some/dir``: qdrant-client's in-process mode, which speaks the same API. It is meant
  for tests and small setups (it is slow above ~20k points and warns there; the embedded default is Qdrant Edge).

Schema: the same as the embedded store (named vectors ``dense``, cosine, and ``sparse`` with the IDF modifier;
the same payload), plus payload indexes on every filter field. ``machine`` is indexed as a tenant key: several
daemons can share one collection, every point carries ``machine`` and ``user``, and ``Filters.machine`` scopes a
search to one machine (or, left empty, spans all).

Store metadata (the model that filled the collection, its dimension) lives in a small side collection
``<collection>_meta`` holding one point, so counts, scrolls and searches of the main collection never see it.

Every call is blocking (the daemon runs the store in one worker thread). Transient failures (connection refused
or reset, timeouts, HTTP 5xx and 429) are retried with exponential backoff inside each call, up to ``attempts``
times; then a ``StoreError`` says what failed and where. Writes wait for the server to apply them
(``wait=True``) so the ingest cursor only advances after the write is durable; every write is idempotent
(same ids, same vectors), so a retried write is safe.

``server_access`` reads the URL and the API key, opens the client and classifies failures; ``server_models``
converts filters, vectors and points to qdrant-client's models and back.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from qdrant_client import models
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse

from mempald import logs
from mempald.store.base import (
    DENSE,
    SPARSE,
    Fields,
    Filters,
    Hit,
    LateOpen,
    PointData,
    Ranker,
    RankRequest,
    SparseVec,
    StoredPoint,
    StoreError,
    StoreRefused,
    StoreUnreachable,
)
from mempald.store.server_access import describe, is_transient, open_client, parse_url, read_api_key, scrub
from mempald.store.server_models import build_filter, dense_vector, payload_selector, sparse_vector, to_hits, to_stored
from mempald.store.server_schema import Collections

if TYPE_CHECKING:
    from mempald.config import Settings

log = logs.get("store.server")

T = TypeVar("T")

META_SUFFIX = "_meta"
META_ID = "6d656d70-616c-4d65-9461-000000000001"  # fixed UUID of the one point in <collection>_meta
RRF_K = 60  # the same k as the embedded store's fusion
MAX_RETRY_AFTER_S = 10.0
RECONNECT_S = 5.0  # a server away at start: how often a call reaches for it again


class ServerStore(LateOpen):
    """The ``Store`` protocol over qdrant-client (no capability beyond it). See the module docstring."""
    backend = "qdrant-server"

    def __init__(
        self,
        url: str,
        dim: int,
        *,
        collection: str = "mempal",
        api_key: str | None = None,
        timeout_s: float = 10.0,
        shard_number: int = 0,
        replication_factor: int = 0,
        attempts: int = 3,
        backoff_s: float = 0.25,
        ranker: Ranker | None = None,
        wait_for_server: bool = False,
    ) -> None:
        mode, arg = parse_url(url)
        self._ranker = ranker
        if not collection:
            raise StoreError("store.collection: must not be empty")
        self.dim = dim
        self.collection = collection
        self.meta_collection = collection + META_SUFFIX
        self.mode = mode
        self.local = mode != "remote"
        shown = {"remote": arg, "memory": ":memory:", "path": f"path:{arg}"}[mode]
        self.location = f"server:{shown}/{collection}"
        self._secret = api_key or None
        self._attempts = max(1, attempts)
        self._backoff_s = backoff_s
        self._timeout = max(1, math.ceil(timeout_s))
        self._closed = False
        self._client = open_client(mode, arg, location=self.location, api_key=self._secret, timeout=self._timeout)
        self._schema = Collections(self._client, self._schema_call, collection, self.meta_collection, self.location,
                                   dim, self._timeout, shard_number, replication_factor)
        self._schema_attempts = self._attempts
        # A server away when the daemon starts (``wait_for_server``): the daemon starts without it, every call
        # fails at once with ``StoreUnreachable`` (what is read waits in the local outbox), and a call made
        # ``RECONNECT_S`` after the last try reaches for it again. The first time it answers, its collections are
        # made and ``on_connect`` runs (the daemon's start-up checks) before any other call goes through.
        self.connected = False
        self.on_connect: Callable[[], None] | None = None
        self.away = ""  # why the server is not reached yet ("" once it is)
        self._refused = ""  # the server answered but a start-up check refused its collection: every call fails
        self._gate = threading.Lock()
        self._next_try = 0.0
        self._checker: int | None = None  # the thread running ``on_connect`` (its calls go through)
        try:
            self._schema.ensure()
        except StoreUnreachable as exc:
            if not wait_for_server:
                self._client.close()
                raise
            self.away, self._next_try = str(exc), time.monotonic() + RECONNECT_S
            log.warning("store.away_at_start", location=self.location, error=self.away,
                        message=f"starting without the store: it is tried again every {RECONNECT_S:g} s")
            return
        except BaseException:
            self._client.close()
            raise
        self.connected = True
        log.debug("store.opened", location=self.location)

    @classmethod
    def from_settings(cls, settings: Settings, dim: int, ranker: Ranker | None = None,
                      wait_for_server: bool = False) -> ServerStore:
        s = settings.store
        mode, _ = parse_url(s.url)
        key = read_api_key(s) if mode == "remote" else None
        return cls(s.url, dim, collection=s.collection, api_key=key, timeout_s=s.timeout_s,
                   shard_number=s.shard_number, replication_factor=s.replication_factor, ranker=ranker,
                   wait_for_server=wait_for_server)

    def __repr__(self) -> str:
        return f"ServerStore({self.location!r})"

    # plumbing ----------------------------------------------------------------------------------------------
    def _scrub(self, text: str) -> str:
        return scrub(text, self._secret)

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one client call, retrying transient failures with exponential backoff, then ``StoreError``."""
        if not self.connected and self._checker != threading.get_ident():
            self._reach()
        return self._retrying(what, fn, self._attempts)

    def _schema_call(self, what: str, fn: Callable[[], T]) -> T:
        return self._retrying(what, fn, self._schema_attempts)

    def _reach(self) -> None:
        """A server away at start: try it once more (at most every ``RECONNECT_S``); when it answers, make its
        collections and run ``on_connect``. A collection or a check that refuses the store fails every later call
        with that reason (the daemon's log and status say it): nothing is written to a store that would have kept
        the daemon from starting."""
        with self._gate:
            if self.connected:
                return
            if self._refused:
                raise StoreRefused(self._refused)
            now = time.monotonic()
            if now < self._next_try:
                raise StoreUnreachable(self.away)
            self._next_try, self._schema_attempts = now + RECONNECT_S, 1
            try:
                self._schema.ensure()
                if self.on_connect is not None:
                    self._checker = threading.get_ident()
                    self.on_connect()
            except StoreUnreachable as exc:
                self.away = str(exc)
                raise
            except Exception as exc:
                self._refused = self._scrub(f"{exc}")
                log.error("store.refused", location=self.location, error=self._refused)
                raise StoreRefused(self._refused) from None
            finally:
                self._checker, self._schema_attempts = None, self._attempts
            self.connected, self.away = True, ""
            log.info("store.reached", location=self.location)

    def _retrying(self, what: str, fn: Callable[[], T], attempts: int) -> T:
        if self._closed:
            raise StoreError(f"{what}: the store at {self.location} is closed")
        delay = self._backoff_s
        for attempt in range(1, attempts + 1):
            try:
                return fn()
            except Exception as exc:
                transient = is_transient(exc)
                if not transient or attempt == attempts:
                    error = StoreUnreachable if transient else StoreError
                    raise error(self._scrub(self._message(what, exc, attempt, transient))) from None
                wait = delay
                if isinstance(exc, ResourceExhaustedResponse):
                    wait = max(delay, min(float(exc.retry_after_s), MAX_RETRY_AFTER_S))
                log.info("store.retry", what=what, location=self.location, attempt=attempt,
                         error=self._scrub(describe(exc)), wait_s=round(wait, 2))
                time.sleep(wait)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _message(self, what: str, exc: BaseException, attempts: int, transient: bool) -> str:
        cause = describe(exc)
        if not transient:
            return f"{what} failed on {self.location}: {cause}"
        tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
        return (f"cannot reach the Qdrant server for {self.location} ({cause}, {tries}): "
                "check that the server is running and that store.url is right")

    # writes ------------------------------------------------------------------------------------------------
    def upsert(self, points: Sequence[PointData]) -> None:
        if not points:
            return
        structs = []
        for p in points:
            vec: dict[str, Any] = {SPARSE: sparse_vector(p.sparse)}
            if p.dense is not None:
                vec[DENSE] = dense_vector(p.dense)
            structs.append(models.PointStruct(id=p.id, vector=vec, payload=dict(p.payload)))
        self._call("upsert", lambda: self._client.upsert(self.collection, points=structs, wait=True,
                                                          timeout=self._timeout))

    def set_dense(self, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        if not vectors:
            return
        pv = [models.PointVectors(id=pid, vector={DENSE: dense_vector(v)}) for pid, v in vectors]
        self._call("set dense vectors", lambda: self._client.update_vectors(self.collection, points=pv, wait=True,
                                                                             timeout=self._timeout))

    def set_sparse(self, vectors: Sequence[tuple[str, SparseVec]]) -> None:
        if not vectors:
            return
        pv = [models.PointVectors(id=pid, vector={SPARSE: sparse_vector(v)}) for pid, v in vectors]
        self._call("set keyword vectors", lambda: self._client.update_vectors(self.collection, points=pv, wait=True,
                                                                             timeout=self._timeout))

    def clear_dense(self, ids: Sequence[str]) -> None:
        """Drop the dense vector of these points (they stay keyword-searchable until re-embedded)."""
        if not ids:
            return
        sel: list[models.ExtendedPointId] = list(ids)
        self._call("clear dense vectors", lambda: self._client.delete_vectors(
            self.collection, vectors=[DENSE], points=sel, wait=True, timeout=self._timeout))

    def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        if not ids:
            return
        sel: list[models.ExtendedPointId] = list(ids)
        self._call("set payload", lambda: self._client.set_payload(self.collection, payload=dict(payload),
                                                                    points=sel, wait=True, timeout=self._timeout))

    def delete(self, filters: Filters) -> None:
        flt = build_filter(filters)
        if flt is None:
            raise StoreError("refusing to delete without a filter")
        sel = models.FilterSelector(filter=flt)
        self._call("delete", lambda: self._client.delete(self.collection, points_selector=sel, wait=True,
                                                          timeout=self._timeout))

    # reads -------------------------------------------------------------------------------------------------
    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False, with_payload: bool = True,
                 fields: Fields = None) -> list[StoredPoint]:
        if not ids:
            return []
        id_list: list[models.ExtendedPointId] = list(ids)
        payload = payload_selector(fields, True) if with_payload else False
        recs = self._call("retrieve", lambda: self._client.retrieve(
            self.collection, ids=id_list, with_payload=payload, with_vectors=with_vectors,
            timeout=self._timeout))
        return [to_stored(r, with_vectors) for r in recs]

    def query(
        self, dense: Sequence[float] | None, sparse: SparseVec | None, filters: Filters, limit: int, *,
        fields: Fields = None,
    ) -> tuple[list[Hit], list[Hit]]:
        """Both candidate lists in one round trip (a batch of two queries); the caller fuses them."""
        flt, payload = build_filter(filters), payload_selector(fields)
        reqs: list[models.QueryRequest] = []
        if dense is not None:
            reqs.append(models.QueryRequest(query=dense_vector(dense), using=DENSE, filter=flt, limit=limit,
                                            with_payload=payload))
        if sparse is not None and sparse.indices:
            reqs.append(models.QueryRequest(query=sparse_vector(sparse), using=SPARSE, filter=flt, limit=limit,
                                            with_payload=payload))
        if not reqs:
            return [], []
        results = self._call("search", lambda: self._client.query_batch_points(self.collection, requests=reqs,
                                                                               timeout=self._timeout))
        lists = [to_hits(r.points) for r in results]
        dense_hits = lists.pop(0) if dense is not None else []
        sparse_hits = lists.pop(0) if lists else []
        return dense_hits, sparse_hits

    def query_fused(
        self,
        dense: Sequence[float] | None,
        sparse: SparseVec | None,
        filters: Filters,
        limit: int,
        *,
        candidates: int | None = None,
        k: int = RRF_K,
    ) -> list[Hit]:
        """Hybrid search fused on the server: a dense and a sparse prefetch, then Reciprocal Rank Fusion.

        ``candidates`` is how many each prefetch keeps (default: ``max(limit, 100)``). Scores are RRF scores.
        With only one of the two vectors this is a plain query on that one.
        """
        flt = build_filter(filters)
        cand = max(limit, candidates if candidates is not None else 100)
        prefetch: list[models.Prefetch] = []
        if dense is not None:
            prefetch.append(models.Prefetch(query=dense_vector(dense), using=DENSE, filter=flt, limit=cand))
        if sparse is not None and sparse.indices:
            prefetch.append(models.Prefetch(query=sparse_vector(sparse), using=SPARSE, filter=flt, limit=cand))
        if not prefetch:
            return []
        if len(prefetch) == 1:
            only = prefetch[0]
            resp = self._call("search", lambda: self._client.query_points(
                self.collection, query=only.query, using=only.using, query_filter=flt, limit=limit,
                with_payload=True, timeout=self._timeout))
        else:
            fusion = models.RrfQuery(rrf=models.Rrf(k=k))
            resp = self._call("search", lambda: self._client.query_points(
                self.collection, prefetch=prefetch, query=fusion, query_filter=flt, limit=limit, with_payload=True,
                timeout=self._timeout))
        return to_hits(resp.points)

    def scroll(
        self, filters: Filters, limit: int, offset: str | None = None, *, with_vectors: bool = False,
        fields: Fields = None,
    ) -> tuple[list[StoredPoint], str | None]:
        flt, payload = build_filter(filters), payload_selector(fields, True)
        recs, nxt = self._call("scroll", lambda: self._client.scroll(
            self.collection, scroll_filter=flt, limit=limit, offset=offset, with_payload=payload,
            with_vectors=with_vectors, timeout=self._timeout))
        return [to_stored(r, with_vectors) for r in recs], (str(nxt) if nxt is not None else None)

    def count(self, filters: Filters) -> int:
        flt = build_filter(filters)
        res = self._call("count", lambda: self._client.count(self.collection, count_filter=flt, exact=True,
                                                              timeout=self._timeout))
        return int(res.count)

    def facet(self, key: str, filters: Filters, limit: int = 1000) -> dict[str, int]:
        flt = build_filter(filters)
        resp = self._call("facet", lambda: self._client.facet(self.collection, key, facet_filter=flt, limit=limit,
                                                              exact=True, timeout=self._timeout))
        return {str(h.value): int(h.count) for h in resp.hits}

    def points(self) -> int:
        """Every point, soft-deleted ones included (the meta point lives elsewhere)."""
        return self.count(Filters(include_deleted=True))

    # meta --------------------------------------------------------------------------------------------------
    def get_meta(self) -> dict[str, Any]:
        recs = self._call("read store metadata", lambda: self._client.retrieve(
            self.meta_collection, ids=[META_ID], with_payload=True, with_vectors=False, timeout=self._timeout))
        return dict(recs[0].payload or {}) if recs else {}

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        point = models.PointStruct(id=META_ID, vector={}, payload=dict(meta))
        self._call("write store metadata", lambda: self._client.upsert(self.meta_collection, points=[point],
                                                                        wait=True, timeout=self._timeout))

    # lifecycle ---------------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Nothing to do: every write waited for the server to apply it."""

    def rank(self, request: RankRequest) -> list[dict[str, Any]]:
        if self._ranker is None:
            raise StoreError("this store was opened without a ranker: it cannot rank searches")
        return self._ranker(self, request)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._client.close()
        except Exception as exc:
            log.warning("store.close_failed", location=self.location, error=self._scrub(describe(exc)))
