"""Handlers: whole drawers by id, a drawer's timeline, the file gate, and what the hooks injected."""

from __future__ import annotations

from typing import Any

from mempald.features.disclosure import Disclosure
from mempald.features.filegate import FileGate
from mempald.features.token_ledger import TokenLedger
from mempald.rpc.dispatch import Args, Handler


class DisclosureMethods:
    def __init__(self, disclosure: Disclosure, gate: FileGate, ledger: TokenLedger) -> None:
        self.disclosure = disclosure
        self.gate = gate
        self.ledger = ledger

    def handlers(self) -> dict[str, Handler]:
        return {"get": self.get, "timeline": self.timeline, "file_context": self.file_context,
                "hook_injected": self.hook_injected}

    async def get(self, a: Args) -> Any:
        return await self.disclosure.get(a["drawer_id"], a["max_tokens"])

    async def timeline(self, a: Args) -> Any:
        return await self.disclosure.timeline(a["drawer_id"], a["before"], a["after"], a["max_tokens"], a["outline"])

    async def file_context(self, a: Args) -> Any:
        return await self.gate.context(a["path"], a["cwd"], a["session_id"], a["max_tokens"], a["limit"])

    async def hook_injected(self, a: Args) -> Any:
        (tokens,) = await self.disclosure.count([a["text"]])
        await self.ledger.add(f"injected:{a['event']}", tokens)
        return {"tokens": tokens}
