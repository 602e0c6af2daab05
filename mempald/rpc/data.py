"""Handlers: the user's control over their memory: forget, exclude, export, import, back up."""

from __future__ import annotations

from typing import Any

from mempald.errors import InvalidInput
from mempald.features.backup import Backup
from mempald.features.exclusions import Exclusions
from mempald.features.export import Exporter
from mempald.features.forget import Forgetter, Selection
from mempald.features.importer import Importer
from mempald.rpc.dispatch import Args, Handler
from mempald.state.gateway import StateGateway


class DataMethods:
    def __init__(self, forgetter: Forgetter, exclusions: Exclusions, exporter: Exporter, importer: Importer,
                 backups: Backup, state: StateGateway) -> None:
        self.state = state
        self.forgetter = forgetter
        self.exclusions = exclusions
        self.exporter = exporter
        self.importer = importer
        self.backups = backups

    def handlers(self) -> dict[str, Handler]:
        return {"forget": self.forget, "exclude_add": self.exclude_add, "exclude_list": self.exclude_list,
                "exclude_remove": self.exclude_remove, "export": self.export, "import_drawers": self.import_drawers,
                "backup": self.backup, "audit": self.audit}

    async def audit(self, a: Args) -> Any:
        since, action, limit = a["since"], a["action"], a["limit"]
        entries = await self.state.audit_log(limit, since=since, actions=(action,) if action else ())
        return {"entries": entries, "since": since, "action": action, "limit": limit}

    async def forget(self, a: Args) -> Any:
        actor = a.get("actor", "user")
        if a["excluded"]:
            if a["source"] or a["session"] or a["wing"] or a["reingest"]:
                raise InvalidInput("excluded forgets what the exclusions cover: give it alone (with dry_run)")
            return await self.exclusions.forget_excluded(dry_run=a["dry_run"], actor=actor, reason=a["reason"])
        sel = Selection(source=a["source"] or "", session=a["session"] or "", wing=a["wing"] or "",
                        room=a["room"] or "", before=a["before"])
        return await self.forgetter.forget(sel, dry_run=a["dry_run"], reingest=a["reingest"], actor=actor,
                                           reason=a["reason"], all_machines=a["all_machines"])

    async def exclude_add(self, a: Args) -> Any:
        return await self.exclusions.add(a["pattern"], forget=a["forget"], actor=a.get("actor", "user"))

    async def exclude_list(self, a: Args) -> Any:
        return await self.exclusions.listing(stored=a["stored"])

    async def exclude_remove(self, a: Args) -> Any:
        return await self.exclusions.remove(a["pattern"])

    async def export(self, a: Args) -> Any:
        return await self.exporter.export(a["output"], fmt=a["format"], wing=a["wing"], since=a["since"],
                                          include_deleted=a["include_deleted"], force=a["force"])

    async def import_drawers(self, a: Args) -> Any:
        return await self.importer.import_file(a["path"], actor=a.get("actor", "user"), dry_run=a["dry_run"])

    async def backup(self, a: Args) -> Any:
        return await self.backups.backup(a["path"])
