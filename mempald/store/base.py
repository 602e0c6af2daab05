"""The store contract both backends implement, and the schema they share.

Every call is blocking: the daemon calls them from one worker thread (``gateway.StoreGateway``), never from
the event loop. Points have two named vectors, ``dense`` (cosine) and ``sparse`` (BM25 with the IDF
modifier); a point may exist with only its sparse vector for a short while (keyword-searchable first,
dense vector added by the embedding queue).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

from mempal.methods.drawer import indexed
from mempald.errors import MempalError

DENSE = "dense"
SPARSE = "sparse"
SCHEMA_VERSION = 1
T = TypeVar("T")
C = TypeVar("C")

# Payload fields with an index (filters and facets), as the drawer's declaration (``mempal.methods.drawer``) marks
# them. ``files`` is a list: the file paths the exchange's tool calls touched (a filter matches any of them).
KEYWORD_FIELDS = indexed("keyword")
FLOAT_FIELDS = indexed("float")
BOOL_FIELDS = indexed("bool")
# Soft delete is the keyword ``status`` ("live" | "deleted"): Qdrant Edge 0.9 does not match booleans in
# filters reliably, keywords work on every backend. ``deleted`` (bool) is kept in the payload for people.
LIVE = "live"
DELETED = "deleted"


class StoreError(Exception):
    """The store could not do what was asked (I/O error, unreachable server, schema mismatch)."""


class StoreUnreachable(StoreError):
    """A store on a server did not answer (refused, timed out, overloaded) after its retries: a write may wait in
    the local outbox and be tried again."""


class StoreRefused(StoreError):
    """A store on a server that was away at the daemon's start, refused by a start-up check when it first answered
    (another model filled it, it lost drawers): every call fails with the reason until the daemon restarts."""


Fields = Sequence[str] | None
"""Which payload keys a read returns: ``None`` for the read's default, else only these (cheaper: see
``mempald.search.ranking.RANK_FIELDS``)."""


@dataclass(frozen=True, slots=True)
class SparseVec:
    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class PointData:
    id: str
    payload: Mapping[str, Any]
    sparse: SparseVec
    dense: Sequence[float] | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    score: float
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class StoredPoint:
    id: str
    payload: Mapping[str, Any]
    dense: Sequence[float] | None = None
    sparse: SparseVec | None = None


@dataclass(frozen=True, slots=True)
class Filters:
    """Conditions every backend translates to its own filter. Empty tuples mean 'any'."""

    wing: tuple[str, ...] = ()
    room: tuple[str, ...] = ()
    memory_type: tuple[str, ...] = ()
    source_kind: tuple[str, ...] = ()
    agent: tuple[str, ...] = ()
    session_id: tuple[str, ...] = ()
    source_path: tuple[str, ...] = ()
    exchange_key: tuple[str, ...] = ()
    machine: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # drawers whose exchange touched any of these paths (the file gate)
    since: float | None = None
    until: float | None = None
    position_min: float | None = None
    position_max: float | None = None
    min_importance: float | None = None
    include_deleted: bool = False
    only_deleted: bool = False
    missing_dense: bool = False
    ids: tuple[str, ...] = field(default_factory=tuple)
    any_of: tuple[Filters, ...] = ()  # and at least one of these (OR), e.g. several neighbourhoods at once

    def keyword_conditions(self) -> list[tuple[str, tuple[str, ...]]]:
        pairs = [
            ("wing", self.wing), ("room", self.room), ("memory_type", self.memory_type),
            ("source_kind", self.source_kind), ("agent", self.agent), ("session_id", self.session_id),
            ("source_path", self.source_path), ("exchange_key", self.exchange_key), ("machine", self.machine),
            ("files", self.files),
        ]
        return [(k, v) for k, v in pairs if v]


@dataclass(frozen=True, slots=True)
class RankRequest:
    """One search to rank next to the data: the query's vectors and text, the filters, how many candidates to
    fetch and hits to return. ``options`` belong to the ranker (the store only passes them on)."""

    dense: Sequence[float]
    sparse: SparseVec
    query: str
    filters: Filters
    candidates: int
    limit: int
    options: Any
    now: float  # epoch seconds: "now" for relative date words in the query


# Ranks a request against a store (search code, given to the store by whoever opens it: the store package does
# not know how search ranks). Hits are JSON-ready dicts.
Ranker = Callable[["Store", RankRequest], list[dict[str, Any]]]


class Store(Protocol):
    """What the daemon needs from a backend. Implementations: ``edge.EdgeStore`` (in the daemon through
    ``hosted.HostedEdgeStore``, its child process), ``server.ServerStore``. Every call is blocking; the daemon
    makes them through ``gateway.StoreGateway``. What some backends can do beyond it is declared below
    (capabilities)."""

    backend: str  # the backend's name in messages ("qdrant-edge", "qdrant-server")
    location: str

    def upsert(self, points: Sequence[PointData]) -> None: ...

    def set_dense(self, vectors: Sequence[tuple[str, Sequence[float]]]) -> None: ...

    def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None: ...

    def clear_dense(self, ids: Sequence[str]) -> None: ...

    def set_sparse(self, vectors: Sequence[tuple[str, SparseVec]]) -> None:
        """Replace the keyword vector of these points (payload and dense vector untouched)."""
        ...

    def retrieve(self, ids: Sequence[str], *, with_vectors: bool = False, with_payload: bool = True,
                 fields: Fields = None) -> list[StoredPoint]:
        """These points (missing ids left out); without ``with_payload`` their payloads are empty (cheaper), with
        ``fields`` they hold only those keys."""
        ...

    def query(
        self, dense: Sequence[float] | None, sparse: SparseVec | None, filters: Filters, limit: int, *,
        fields: Fields = None,
    ) -> tuple[list[Hit], list[Hit]]:
        """The dense and the keyword candidates, in one batch; hits hold every payload key but the indexing
        ``context``, or only ``fields``."""
        ...

    def scroll(
        self, filters: Filters, limit: int, offset: str | None = None, *, with_vectors: bool = False,
        fields: Fields = None,
    ) -> tuple[list[StoredPoint], str | None]: ...

    def count(self, filters: Filters) -> int: ...

    def facet(self, key: str, filters: Filters, limit: int = 1000) -> dict[str, int]: ...

    def rank(self, request: RankRequest) -> list[dict[str, Any]]:
        """The ranked hits of a search, computed where the data is (the ranker the store was opened with)."""
        ...

    def delete(self, filters: Filters) -> None: ...

    def get_meta(self) -> dict[str, Any]: ...

    def set_meta(self, meta: Mapping[str, Any]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


# Capabilities: what some backends can do beyond the ``Store`` contract. A backend declares each one it has by
# subclassing its protocol (``class EdgeStore(Store, Snapshots)``); the daemon asks for one through its
# ``Capability`` (``SNAPSHOTS.of(store)``, ``SNAPSHOTS.required(store)``), never by probing the object, so a backend
# that lacks one answers ``StoreLacks`` naming itself and the operation instead of failing somewhere later.
class Snapshots(Protocol):
    """Copies its live data, consistent, into a new folder (``mempal backup``; call it with nothing else in
    between: ``StoreGateway.exclusive``)."""

    def snapshot_to(self, dst: Path) -> None: ...


class Exclusive(Protocol):
    """Runs a blocking job on the store's thread with nothing in between (``StoreGateway.exclusive``)."""

    def __call__(self, job: Callable[[], T], *, writes: bool = False) -> Awaitable[T]: ...


class IndexRebuild(Protocol):
    """Its indexes are rebuilt in another process while the daemon runs and the built shard swapped in
    (``store.maintenance``); ``pids``: the store processes serving it now."""

    @property
    def pids(self) -> list[int]: ...

    def index_state(self) -> tuple[int, int]:
        """(points, points whose vectors are not indexed yet)."""
        ...

    @property
    def written_since_build(self) -> int:
        """Points written since the last index build began (they sit in the shard's unbuilt segment)."""
        ...

    def misplaced_indexes(self) -> list[str]: ...

    async def rebuild(self, exclusive: Exclusive, *, backfill: bool = False) -> dict[str, Any]:
        """Build and swap in; ``backfill``: a build while a backfill is written (it merges fewer segments)."""
        ...


class LateOpen(Protocol):
    """Opens before it answers (a server away at the daemon's start): ``connected`` says whether it has answered
    yet, and ``on_connect`` (the daemon's start-up checks) runs at its first answer, before any other call."""

    connected: bool
    on_connect: Callable[[], None] | None


class DamageReport(Protocol):
    """Says why its files look damaged (``""`` while nothing says so), for ``status``."""

    damaged: str


class StoreLacks(MempalError):
    """The store backend in use cannot do this operation at all (retrying will not help)."""

    def __init__(self, backend: str, operation: str, instead: str) -> None:
        super().__init__(f"store backend {backend!r} cannot {operation}" + (f": {instead}" if instead else ""),
                         {"backend": backend, "operation": operation})


class Capability(Generic[C]):
    """One capability, asked of a backend (not of a wrapper around it: the guard and faults only pass calls on)."""

    def __init__(self, protocol: object, operation: str, instead: str = "") -> None:
        self.protocol = protocol  # (typed ``object``: a protocol class is not a concrete ``type[C]``)
        self.operation = operation
        self.instead = instead

    def of(self, store: Store) -> C | None:
        """``store`` as this capability when its backend declares it, else None."""
        return cast(C, store) if self.protocol in type(store).__mro__ else None

    def required(self, store: Store) -> C:
        """``store`` as this capability, else ``StoreLacks`` naming the backend and the operation."""
        found = self.of(store)
        if found is None:
            raise StoreLacks(store.backend, self.operation, self.instead)
        return found


SNAPSHOTS = Capability[Snapshots](Snapshots, "snapshot", "back up a server's collection with Qdrant's own snapshots, "
                                  "or copy its drawers with `mempal export`")
INDEX_REBUILD = Capability[IndexRebuild](IndexRebuild, "rebuild its index in the background")
DAMAGE_REPORT = Capability[DamageReport](DamageReport, "report damaged files")
LATE_OPEN = Capability[LateOpen](LateOpen, "open before it answers")
