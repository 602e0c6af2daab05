"""Handlers: rules that hold (add, list, remove, test, the hook's check, suggestions)."""

from __future__ import annotations

import json
from typing import Any

from mempald.errors import InvalidInput
from mempald.features.rules import Rules
from mempald.rpc.dispatch import Args, Handler


class RuleMethods:
    def __init__(self, rules: Rules) -> None:
        self.rules = rules

    def handlers(self) -> dict[str, Handler]:
        return {"rule_add": self.add, "rule_list": self.list, "rule_remove": self.remove, "rule_test": self.test,
                "rule_check": self.check, "rule_suggestions": self.suggestions, "rule_accept": self.accept,
                "rule_dismiss": self.dismiss}

    async def add(self, a: Args) -> Any:
        return await self.rules.add(a["text"], tool=a["tool"], match=a["match"], decision=a["decision"],
                                    wing=a["wing"], force=a["force"], actor=a.get("actor", "user") or "user")

    async def list(self, a: Args) -> Any:
        return await self.rules.list_rules(a["wing"])

    async def remove(self, a: Args) -> Any:
        return await self.rules.remove(a["rule_id"], actor=a.get("actor", "user") or "user")

    async def test(self, a: Args) -> Any:
        return await self.rules.test(a["command"], tool=a["tool"], cwd=a["cwd"], wing=a["wing"])

    async def check(self, a: Args) -> Any:
        try:
            tool_input = json.loads(a["tool_input"])
        except ValueError as exc:
            raise InvalidInput(f"tool_input is not JSON: {exc}") from None
        return await self.rules.check(a["tool_name"], tool_input, cwd=a["cwd"], wing=None)

    async def suggestions(self, a: Args) -> Any:
        return await self.rules.suggestions(scan=a["scan"], status=a["status"])

    async def accept(self, a: Args) -> Any:
        edits = {k: a[k] for k in ("text", "tool", "match", "decision", "wing")}
        return await self.rules.accept(a["suggestion_id"], edits=edits, force=a["force"],
                                       actor=a.get("actor", "user") or "user")

    async def dismiss(self, a: Args) -> Any:
        return await self.rules.dismiss(a["suggestion_id"], actor=a.get("actor", "user") or "user")
