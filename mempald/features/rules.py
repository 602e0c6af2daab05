"""Rules that hold: the user's always / never, checked before an agent's tool runs (``mempal rule ...``).

A rule names a tool (``Bash``, ``Edit|Write``, ``*``), a pattern matched against the call's input (the shell
command, else the file or path it touches: ``rule_check.subject``), a decision (``ask``: the host asks the user
first; ``deny``: the call is refused) and a scope (a wing, or every wing). Only the user makes one: ``rule add``,
or ``rule accept`` of a suggestion (``rule suggestions``: always / never sentences of stored prompts, each with a
draft and the drawer it cites). Nothing blocks until then.

The PreToolUse hook asks ``rule_check`` with the tool's name and input and the session's cwd: the accepted rules
of the cwd's wing and the global ones are matched (precompiled, each match within its time limit) and the one
that fires (a ``deny`` before an ``ask``) comes back with a one-line reason naming the rule and its source.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio.to_thread

from mempald.errors import InvalidInput, NotFound
from mempald.features.rule_book import RULE_FIELDS, RuleBook, new_rule_id
from mempald.features.rule_check import Compiled, check_pattern, check_tool, compile_rules, decide
from mempald.features.rule_suggest import drafts, suggestion_id, user_turn
from mempald.normalize.wings import normal_wing, wing_from_cwd
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway

MAX_TEXT = 500
SCAN_FIELDS = ("text", "wing", "chunk_index", "kind", "session_id")
MAX_REASON = 300


class RuleChanges(Protocol):
    """Told of every rule added, accepted, replaced or removed here (the sync's outbox: docs/SYNC.md)."""

    async def rule_changed(self, rule_id: str, *, removed: bool, by: str) -> None: ...


class Rules:
    def __init__(self, state: StateGateway, store: StoreGateway) -> None:
        self.state = state
        self.store = store
        self.changes: RuleChanges | None = None  # (None: nobody; the sync when the daemon runs)
        self.book = RuleBook(state.db.conn, state.db.lock)
        self.book.ensure_schema()
        self._compiled: list[Compiled] | None = None

    async def _rules(self) -> list[Compiled]:
        if self._compiled is None:
            self._compiled = compile_rules(await self.state.run(self.book.rules))
        return self._compiled

    def _changed(self) -> None:
        self._compiled = None

    # the user's rules ----------------------------------------------------------------------------------
    async def add(self, text: str, *, tool: str, match: str, decision: str, wing: str | None, force: bool,
                  actor: str, source: str = "user", drawer_id: str = "") -> dict[str, Any]:
        text = " ".join(text.split())
        if not text:
            raise InvalidInput("the rule's text is empty: say what the rule is for (it is shown when it fires)")
        if len(text) > MAX_TEXT:
            raise InvalidInput(f"the rule's text is {len(text)} characters long; at most {MAX_TEXT}")
        if decision not in ("ask", "deny"):
            raise InvalidInput(f"a rule's decision is ask or deny, not {decision!r}")
        tool = check_tool(tool)
        check_pattern(match, force=force)
        rule = {"id": new_rule_id(), "text": text, "tool": tool, "pattern": match, "decision": decision,
                "wing": normal_wing(wing) if wing else "", "source": source, "drawer_id": drawer_id,
                "forced": bool(force), "created_at": time.time()}
        await self.state.run(lambda: self.book.put_rule(rule))
        self._changed()
        await self.state.audit(actor, "rule_add", str(rule["id"]), text, tool=tool, pattern=match, decision=decision,
                               wing=rule["wing"], source=source)
        await self._tell(str(rule["id"]), removed=False, by=actor)
        return {"rule": rule}

    async def _tell(self, rule_id: str, *, removed: bool, by: str) -> None:
        if self.changes is not None:
            await self.changes.rule_changed(rule_id, removed=removed, by=by)

    async def list_rules(self, wing: str | None = None) -> dict[str, Any]:
        rules = await self.state.run(self.book.rules)
        if wing:
            w = normal_wing(wing)
            rules = [r for r in rules if r["wing"] in ("", w)]
        return {"rules": rules, "count": len(rules)}

    async def remove(self, rule_id: str, *, actor: str) -> dict[str, Any]:
        if not await self.state.run(lambda: self.book.remove_rule(rule_id)):
            raise NotFound(f"no rule {rule_id!r} (`mempal rule list` shows their ids)")
        self._changed()
        await self.state.audit(actor, "rule_remove", rule_id)
        await self._tell(rule_id, removed=True, by=actor)
        return {"removed": rule_id}

    async def remove_synced(self, rule_id: str, *, by: str) -> bool:
        """A removal another machine made (a sync segment's record): False when the rule is not here."""
        if not await self.state.run(lambda: self.book.remove_rule(rule_id)):
            return False
        self._changed()
        await self.state.audit(f"sync:{by}" if by else "sync", "rule_remove", rule_id)
        return True

    # checking ------------------------------------------------------------------------------------------
    async def check(self, tool_name: str, tool_input: Any, *, cwd: str | None, wing: str | None) -> dict[str, Any]:
        """The decision for one tool call: ``{}`` when no rule fires."""
        scope = normal_wing(wing) if wing else wing_from_cwd(cwd, default="")
        rules = await self._rules()
        # in a worker thread: a slow match (each within its time limit) never holds up the daemon's other requests
        verdict = await anyio.to_thread.run_sync(decide, rules, tool_name, tool_input, scope)
        out: dict[str, Any] = {"wing": scope}
        if verdict.timed_out:
            out["timed_out"] = list(verdict.timed_out)
        if verdict.rule is None:
            return out
        rule = verdict.rule
        return {**out, "decision": rule["decision"], "rule": dict(rule), "reason": reason(rule)}

    async def test(self, command: str, *, tool: str, cwd: str | None, wing: str | None) -> dict[str, Any]:
        """``rule test 'COMMAND'``: which rule would fire for this command (as ``tool``'s input)."""
        key = "command" if tool in ("Bash", "shell") else "file_path"
        res = await self.check(tool, {key: command}, cwd=cwd, wing=wing)
        return {"command": command, "tool": tool, **res, "fires": "rule" in res}

    # suggestions ---------------------------------------------------------------------------------------
    async def suggestions(self, *, scan: bool, status: str) -> dict[str, Any]:
        """Find new always / never instructions in stored prompts (``scan``), then the suggestions kept."""
        found: list[dict[str, Any]] = []
        scanned = 0
        if scan:
            async for page in self._exchange_pages():
                for p in page:
                    if p.payload.get("chunk_index") not in (0, None) or p.payload.get("kind") != "exchange":
                        continue
                    scanned += 1
                    prompt = user_turn(str(p.payload.get("text") or ""))
                    for d in drafts(prompt):
                        found.append({"id": suggestion_id(p.id, d.sentence), "drawer_id": p.id,
                                      "wing": str(p.payload.get("wing") or ""), "sentence": d.sentence,
                                      "tool": d.tool, "pattern": d.pattern, "decision": d.decision})
        new = await self.state.run(lambda: self.book.add_suggestions(found)) if found else 0
        kept = await self.state.run(lambda: self.book.suggestions(None if status == "all" else status))
        return {"suggestions": kept, "count": len(kept), "scanned": scanned, "new": new}

    async def _exchange_pages(self) -> Any:
        offset: str | None = None
        while True:
            page, offset = await self.store.scroll(Filters(), 500, offset, fields=SCAN_FIELDS)
            if page:
                yield page
            if offset is None:
                return

    async def accept(self, sid: str, *, edits: Mapping[str, Any], force: bool, actor: str) -> dict[str, Any]:
        s = await self.state.run(lambda: self.book.suggestion(sid))
        if s is None:
            raise NotFound(f"no suggestion {sid!r} (`mempal rule suggestions` lists them)")
        if s["status"] == "accepted":
            raise InvalidInput(f"suggestion {sid} is already accepted as rule {s['rule_id']}")

        def pick(key: str, default: Any) -> Any:
            value = edits.get(key)
            return default if value is None or value == "" else value

        wing = None if edits.get("wing") == "*" else pick("wing", s["wing"])
        made = await self.add(pick("text", s["sentence"]), tool=pick("tool", s["tool"]),
                              match=pick("match", s["pattern"]), decision=pick("decision", s["decision"]),
                              wing=wing, force=force, actor=actor, source="suggestion", drawer_id=s["drawer_id"])
        await self.state.run(lambda: self.book.settle(sid, "accepted", made["rule"]["id"]))
        return {**made, "suggestion": sid}

    async def dismiss(self, sid: str, *, actor: str) -> dict[str, Any]:
        if await self.state.run(lambda: self.book.suggestion(sid)) is None:
            raise NotFound(f"no suggestion {sid!r} (`mempal rule suggestions` lists them)")
        await self.state.run(lambda: self.book.settle(sid, "dismissed"))
        await self.state.audit(actor, "rule_dismiss", sid)
        return {"dismissed": sid}

    # export / import -----------------------------------------------------------------------------------
    async def exported(self) -> list[dict[str, Any]]:
        return await self.state.run(self.book.rules)

    async def import_rule(self, rec: Mapping[str, Any], *, dry_run: bool, notify: bool = True) -> str:
        """A rule of an export or of a sync segment, checked as when it was added (a forced one stays forced):
        "added", "replaced" or "unchanged" (``InvalidInput`` when it may not be kept). ``notify``: a rule that
        changed here travels to the other machines (not one that came from them)."""
        if len(str(rec.get("text", ""))) > MAX_TEXT:
            raise InvalidInput(f"the rule's text is longer than {MAX_TEXT} characters")
        check_tool(str(rec.get("tool", "")))
        check_pattern(str(rec.get("pattern", "")), force=bool(rec.get("forced")))
        if rec.get("decision") not in ("ask", "deny") or not str(rec.get("text", "")).strip():
            raise InvalidInput("a rule needs a text and a decision of ask or deny")
        if not isinstance(rec.get("id"), str) or not rec["id"].strip():
            raise InvalidInput("a rule needs an id")
        rule = {k: rec[k] for k in RULE_FIELDS if rec.get(k) is not None}
        rule["wing"] = normal_wing(str(rule.get("wing") or "")) if rule.get("wing") else ""
        rule.setdefault("created_at", time.time())
        if dry_run:
            old = await self.state.run(lambda: self.book.rule(str(rule["id"])))
            if old is None:
                return "added"
            return "unchanged" if all(old.get(k) == rule.get(k) for k in rule) else "replaced"
        outcome = await self.state.run(lambda: self.book.put_rule(rule))
        self._changed()
        if notify and outcome != "unchanged":
            await self._tell(str(rule["id"]), removed=False, by="import")
        return outcome


def reason(rule: Mapping[str, Any]) -> str:
    """One short line: the rule, its scope and where it came from."""
    when = datetime.fromtimestamp(float(rule.get("created_at") or 0), UTC).strftime("%Y-%m-%d")
    source = (f"accepted from drawer {str(rule['drawer_id'])[:8]}" if rule.get("drawer_id")
              else f"added by the user {when}")
    scope = f"wing {rule['wing']}" if rule.get("wing") else "every wing"
    text = f"mempal rule {rule['id']} ({scope}, {source}): {rule['text']}"
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"
