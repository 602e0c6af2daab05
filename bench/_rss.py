"""The RSS of a daemon and every process under it, sampled while a benchmark runs.

A sum of each process's VmHWM (``Daemon.peak_rss_mb``) misses an index build process that has exited and counts
the peaks of processes that never ran at the same time; this samples the sum ten times a second instead."""

from __future__ import annotations

import threading
from typing import Protocol


class Tree(Protocol):
    def rss_split_mb(self) -> dict[str, float]: ...


class RssSampler:
    """Use as a context: the tree's RSS when entered (``ready``) and its highest sums while running, total and
    anonymous, each its own highest (file-backed pages are the store's mmapped files, which the kernel can
    reclaim)."""

    def __init__(self, tree: Tree, interval_s: float = 0.1) -> None:
        self.tree = tree
        self.interval_s = interval_s
        self.ready = tree.rss_split_mb()
        self.peak = dict(self.ready)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            for k, v in self.tree.rss_split_mb().items():
                self.peak[k] = max(self.peak[k], v)

    def growth(self) -> dict[str, float]:
        """The highest sums over the sums at ``ready`` (MB): ``VmRSS``, ``RssAnon``, ``RssFile``."""
        return {k: round(self.peak[k] - self.ready[k], 1) for k in self.peak}

    def start(self) -> RssSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def __enter__(self) -> RssSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
