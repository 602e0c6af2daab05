"""Aider chat history (``<repo>/.aider.chat.history.md``), SCHEMAS.md section 6.2.

Markdown, appended to. Each run starts with ``# aider chat started at YYYY-MM-DD HH:MM:SS``: one session per
run (session_id is that start time in ISO form, local time as aider wrote it, no zone; a second run started in
the same second gets ``~2``). Inside a run:

- ``#### `` lines are the human's input; consecutive ``#### `` lines are one multi-line prompt.
- ``#### /code X`` (also ``/ask``, ``/architect``, ``/context``) is the prompt ``X``; aider echoes it as
  ``#### X`` right after, and that echo is not a second prompt.
- Other slash commands (``/commit msg``, ``/add f``, ``/run cmd``...) are not prompts: they become
  ``[aider: /commit msg]`` lines in the current exchange, the command name listed in ``tools``.
- ``> `` lines are aider's own output. The few that record what happened are kept as short lines
  (``[aider] Applied edit to src/App.js``, ``[aider] Commit c339495 ...``; tools ``edit``/``commit``); the rest
  (token counts, confirmations, retries, stack traces) is dropped.
- Everything else is the assistant's answer, verbatim (SEARCH/REPLACE blocks included).

The key is ``<session>#<n>`` with n the prompt's index in its run, stable as the file grows.
"""

from __future__ import annotations

import re

from mempald.normalize.model import Exchange, strip_injected

SOURCE_KIND = "aider"
AGENT = "aider"

_HEADER = re.compile(r"^# aider chat started at (.+?)\s*$")
_PROMPT_CMDS = frozenset({"/code", "/ask", "/architect", "/context"})
_KEEP_OUTPUT = (
    (re.compile(r"^Applied edit to (.+)$"), "edit"),
    (re.compile(r"^Commit [0-9a-f]{7,} .*$"), "commit"),
    (re.compile(r"^Did not apply edit to .*$"), "edit-failed"),
    (re.compile(r"^The LLM did not conform to the edit format\.?$"), "edit-failed"),
)
_MAX_LINE = 300


def _iso(stamp: str) -> str:
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})", stamp)
    return f"{m.group(1)}T{m.group(2)}" if m else stamp


class _Builder:
    def __init__(self) -> None:
        self.out: list[Exchange] = []
        self.session = ""
        self.index = 0
        self.user: str | None = None
        self.reply: list[str] = []
        self.tools: list[str] = []
        self.echo: str | None = None
        self.runs: dict[str, int] = {}

    def new_session(self, stamp: str) -> None:
        self.close()
        session = _iso(stamp)
        self.runs[session] = self.runs.get(session, 0) + 1
        # two runs started in the same second stay apart: the second is "<start>~2"
        self.session = session if self.runs[session] == 1 else f"{session}~{self.runs[session]}"
        self.index = 0

    def close(self) -> None:
        if self.user is None:
            return
        self.out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=self.session, key=f"{self.session}#{self.index}",
            user=self.user, assistant="\n".join(self.reply).strip(), timestamp=self.session.split("~")[0] or None,
            agent=AGENT, position=self.index, tools=tuple(self.tools),
        ))
        self.index += 1
        self.user = None
        self.reply = []
        self.tools = []
        self.echo = None

    def prompt(self, text: str) -> None:
        text = strip_injected(text).strip()
        if not text:
            self.close()  # only injected context: its answer is dropped with it
            return
        if self.echo is not None and text == self.echo and not "\n".join(self.reply).strip():
            self.echo = None  # aider repeats "/code X" as "X": the same prompt
            return
        if text.startswith("/"):
            cmd, _, arg = text.partition(" ")
            cmd = cmd.lower()
            arg = arg.strip()
            if cmd in _PROMPT_CMDS and arg:
                self.open(arg)
                self.echo = arg
                return
            if self.user is not None:
                self.tools.append(cmd)
                self.reply.append(f"[aider: {' '.join(text.split())[:_MAX_LINE]}]")
            return
        self.open(text)

    def open(self, text: str) -> None:
        self.close()
        self.user = text

    def output(self, line: str) -> None:
        if self.user is None:
            return
        for pattern, tool in _KEEP_OUTPUT:
            if pattern.match(line):
                self.reply.append(f"[aider] {line[:_MAX_LINE]}")
                if tool not in self.tools:
                    self.tools.append(tool)
                return

    def text(self, line: str) -> None:
        if self.user is not None:
            self.echo = None if line.strip() else self.echo
            self.reply.append(line)


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """Exchanges of an aider chat history. Never raises: anything unrecognised is assistant text or dropped."""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    b = _Builder()
    prompt_lines: list[str] | None = None
    for raw in text.split("\n"):
        line = raw.rstrip()
        if line.startswith("#### ") or line == "####":
            if prompt_lines is None:
                prompt_lines = []
            prompt_lines.append(line[5:])
            continue
        if prompt_lines is not None:
            b.prompt("\n".join(prompt_lines))
            prompt_lines = None
        header = _HEADER.match(line)
        if header:
            b.new_session(header.group(1))
        elif line.startswith("> ") or line == ">":
            b.output(line[2:].strip())
        else:
            b.text(line)
    if prompt_lines is not None:
        b.prompt("\n".join(prompt_lines))
    b.close()
    return b.out
