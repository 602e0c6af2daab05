"""The set of watched sources the daemon reads now (rebuilt from the settings when they change)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from mempald.config import Settings
from mempald.sources.exclude import ExcludeFilter
from mempald.sources.places import Found, default_roots
from mempald.sources.roots import Source, resolve_sources, waiting_roots


class SourceSet:
    def __init__(self, settings: Settings, exclude: ExcludeFilter | None = None) -> None:
        self.exclude = exclude  # every source asks it what the user excluded
        self.current: tuple[Source, ...] = self._resolve(settings)
        self.waiting: tuple[Path, ...] = tuple(waiting_roots(settings))  # default roots not created yet
        self.found: tuple[Found, ...] = tuple(default_roots(settings))  # every agent's default root, found or not

    def apply(self, settings: Settings) -> None:
        """Watch what ``settings`` name from now on."""
        self.current = self._resolve(settings)
        self.waiting = tuple(waiting_roots(settings))
        self.found = tuple(default_roots(settings))

    def leads_to_waiting(self, path: Path) -> bool:
        """Is ``path`` a default root not created until now, or a folder on the way to one?"""
        return any(path == root or path in root.parents for root in self.waiting)

    def _resolve(self, settings: Settings) -> tuple[Source, ...]:
        return tuple(replace(s, exclude=self.exclude) for s in resolve_sources(settings))

    def __iter__(self) -> Iterator[Source]:
        return iter(self.current)  # a snapshot: a reload during the loop does not change what it sees

    def keys(self) -> list[str]:
        return [s.key for s in self.current]

    def roots(self) -> list[Path]:
        return [s.root for s in self.current]

    def by_key(self, key: str) -> Source | None:
        return next((s for s in self.current if s.key == key), None)

    def source_for(self, path: Path) -> Source | None:
        """The innermost watched source that owns ``path``; when sources nest, the innermost that reads it."""
        owners = sorted((s for s in self.current if s.owns(path)), key=lambda s: -len(str(s.root)))
        # (issue 45, a narrow workaround until the intake decides nested places itself: the agents' memories'
        # ~/.claude holds Claude Code's ~/.claude/projects, whose source does not read projects/*/memory/*.md)
        if len(owners) > 1:
            return next((s for s in owners if s.wants(path)), owners[0])
        return owners[0] if owners else None
