"""How far a running ``pack`` is: its stage, the done and total of that stage, the texts the model embedded and
the time it took so far. The pack runs on a worker thread and writes these plain attributes; the daemon's loop
reads them for ``pack_progress`` (a stale read costs a frame of a progress bar, never a wrong pack).

Stages, in order: ``reading`` (files), ``embedding`` (the sections' windows: most of a pack's time),
``clustering``, ``summarizing`` (topics; once per shortening pass when the first is over the target),
``pruning`` (with a token budget) and ``writing``.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

_ids = itertools.count(1)


class PackProgress:
    def __init__(self, root: str, run_id: str = "") -> None:
        self.root = root
        self.run_id = run_id or f"pack-{next(_ids)}"
        self.stage = "reading"
        self.done = 0
        self.total = 0
        self.passes = 0  # summarizing passes begun (a pass after the first shortens the pack)
        self.texts = 0  # texts embedded, every stage
        self.started = time.time()

    def begin(self, stage: str, total: int) -> None:
        self.stage, self.done, self.total = stage, 0, max(0, total)
        if stage == "summarizing":
            self.passes += 1

    def step(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n) if self.total else self.done + n

    def embedded(self, n: int) -> None:
        """``n`` more texts went through the model (in any stage: the summaries embed sentences too)."""
        self.texts += n
        if self.stage == "embedding":
            self.step(n)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "dir": self.root, "stage": self.stage, "done": self.done,
                "total": self.total, "pass": self.passes, "texts_embedded": self.texts,
                "elapsed_s": round(time.time() - self.started, 1)}


class PackRuns:
    """The packs running in this daemon (``pack`` calls and pack-mode watches), for ``pack_progress``."""

    def __init__(self) -> None:
        self._runs: dict[str, PackProgress] = {}

    def start(self, root: str, run_id: str = "") -> PackProgress:
        progress = PackProgress(root, run_id)
        self._runs[progress.run_id] = progress
        return progress

    def finish(self, progress: PackProgress) -> None:
        if self._runs.get(progress.run_id) is progress:
            del self._runs[progress.run_id]

    def running(self, run_id: str = "") -> list[dict[str, Any]]:
        return [p.to_dict() for p in list(self._runs.values()) if not run_id or p.run_id == run_id]
