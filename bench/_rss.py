"""The RSS of a daemon and every process under it, sampled while a benchmark runs.

A sum of each process's VmHWM (``Daemon.peak_rss_mb``) misses an index build process that has exited and counts
the peaks of processes that never ran at the same time; this samples the sum ten times a second instead."""

from __future__ import annotations

import threading
from typing import Protocol

KEYS = ("VmRSS", "RssAnon", "RssFile")


class Tree(Protocol):
    def rss_by_process(self) -> list[tuple[str, dict[str, float]]]: ...


def _sum(procs: list[tuple[str, dict[str, float]]], skip: str = "") -> dict[str, float]:
    return {k: round(sum(v[k] for role, v in procs if role != skip), 1) for k in KEYS}


class RssSampler:
    """Use as a context: the tree's RSS when entered (``ready``) and its highest sums while running, total and
    anonymous, each its own highest (file-backed pages are the store's mmapped files, which the kernel can
    reclaim); where the highest total was, by process role (``at_peak``); and the highest total of the other
    processes while an index build ran (``outside_builds``)."""

    def __init__(self, tree: Tree, interval_s: float = 0.1) -> None:
        self.tree = tree
        self.interval_s = interval_s
        procs = tree.rss_by_process()
        self.ready = _sum(procs)
        self.ready_by_role = self._by_role(procs)
        self.peak = dict(self.ready)
        self.peak_by_role = dict(self.ready_by_role)
        self.outside_builds = self.ready["VmRSS"]
        self.outside_by_role = dict(self.ready_by_role)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _by_role(procs: list[tuple[str, dict[str, float]]]) -> dict[str, tuple[float, int]]:
        """Each role's summed RSS and how many processes had it."""
        out: dict[str, tuple[float, int]] = {}
        for role, v in procs:
            mb, n = out.get(role, (0.0, 0))
            out[role] = (round(mb + v["VmRSS"], 1), n + 1)
        return out

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            procs = self.tree.rss_by_process()
            total = _sum(procs)
            if total["VmRSS"] > self.peak["VmRSS"]:
                self.peak_by_role = self._by_role(procs)
            for k, v in total.items():
                self.peak[k] = max(self.peak[k], v)
            outside = _sum(procs, skip="index build")["VmRSS"]
            if outside > self.outside_builds:
                self.outside_builds = outside
                self.outside_by_role = self._by_role([p for p in procs if p[0] != "index build"])

    def growth(self) -> dict[str, float]:
        """The highest sums over the sums at ``ready`` (MB): ``VmRSS``, ``RssAnon``, ``RssFile``."""
        return {k: round(self.peak[k] - self.ready[k], 1) for k in self.peak}

    def growth_outside_builds(self) -> float:
        """The highest RSS of every process but an index build's, over the tree's at ``ready`` (MB)."""
        return round(self.outside_builds - self.ready["VmRSS"], 1)

    def at_peak(self, builds: bool = True) -> str:
        """Where the highest total was (``builds``: with the index build processes, else without): each role's
        RSS then, and its growth past ``ready`` where it ran then."""
        parts = []
        by_role = self.peak_by_role if builds else self.outside_by_role
        for role, (mb, n) in sorted(by_role.items(), key=lambda kv: -kv[1][0]):
            before = self.ready_by_role.get(role)
            parts.append(f"{role}{f' x{n}' if n > 1 else ''} {mb:.0f}"
                         + (f" (+{mb - before[0]:.0f})" if before is not None else ""))
        return ", ".join(parts)

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
