"""Aider chat history (``<repo>/.aider.chat.history.md``), SCHEMAS.md section 6.2.

Markdown, appended to. Each run starts with ``# aider chat started at YYYY-MM-DD HH:MM:SS``: one session per
run (session_id is that start time in ISO form, local time as aider wrote it, no zone; a second run started in
the same second gets ``~2``). Inside a run:

- ``#### `` lines are the human's input; consecutive ``#### `` lines are one multi-line prompt. Aider 0.50-0.52
  wrote a multi-line prompt as ``#### `` lines separated by blank lines (an empty line of the paste is a bare
  ``####``): one-line ``####`` blocks with only blank lines between them are one prompt, however long, unless
  the next one starts an aider command, is ``<blank>`` or is the echo of a ``/code X`` (a block of several
  lines is the newer shape, a whole input). ``#### <blank>`` is an empty input (skipped).
- ``#### /help QUESTION`` is the prompt (kept as typed, tool ``/help``). Aider then writes the prompt it built
  for the model as more ``#### `` lines (``# Question: ...``, ``# Relevant docs:``, ``<doc>`` ... ``</doc>``,
  hundreds of lines): that is context, folded into the ``/help`` exchange, never a prompt; the answer is kept.
- ``#### Add file to the chat? (Y)es/(N)o... [Yes]: all`` is aider echoing the answer to one of its own
  questions (0.86): folded into the exchange in progress, never a prompt.
- In architect mode aider logs the architect's reply again as ``#### `` lines (the prompt it hands to the
  editor model): a block whose lines repeat the reply since the prompt is that handoff, folded into the
  exchange, never a second prompt.
- ``#### /code X`` (also ``/ask``, ``/architect``, ``/context``) is the prompt ``X``; aider echoes it as
  ``#### X`` right after, and that echo is not a second prompt.
- Other slash commands (``/commit msg``, ``/add f``, ``/run cmd``...) are not prompts: they become
  ``[aider: /commit msg]`` lines in the current exchange, the command name listed in ``tools``.
- ``> `` lines are aider's own output. The few that record what happened are kept as short lines
  (``[aider] Applied edit to src/App.js``, ``[aider] Commit c339495 ...``; tools ``edit``/``commit``); the rest
  (token counts, confirmations, retries, stack traces) is dropped.
- Everything else is the assistant's answer, verbatim (SEARCH/REPLACE blocks included).

The key is ``<session>#<n>`` with n the prompt's index in its run, stable as the file grows. Every line is
accounted for in the ledger (``line N``).
"""

from __future__ import annotations

import re
from dataclasses import replace

from mempald.normalize.format import Format, Input, Parsed, Probe
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, strip_injected

SOURCE_KIND = "aider"
AGENT = "aider"
HISTORY = ".aider.chat.history.md"

_HEADER = re.compile(r"^# aider chat started at (.+?)\s*$")
_PROMPT_CMDS = frozenset({"/code", "/ask", "/architect", "/context"})
_KEEP_OUTPUT = (
    (re.compile(r"^Applied edit to (.+)$"), "edit"),
    (re.compile(r"^Commit [0-9a-f]{7,} .*$"), "commit"),
    (re.compile(r"^Did not apply edit to .*$"), "edit-failed"),
    (re.compile(r"^The LLM did not conform to the edit format\.?$"), "edit-failed"),
)
_MAX_LINE = 300
_BLANK_INPUT = "<blank>"
# Aider's in-chat commands (a typed command may be any unambiguous prefix of one, like ``/a`` for ``/add``).
_COMMANDS = (
    "add", "architect", "ask", "chat-mode", "clear", "code", "commit", "context", "copy", "copy-context", "diff",
    "drop", "edit", "editor", "editor-model", "exit", "git", "help", "lint", "load", "ls", "map", "map-refresh",
    "model", "models", "multiline-mode", "ok", "paste", "quit", "read-only", "reasoning-effort", "report", "reset",
    "run", "save", "settings", "test", "think-tokens", "tokens", "undo", "voice", "weak-model", "web",
)
_COMMAND = re.compile(r"^/([A-Za-z][A-Za-z-]*)(?:\s|$)")
# aider's answer to one of its own yes/no questions, echoed as input: "... (Y)es/(N)o/(A)ll... [Yes]: all"
_CONFIRM = re.compile(r"\(Y\)es/\(N\)o\b.*\[(?:Yes|No)\]:\s*\S*\s*$")
_HELP_CONTEXT = re.compile(r"^# Question:.*(?:\n.*)*?\n# (?:Relevant docs|Announcement lines)", re.M)


def _is_command(line: str) -> bool:
    m = _COMMAND.match(line.strip())
    return m is not None and any(c.startswith(m.group(1).lower()) for c in _COMMANDS)


def _starts_new(segment: list[str], line: str) -> bool:
    """After only blank lines, does the ``####`` line ``line`` start a new input rather than continue
    ``segment`` (aider 0.50-0.52 separated the lines of one multi-line prompt by blank lines)?"""
    head, nxt = segment[0].strip(), line.strip()
    if head.startswith("# Question:"):
        return False  # /help's context runs on until aider's answer, whatever its lines look like
    if _BLANK_INPUT in (head, nxt) or _is_command(nxt):
        return True
    if _CONFIRM.search(segment[-1]) or _CONFIRM.search(nxt):
        return True
    if head.startswith("/"):
        cmd, _, arg = head.partition(" ")
        if cmd.lower() in _PROMPT_CMDS and arg.strip():
            return nxt == arg.strip()  # the echo of "/code X" begins; until then the command's text goes on
        return True
    return False


def _iso(stamp: str) -> str:
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})", stamp)
    return f"{m.group(1)}T{m.group(2)}" if m else stamp


def _ref(n: int) -> str:
    return f"line {n}"


class _Builder:
    def __init__(self) -> None:
        self.out: list[Exchange] = []
        self.ledger = Ledger()
        self.session = ""
        self.index = 0
        self.user: str | None = None
        self.key = ""
        self.reply: list[str] = []
        self.tools: list[str] = []
        self.echo: str | None = None
        self.help = False  # "/help QUESTION" was typed: aider's "# Question:" context follows
        self.runs: dict[str, int] = {}
        self.orphan = "text before any prompt"  # why text outside an exchange is skipped

    def new_session(self, stamp: str, n: int) -> None:
        self.close()
        session = _iso(stamp)
        self.runs[session] = self.runs.get(session, 0) + 1
        # two runs started in the same second stay apart: the second is "<start>~2"
        self.session = session if self.runs[session] == 1 else f"{session}~{self.runs[session]}"
        self.index = 0
        self.orphan = "text before any prompt"
        self.ledger.skipped(_ref(n), "run header")

    def close(self) -> None:
        if self.user is None:
            return
        self.out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=self.session, key=self.key,
            user=self.user, assistant="\n".join(self.reply).strip(), timestamp=self.session.split("~")[0] or None,
            agent=AGENT, position=self.index, tools=tuple(self.tools),
        ))
        self.index += 1
        self.user = None
        self.reply = []
        self.tools = []
        self.echo = None
        self.help = False

    def is_handoff(self, lines: list[str]) -> bool:
        """Does this ``####`` block repeat the reply since the prompt (the architect's answer handed on)?"""
        said = {ln.strip() for ln in self.reply if len(ln.strip()) > 10}
        long = [ln.strip() for ln in lines if len(ln.strip()) > 10]
        if self.user is None or not said or not long:
            return False
        return (len(long) >= 2 or len(long[0]) >= 40) and sum(ln in said for ln in long) * 2 >= len(long) and \
            long[0] in said

    def prompt(self, lines: list[str], refs: list[str]) -> None:
        text = strip_injected("\n".join(lines)).strip()
        if text == _BLANK_INPUT or not "\n".join(lines).strip():
            for r in refs:
                self.ledger.skipped(r, "blank input")  # Enter on an empty line: nothing was asked
            return
        if not text:
            self.close()  # only injected context: its answer is dropped with it
            self.orphan = "answer to injected context"
            for r in refs:
                self.ledger.skipped(r, "injected context")
            return
        if self.echo is not None and text == self.echo and not "\n".join(self.reply).strip():
            self.echo = None  # aider repeats "/code X" as "X": the same prompt
            for r in refs:
                self.ledger.folded(r, self.key, "echo of the prompt")
            return
        if self.is_handoff(lines):
            for r in refs:
                self.ledger.folded(r, self.key, "architect handoff")
            return
        if text.startswith("# Question:") and (self.help or _HELP_CONTEXT.match(text)):
            self.help = False  # the prompt aider built for "/help QUESTION": context, not the user's words
            for r in refs:
                if self.user is not None:
                    self.ledger.folded(r, self.key, "aider /help context")
                else:
                    self.ledger.skipped(r, "aider /help context")
            return
        if "\n" not in text and _CONFIRM.search(text):
            for r in refs:  # aider's own question, answered: not a prompt
                if self.user is not None:
                    self.ledger.folded(r, self.key, "aider confirmation")
                else:
                    self.ledger.skipped(r, "aider confirmation")
            return
        if text.startswith("/"):
            cmd, _, arg = text.partition(" ")
            cmd = cmd.lower()
            arg = arg.strip()
            if cmd in _PROMPT_CMDS and arg:
                self.open(arg, refs)
                self.echo = arg
                return
            if cmd == "/help" and arg:
                self.open(text, refs)  # the user asked aider about itself: the question is the prompt
                self.tools.append(cmd)
                self.help = True
                return
            if self.user is not None:
                self.tools.append(cmd)
                self.reply.append(f"[aider: {' '.join(text.split())[:_MAX_LINE]}]")
                for r in refs:
                    self.ledger.folded(r, self.key, "aider command")
            else:
                for r in refs:
                    self.ledger.skipped(r, "aider command before any prompt")
            return
        self.open(text, refs)

    def open(self, text: str, refs: list[str]) -> None:
        self.close()
        self.user = text
        self.orphan = "text before any prompt"
        self.key = f"{self.session}#{self.index}"
        for r in refs:
            self.ledger.stored(r, self.key, "prompt")

    def output(self, line: str, n: int) -> None:
        if self.user is not None:
            for pattern, tool in _KEEP_OUTPUT:
                if pattern.match(line):
                    self.reply.append(f"[aider] {line[:_MAX_LINE]}")
                    if tool not in self.tools:
                        self.tools.append(tool)
                    self.ledger.folded(_ref(n), self.key, "aider output")
                    return
        self.ledger.skipped(_ref(n), "aider output")

    def text(self, line: str, n: int) -> None:
        self.help = self.help and not line.strip()
        if self.user is None:
            self.ledger.skipped(_ref(n), "blank" if not line.strip() else self.orphan)
            return
        self.echo = None if line.strip() else self.echo
        self.reply.append(line)
        if line.strip():
            self.ledger.stored(_ref(n), self.key, "answer")
        else:
            self.ledger.skipped(_ref(n), "blank")


def parse(inp: Input) -> Parsed:
    """Exchanges of an aider chat history. Never raises: anything unrecognised is assistant text or skipped."""
    text = inp.data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    b = _Builder()
    segment: list[str] | None = None  # the input being read (its lines, without the blank lines between)
    refs: list[str] = []
    gap: list[int] = []  # blank lines since the last "####" line, while an input may still go on
    in_block = False
    spaced = True  # every "####" block of the input so far is one line (0.50-0.52's shape): it may go on

    def flush() -> None:
        nonlocal segment
        if segment is not None:
            b.prompt(segment, refs)
            segment = None
        for g in gap:
            b.text("", g)
        gap.clear()

    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if line.startswith("#### ") or line == "####":
            if segment is not None and not in_block and (not spaced or _starts_new(segment, line[5:])):
                flush()  # (a block of several lines is the newer shape: a whole input, blank lines end it)
            if segment is None:
                segment, refs, spaced = [], [], True
            elif in_block:
                spaced = False
            for g in gap:
                b.ledger.skipped(_ref(g), "blank line between the lines of one input")
            gap.clear()
            segment.append(line[5:])
            refs.append(_ref(n))
            in_block = True
            continue
        in_block = False
        if segment is not None and not line.strip():
            gap.append(n)  # the input may go on after blank lines (aider 0.50-0.52)
            continue
        flush()
        header = _HEADER.match(line)
        if header:
            b.new_session(header.group(1), n)
        elif line.startswith("> ") or line == ">":
            b.output(line[2:].strip(), n)
        else:
            b.text(line, n)
    flush()
    b.close()
    return Parsed(b.out, b.ledger, replace(inp.context, format=SOURCE_KIND))


def parse_document(data: bytes, name: str = "") -> list[Exchange]:
    """The exchanges of an aider chat history (``parse`` with a fresh context)."""
    return parse(Input(name=name, data=data, context=CursorContext(format=SOURCE_KIND))).exchanges


def detect(probe: Probe) -> bool:
    """The file name ``.aider.chat.history.md``, or Markdown with a ``# aider chat started at`` line."""
    return probe.base == HISTORY or re.search(r"^# aider chat started at ", probe.text[:65536], re.M) is not None


FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".md",), names=(HISTORY,),
                summary="Aider chat histories (.aider.chat.history.md)")
