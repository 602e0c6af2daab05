"""One ``cursor-agent`` chat's messages made into exchanges (pure; the store is read by ``cursor_agent``).

A prompt is what the user typed (``cursor_agent_blobs.prompt_of``), its attached files an attachment list; the
answer is the assistant's texts, whole, with one ``[tool: name] argument`` line per tool call and its result
folded in as ``  -> result`` (``cursor_bubbles.tool_lines``); reasoning is dropped. Messages read at an earlier
read (``part == "before"``) are not stored again: their user prompts are still counted, so a repeated prompt keeps
its ``.n`` key (``cursor_bubbles.prompt_key``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mempald.normalize import cursor_agent_blobs as blobs
from mempald.normalize import cursor_bubbles as cb
from mempald.normalize.common import add_unique
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import Exchange

SOURCE_KIND = "cursor"
HELD = "not written yet (read again when it changes)"


class Chat:
    """The exchanges of one chat's messages, given in order (``add``)."""

    def __init__(self, agent: str, cwd: str, title: str, when: str | None, ledger: Ledger) -> None:
        self.agent, self.cwd, self.title, self.when, self.ledger = agent, cwd, title, when, ledger
        self.seen: dict[str, int] = {}
        self.out: list[Exchange] = []
        self.starts: list[int] = []  # the child index each exchange starts at, the ones read before included
        self.stopped = False
        self.held_at = -1
        self._reset()

    def _reset(self) -> None:
        self.key, self.user, self.emit, self.first = "", "", False, -1
        self.parts: list[str] = []
        self.calls: dict[str, tuple[int, dict[str, Any]]] = {}
        self.tools: list[str] = []
        self.files: list[str] = []
        self.attached: list[str] = []
        self.refs: list[str] = []

    def _start(self, n: int, key: str, user: str, emit: bool) -> None:
        self.close()
        self.key, self.user, self.emit, self.first = key, user, emit, n
        self.starts.append(n)

    def close(self) -> None:
        if self.emit and self.key and (self.user or self.parts or self.attached):
            extra = (("attachments", "\n".join(self.attached)),) if self.attached else ()
            self.out.append(Exchange(
                SOURCE_KIND, self.agent, self.key, self.user, "\n\n".join(self.parts), timestamp=self.when,
                agent=SOURCE_KIND, title=self.title or None, position=len(self.starts) - 1, tools=tuple(self.tools),
                files=tuple(self.files), extra=extra))
        self._reset()

    def add(self, ref: str, row: Mapping[str, Any]) -> None:
        """One child of the root: ``row`` has its ``part`` (before / whole / missing), index ``n``, ``value``."""
        n, part, cid = int(row["n"]), str(row["part"]), str(row["key"]).split("@", 1)[0]
        if part == "missing":
            self.hold(n, ref)
            return
        value = row.get("value")
        if part == "before" and isinstance(value, bytes) and not blobs.may_be_user(value):
            self.ledger.folded(ref, self.key, "read at an earlier read")  # (its first bytes only: not a prompt)
            return
        msg = blobs.message_of(value)
        role = msg.get("role") if msg is not None else None
        if part == "before":
            if msg is not None and role == "user":
                prompt, attached = blobs.prompt_of(msg)
                self.cwd = self.cwd or blobs.workspace_of(blobs.text_of(msg.get("content")))
                if prompt or attached:
                    key = cb.prompt_key(self.agent, prompt, self.seen) if prompt else f"{self.agent}:b{cid[:16]}"
                    self._start(n, key, prompt, emit=False)
            self.ledger.folded(ref, self.key, "read at an earlier read")
            return
        if msg is None:
            self.ledger.skipped(ref, "not a message (not JSON)")
        elif role == "user":
            self._user(ref, n, cid, msg)
        elif role == "assistant":
            self._assistant(ref, n, cid, msg)
        elif role == "tool":
            self._tool(ref, msg)
        elif role == "system":
            self.ledger.skipped(ref, "system prompt")
        else:
            self.ledger.skipped(ref, f"unknown role {role!r}")

    def _user(self, ref: str, n: int, cid: str, msg: dict[str, Any]) -> None:
        prompt, attached = blobs.prompt_of(msg)
        self.cwd = self.cwd or blobs.workspace_of(blobs.text_of(msg.get("content")))
        if not prompt and not attached:
            self.ledger.folded(ref, self.key if self.emit else "", "injected context (user_info, rules)")
            self.refs.append(ref)
            return
        key = cb.prompt_key(self.agent, prompt, self.seen) if prompt else f"{self.agent}:b{cid[:16]}"
        self._start(n, key, prompt, emit=True)
        self.attached = attached
        self.ledger.stored(ref, key)
        self.refs.append(ref)

    def _open(self, n: int, cid: str) -> None:
        """An answer with no open exchange of this read (before any prompt): an exchange of its own."""
        if not self.emit:
            self._start(n, f"{self.agent}:b{cid[:16]}", "", emit=True)

    def _assistant(self, ref: str, n: int, cid: str, msg: dict[str, Any]) -> None:
        texts, calls, reasoned = blobs.answer_of(msg)
        if not texts and not calls:
            self.ledger.skipped(ref, "thinking only" if reasoned else "empty message")
            return
        self._open(n, cid)
        self.parts += texts
        for call in calls:
            name, lines, files = cb.tool_lines({"name": call["name"], "params": call["params"]}, self.cwd or None)
            if call["id"]:
                self.calls[call["id"]] = (len(self.parts), call)
            self.parts.append("\n".join(lines))
            add_unique(self.tools, name)
            for f in files:
                add_unique(self.files, f)
        if texts:
            self.ledger.stored(ref, self.key)
        else:
            self.ledger.folded(ref, self.key, "tool call")
        self.refs.append(ref)

    def _tool(self, ref: str, msg: dict[str, Any]) -> None:
        if not self.emit:
            self.ledger.skipped(ref, "tool result with no call read")
            return
        for call_id, result, error in blobs.results_of(msg):
            if call_id in self.calls:
                at, call = self.calls[call_id]
                tool = {"name": call["name"], "params": call["params"], "result": result,
                        "status": "error" if error else ""}
                self.parts[at] = "\n".join(cb.tool_lines(tool, self.cwd or None)[1])
        self.ledger.folded(ref, self.key, "tool result")
        self.refs.append(ref)

    def hold(self, n: int, ref: str) -> None:
        """A child not written yet: the open exchange is held back and read again when the store changes."""
        if self.emit:
            for r in self.refs:
                self.ledger.entries = [a for a in self.ledger.entries if a.ref != r]
                self.ledger.skipped(r, HELD)
            self.held_at = self.first
            self.starts.pop()
            self.emit = False
        else:
            self.held_at = n
        self._reset()
        self.ledger.skipped(ref, HELD)
        self.stopped = True

    def finish(self) -> list[Exchange]:
        self.close()
        return self.out

    def resume(self, cut: int | None) -> tuple[int, int]:
        """Where the next read starts (the child index) and how many exchanges lie before it: the held exchange,
        else the end of a batch cut short, else the last exchange (its answer may still grow)."""
        if self.stopped:
            since = self.held_at
        elif cut is not None:
            since = cut
        else:
            since = self.starts[-1] if self.starts else 0
        return since, sum(1 for s in self.starts if s < since)
