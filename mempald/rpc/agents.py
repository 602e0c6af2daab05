"""Handlers: the cowork inbox, peeking at the partner, what the prompt hook injects, the hooks' settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald.config import SettingsRef
from mempald.errors import InvalidInput
from mempald.features.cowork import MAX_PENDING, CoworkInbox, Drained, Message, peek_partner
from mempald.features.memories import Memories
from mempald.features.recall import PromptContext
from mempald.rpc.dispatch import Args, Handler
from mempald.state.gateway import StateGateway


class AgentMethods:
    def __init__(self, settings: SettingsRef, inbox: CoworkInbox, prompts: PromptContext, memories: Memories,
                 state: StateGateway) -> None:
        self.settings = settings
        self.inbox = inbox
        self.state = state  # (the inbox's tables are in the state database: its calls run on its thread)
        self.prompts = prompts
        self.memories = memories

    def handlers(self) -> dict[str, Handler]:
        return {"cowork_push": self.cowork_push, "cowork_drain": self.cowork_drain,
                "cowork_status": self.cowork_status, "peek_partner": self.peek_partner,
                "prompt_context": self.prompt_context, "hook_config": self.hook_config,
                "compact_summary": self.compact_summary}

    async def cowork_push(self, a: Args) -> Any:
        target, sender, text, cwd = _needed(a, "to"), a.get("from", "user"), a["text"], _needed(a, "cwd")

        def run() -> tuple[Message, int]:
            msg = self.inbox.push(sender=sender, target=target, cwd=cwd, text=text)
            return msg, len(self.inbox.pending(target, msg.cwd))

        msg, pending = await self.state.run(run)
        return {"message": msg.to_dict(), "pending": pending, "limit": MAX_PENDING,
                "delivery": f"at {target}'s next prompt in {msg.cwd}"}

    async def cowork_drain(self, a: Args) -> Any:
        target, cwd, budget = _needed(a, "target"), _needed(a, "cwd"), a["max_chars"]
        res: Drained = await self.state.run(lambda: self.inbox.drain(target, cwd, budget))
        return {"messages": [m.to_dict() for m in res.messages], "remaining": res.remaining}

    async def cowork_status(self, a: Args) -> Any:
        cwd = _needed(a, "cwd")
        return await self.state.run(lambda: self.inbox.status(cwd))

    async def peek_partner(self, a: Args) -> Any:
        cwd, partner, n = _needed(a, "cwd"), _needed(a, "partner"), a["n"]
        src = self.settings.current.sources
        return await anyio.to_thread.run_sync(lambda: peek_partner(
            cwd, partner, n, claude_projects=Path(src.claude_projects).expanduser(),
            codex_sessions=Path(src.codex_sessions).expanduser()))

    async def prompt_context(self, a: Args) -> Any:
        return await self.prompts.for_prompt(
            a["prompt"], cwd=a["cwd"], agent=a["agent"], session_id=a["session_id"], max_chars=a["max_chars"],
            threshold=a["threshold"], max_tokens=a["max_tokens"], budget_ms=a["budget_ms"], wing=a["wing"])

    async def hook_config(self, _a: Args) -> Any:
        settings = self.settings.current
        out = dataclasses.asdict(settings.hooks)
        out["wakeup_budget"] = settings.wakeup.l1_budget
        return out


    async def compact_summary(self, a: Args) -> Any:
        return await self.memories.save_summary(
            a["summary"], session_id=_needed(a, "session_id"), agent=a["agent"], cwd=a["cwd"],
            transcript_path=a["transcript_path"], trigger=a["trigger"])


def _needed(a: Args, name: str) -> str:
    """A parameter every surface fills (the caller's cwd, the partner...): a bare socket call must name it."""
    value = a[name]
    if not value:
        raise InvalidInput(f"missing parameter {name!r}")
    return str(value)
