"""``mempal exclude add|list|remove``: the ``ingest.exclude`` rules, kept in config and applied at once, and what
was already stored before a rule existed (counted, and forgotten on request).

The rules themselves, and ``.mempalignore``, are ``mempald.sources.exclude``; forgetting is
``mempald.features.forget``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald.config import ConfigError, SettingsRef, read_raw, write_raw
from mempald.errors import InvalidInput, NotFound
from mempald.features.forget import Forgetter
from mempald.intake.admin import SourceAdmin
from mempald.sources.exclude import ExcludeError, ExcludeFilter, Glob


def _edit_rules(change: Callable[[list[str]], list[str]]) -> list[str]:
    raw = read_raw()
    ingest = raw.setdefault("ingest", {})
    current = ingest.get("exclude", [])
    rules = change([str(r) for r in (current if isinstance(current, list) else [current])])
    ingest["exclude"] = rules
    try:
        write_raw(raw)
    except ConfigError as exc:
        raise InvalidInput(str(exc)) from None
    return rules


def covered_by(glob: Glob) -> Callable[[Mapping[str, Any]], bool]:
    """Does ``glob`` cover a stored drawer (its transcript's path, or its session's working directory)?"""
    def covers(p: Mapping[str, Any]) -> bool:
        return glob.matches_path(str(p.get("source_path") or "")) or glob.matches_dir(str(p.get("cwd") or ""))
    return covers


def covered_by_any(exclude: ExcludeFilter) -> Callable[[Mapping[str, Any]], bool]:
    """Does any exclusion in force (config or ``.mempalignore``) cover a stored drawer?"""
    def covers(p: Mapping[str, Any]) -> bool:
        path = str(p.get("source_path") or "")
        return bool(path and exclude.path_rule(Path(path))) or bool(exclude.cwd_rule(str(p.get("cwd") or "")))
    return covers


class Exclusions:
    def __init__(self, settings: SettingsRef, exclude: ExcludeFilter, admin: SourceAdmin, forgetter: Forgetter) -> None:
        self.settings = settings
        self.exclude = exclude
        self.admin = admin
        self.forgetter = forgetter

    async def add(self, pattern: str, *, forget: bool, actor: str) -> dict[str, Any]:
        """Keep ``pattern`` out from now on; count (or, with ``forget``, forget) what is already stored of it."""
        try:
            glob = Glob.parse(pattern)
        except ExcludeError as exc:
            raise InvalidInput(str(exc)) from None
        rules = await anyio.to_thread.run_sync(
            _edit_rules, lambda rs: rs if glob.text in rs else [*rs, glob.text])
        await self.admin.apply_settings()
        stored = await self.forgetter.forget_where(covered_by(glob), glob.text, dry_run=not forget, actor=actor,
                                                   reason=f"excluded by {glob.text}")
        out: dict[str, Any] = {"added": glob.text, "rules": rules, "stored": stored}
        if stored["drawers"] and not forget:
            out["hint"] = (f"{stored['drawers']} drawers already stored are covered by this rule: "
                           f"`mempal exclude add '{glob.text}' --forget` forgets them")
        return out

    async def remove(self, pattern: str) -> dict[str, Any]:
        text = pattern.strip()
        found: list[bool] = []

        def change(rs: list[str]) -> list[str]:
            found.append(text in rs)
            return [r for r in rs if r != text]

        rules = await anyio.to_thread.run_sync(_edit_rules, change)
        if not found or not found[0]:
            raise NotFound(f"{text!r} is not an exclusion rule (see `mempal exclude list`)")
        await self.admin.apply_settings()
        return {"removed": text, "rules": rules,
                "note": "files it kept out are read at the next scan; what was forgotten stays forgotten"}

    async def listing(self, *, stored: bool) -> dict[str, Any]:
        """Every rule in force, what each kept out since the daemon started, and (``stored``) how many drawers
        stored before it existed each covers."""
        report = await anyio.to_thread.run_sync(self.exclude.report)
        if stored:
            counts: dict[str, int] = {}
            for g in self.exclude.globs():
                r = await self.forgetter.forget_where(covered_by(g), g.text, dry_run=True, actor="", reason="")
                counts[g.text] = r["drawers"]
            any_rule = await self.forgetter.forget_where(covered_by_any(self.exclude), "any", dry_run=True,
                                                         actor="", reason="")
            report["stored"] = {"by_rule": counts, "total": any_rule["drawers"]}
        return report

    async def forget_excluded(self, *, dry_run: bool, actor: str, reason: str) -> dict[str, Any]:
        """Forget every stored drawer that an exclusion in force covers (``mempal forget --excluded``)."""
        return await self.forgetter.forget_where(covered_by_any(self.exclude), "excluded", dry_run=dry_run,
                                                 actor=actor, reason=reason or "excluded")


__all__ = ["Exclusions", "covered_by", "covered_by_any"]
