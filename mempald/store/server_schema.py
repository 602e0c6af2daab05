"""A server store's collections: the drawers' collection (created with mempal's schema, or checked to have it, and
its payload indexes made) and the ``<collection>_meta`` side collection that holds the store's metadata.

Every request goes through the store's ``call`` (its retries and error messages); several daemons sharing a server
may create a collection at the same moment, and the loser's failure is not an error.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qdrant_client import QdrantClient, models

from mempald import logs
from mempald.store.base import BOOL_FIELDS, DENSE, FLOAT_FIELDS, KEYWORD_FIELDS, SPARSE, StoreError

log = logs.get("store.server")

Call = Callable[[str, Callable[[], Any]], Any]

TENANT_FIELD = "machine"
# qdrant-client's local mode accepts payload indexes but ignores them, and says so with this warning.
_LOCAL_INDEX_WARNING = "Payload indexes have no effect in the local Qdrant"


@dataclass(frozen=True, slots=True)
class Collections:
    client: QdrantClient
    call: Call  # the store's retrying call: (what, fn) -> fn's result, or StoreError
    collection: str
    meta_collection: str
    location: str
    dim: int
    timeout: int
    shard_number: int = 0
    replication_factor: int = 0

    def ensure(self) -> None:
        """Both collections exist with mempal's schema (``StoreError`` names what is wrong and what to do)."""
        self._ensure_collection()
        self._ensure_meta_collection()

    def _ensure_collection(self) -> None:
        name = self.collection
        if not self.call("check the collection", lambda: self.client.collection_exists(name)):
            try:
                self.call("create the collection", self._create_collection)
                log.info("store.collection_created", location=self.location, dim=self.dim)
            except StoreError:
                # Another daemon sharing the server may have created it first: that is fine.
                if not self.call("check the collection", lambda: self.client.collection_exists(name)):
                    raise
        info = self.call("read the collection", lambda: self.client.get_collection(name))
        self._check_schema(info)
        self._ensure_indexes(set(info.payload_schema or {}))

    def _create_collection(self) -> bool:
        return self.client.create_collection(
            self.collection,
            vectors_config={DENSE: models.VectorParams(size=self.dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            # 0 lets the server choose: one shard per node, one copy. A cluster user sets both in config.
            shard_number=self.shard_number if self.shard_number > 0 else None,
            replication_factor=self.replication_factor if self.replication_factor > 0 else None,
            # Drawers hold verbatim exchanges: keep payloads on disk, indexed fields stay in memory.
            on_disk_payload=True,
            timeout=self.timeout,
        )

    def _check_schema(self, info: models.CollectionInfo) -> None:
        vectors = info.config.params.vectors
        dense = vectors.get(DENSE) if isinstance(vectors, dict) else None
        sparse = (info.config.params.sparse_vectors or {}).get(SPARSE)
        if dense is None or sparse is None:
            raise StoreError(
                f"the collection at {self.location} is not a mempal collection (it needs named vectors "
                f"'{DENSE}' and '{SPARSE}'): set store.collection to another name"
            )
        if dense.size != self.dim:
            raise StoreError(
                f"the collection at {self.location} holds {dense.size}-d vectors but the model makes {self.dim}-d "
                "ones: run `mempal reindex` (or set store.collection to a new name)"
            )
        if sparse.modifier != models.Modifier.IDF:
            raise StoreError(f"the collection at {self.location} has sparse vectors without the IDF modifier: "
                             "set store.collection to a new name and run `mempal migrate`")

    def _ensure_indexes(self, existing: set[str]) -> None:
        wanted: list[tuple[str, models.PayloadSchemaType | models.KeywordIndexParams]] = []
        for name in KEYWORD_FIELDS:
            schema: models.PayloadSchemaType | models.KeywordIndexParams = models.PayloadSchemaType.KEYWORD
            if name == TENANT_FIELD:
                # Tenant-aware storage: points of one machine are kept together; queries spanning every
                # machine still work.
                schema = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
            wanted.append((name, schema))
        wanted += [(name, models.PayloadSchemaType.FLOAT) for name in FLOAT_FIELDS]
        wanted += [(name, models.PayloadSchemaType.BOOL) for name in BOOL_FIELDS]
        for name, schema in wanted:
            if name in existing:
                continue

            def create(name: str = name, schema: Any = schema) -> Any:
                with warnings.catch_warnings():
                    # Local mode (":memory:", "path:") ignores payload indexes and warns on each one;
                    # the call is still made so both modes run the same code.
                    warnings.filterwarnings("ignore", message=_LOCAL_INDEX_WARNING, category=UserWarning)
                    return self.client.create_payload_index(self.collection, name, field_schema=schema, wait=True,
                                                            timeout=self.timeout)

            self.call(f"index the payload field {name!r}", create)

    def _ensure_meta_collection(self) -> None:
        name = self.meta_collection
        if self.call("check the meta collection", lambda: self.client.collection_exists(name)):
            return
        try:
            self.call("create the meta collection",
                      lambda: self.client.create_collection(name, vectors_config={}, timeout=self.timeout))
        except StoreError:
            if not self.call("check the meta collection", lambda: self.client.collection_exists(name)):
                raise
