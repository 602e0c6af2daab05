"""Fault injection for the reliability tests: inert unless ``MEMPAL_FAULTS`` is set.

``MEMPAL_FAULTS`` is a comma-separated list of rules read once when the store is opened:

``upsert_fail=N``
    the next ``N`` drawer upserts fail as a full disk would (``StoreError`` wrapping ``ENOSPC``);
``upsert_fail_while=/path``
    every drawer upsert fails while ``/path`` exists (the test removes it to "free the disk");
``set_dense_fail=N``
    the next ``N`` dense-vector writes fail the same way;
``set_sparse_fail_after=N``
    the first ``N`` keyword-vector writes succeed, every later one fails (a re-encode stopped mid-way).

Only writes are affected; reads, counts and status keep working, as they would on a full disk. Nothing
here runs in production: without the variable ``wrap_store`` returns the store untouched.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from mempald import logs
from mempald.store.base import Store, StoreError

log = logs.get("faults")

ENV = "MEMPAL_FAULTS"


class FaultSpecError(StoreError):
    """``MEMPAL_FAULTS`` names an unknown rule or a bad value (the daemon exits 3 saying so)."""


class Faults:
    """Parsed rules and their remaining counts (thread-safe: the store runs in worker threads)."""

    def __init__(self, spec: str) -> None:
        self.counts: dict[str, int] = {}
        self.while_paths: dict[str, Path] = {}
        self.after: dict[str, int] = {}
        self.injected = 0
        self._lock = threading.Lock()
        for item in filter(None, (s.strip() for s in spec.split(","))):
            name, _, value = item.partition("=")
            if name in ("upsert_fail", "set_dense_fail"):
                try:
                    self.counts[name.removesuffix("_fail")] = int(value)
                except ValueError:
                    raise FaultSpecError(f"{ENV}: {name} needs a count, got {value!r}") from None
            elif name == "set_sparse_fail_after":
                try:
                    self.after["set_sparse"] = int(value)
                except ValueError:
                    raise FaultSpecError(f"{ENV}: {name} needs a count, got {value!r}") from None
            elif name == "upsert_fail_while" and value:
                self.while_paths["upsert"] = Path(value)
            else:
                raise FaultSpecError(f"{ENV}: unknown rule {item!r}")

    def check(self, op: str) -> None:
        """Raise the simulated failure for ``op`` if a rule says so."""
        with self._lock:
            fail = False
            path = self.while_paths.get(op)
            if path is not None and path.exists():
                fail = True
            elif self.counts.get(op, 0) > 0:
                self.counts[op] -= 1
                fail = True
            elif op in self.after:
                fail = self.after[op] <= 0
                self.after[op] -= 0 if fail else 1
            if fail:
                self.injected += 1
        if fail:
            log.warning("fault_injected", op=op)
            raise StoreError(f"{op} failed: {os.strerror(errno.ENOSPC)} (simulated by {ENV})")


class FaultyStore:
    """A store proxy that fails writes on command and passes everything else through."""

    def __init__(self, inner: Store, faults: Faults) -> None:
        self._inner = inner
        self.faults = faults

    def upsert(self, *args: Any, **kwargs: Any) -> Any:
        self.faults.check("upsert")
        return self._inner.upsert(*args, **kwargs)

    def set_dense(self, *args: Any, **kwargs: Any) -> Any:
        self.faults.check("set_dense")
        return self._inner.set_dense(*args, **kwargs)

    def set_sparse(self, *args: Any, **kwargs: Any) -> Any:
        self.faults.check("set_sparse")
        return self._inner.set_sparse(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def wrap_store(store: Store, env: Mapping[str, str] | None = None) -> Store:
    spec = (os.environ if env is None else env).get(ENV, "")
    if not spec:
        return store
    log.warning("faults_enabled", spec=spec)
    return cast(Store, FaultyStore(store, Faults(spec)))
