"""Antigravity CLI (``agy``) conversations: ``~/.gemini/antigravity-cli/brain/<conversation id>/.system_generated/
logs/transcript_full.jsonl`` (every step) and ``transcript.jsonl`` (the same steps, cut back at a checkpoint),
appended as the agent works. The Antigravity app keeps the same files under ``~/.gemini/antigravity/brain/``
(``~/.gemini/antigravity-ide/brain/`` for some installs).

Each line is one step ``{step_index, source, type, status, created_at, content?, thinking?, tool_calls?}``:

- ``USER_INPUT`` (source ``USER_EXPLICIT``): the prompt, in ``<USER_REQUEST>...</USER_REQUEST>`` followed by the
  harness's ``<ADDITIONAL_METADATA>`` / ``<USER_SETTINGS_CHANGE>`` blocks, and after an artifact review preceded
  by "Comments on artifact URI: ...". Only the request is the user's words: an empty request (a plan approved with
  nothing said) is no prompt, and neither is a ``USER_INPUT`` from any other source (a sub-agent's task);
- ``PLANNER_RESPONSE`` (source ``MODEL``): the answer (``content``), its reasoning (``thinking``: dropped) and the
  tool calls it declares (``tool_calls[{name, args}]``, each argument JSON-encoded on its own):
  ``[tool: name] arg``;
- a step named for the tool it ran (``RUN_COMMAND``, ``VIEW_FILE``, ``LIST_DIRECTORY``, ``GREP_SEARCH``,
  ``CODE_ACTION``, ``GENERIC``...; source ``MODEL``): the result, folded as ``  -> result`` (``  -> error: ...``
  when its status is ``ERROR``);
- ``ERROR_MESSAGE`` becomes ``[error] ...``; ``SYSTEM_MESSAGE`` (a background task's end) ``[system] ...``;
- ``CONVERSATION_HISTORY``, ``CHECKPOINT``, ``KNOWLEDGE_ARTIFACTS`` and the like are context the harness put back:
  never a prompt, skipped.

One exchange per prompt, keyed by the prompt's ``step_index``: the same drawers whichever of the two files, and
however much of it, is read. Answers at the head of ``transcript.jsonl`` whose prompt was cut away at a
checkpoint are skipped there (the exchange is whole in ``transcript_full.jsonl`` and in earlier reads). The
conversation id is the ``brain/<id>`` folder; the project is the ``workspace`` that
``~/.gemini/antigravity-cli/history.jsonl`` records for it (read beside the unit: ``beside``), else the first
working directory a command ran in (``run_command``'s ``Cwd``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePath, PurePosixPath
from typing import Any

from mempald.normalize.common import MAX_ARG, MAX_RESULT, add_unique, one_line, touched_path
from mempald.normalize.common import as_str as _s
from mempald.normalize.format import Format, Input, Look, Parsed, Place, Probe, loads
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, Line, strip_injected

SOURCE_KIND = "antigravity"
AGENT = "antigravity"
FULL, CUT = "transcript_full.jsonl", "transcript.jsonl"
HISTORY_MAX = 32 * 1024 * 1024  # history.jsonl: one line per prompt ever sent
_REQUEST = re.compile(r"<USER_REQUEST>\s*(.*?)\s*</USER_REQUEST>", re.S)
_BLOCKS = re.compile(r"<(ADDITIONAL_METADATA|USER_SETTINGS_CHANGE|EPHEMERAL_MESSAGE|SYSTEM_MESSAGE)>.*?</\1>\s*", re.S)
_ARG_KEYS = ("CommandLine", "AbsolutePath", "TargetFile", "File", "Path", "DirectoryPath", "SearchPath", "Query",
             "Url", "Pattern", "Prompt", "Task", "Description")
_FILE_TOOLS = frozenset({"view_file", "write_to_file", "replace_file_content", "multi_replace_file_content",
                         "view_file_outline", "view_code_item"})
_FILE_KEYS = ("AbsolutePath", "TargetFile", "File")
_CONTEXT_TYPES = frozenset({"CONVERSATION_HISTORY", "CHECKPOINT", "KNOWLEDGE_ARTIFACTS", "EPHEMERAL_MESSAGE",
                            "USER_SETTINGS_CHANGE"})
_NOTES = {"ERROR_MESSAGE": "error", "SYSTEM_MESSAGE": "system"}
_ABSOLUTE = re.compile(r"^(?:/|[A-Za-z]:[\\/])")
_STAMPS = re.compile(r"\A(?:\s*(?:Created|Completed) At: \S+\s*\n)+")  # the head of every tool result


def _args(raw: Any) -> dict[str, Any]:
    """A tool call's arguments, each value decoded from the JSON string it is written as."""
    out: dict[str, Any] = {}
    if isinstance(raw, str):
        raw = loads(raw)
    for key, val in raw.items() if isinstance(raw, dict) else ():
        decoded = loads(val) if isinstance(val, str) else val
        out[str(key)] = decoded if decoded is not None or val == "null" else val
    return out


def _arg(args: dict[str, Any]) -> str:
    for key in _ARG_KEYS:
        val = args.get(key)
        if isinstance(val, str) and val.strip():
            return val
    return next((v for v in args.values() if isinstance(v, str) and v.strip()), "")


def prompt_text(content: str) -> str:
    """The user's words in a ``USER_INPUT`` step's content ("" when it holds none)."""
    found = _REQUEST.search(content)
    text = found.group(1) if found else _BLOCKS.sub("", content)
    return strip_injected(text).strip()


def conversation_of(name: str) -> str:
    """The conversation id of a transcript at ``brain/<id>/.system_generated/logs/`` ("" elsewhere)."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if len(parts) >= 4 and parts[-2] == "logs" and parts[-3] == ".system_generated":
        return parts[-4]
    return ""


class _Reader:
    def __init__(self, inp: Input) -> None:
        ctx = inp.context
        stem = PurePosixPath(inp.name.replace("\\", "/")).stem if inp.name else ""
        self.session_id = ctx.session_id or conversation_of(inp.name) or stem
        self.ctx = replace(ctx, format=SOURCE_KIND, session_id=self.session_id)
        self.out: list[Exchange] = []
        self.ledger = Ledger()
        self.turn: dict[str, Any] | None = None
        self.cut = PurePosixPath(inp.name.replace("\\", "/")).name == CUT  # a head without its prompt: a fragment

    def close(self) -> None:
        turn, self.turn = self.turn, None
        if turn is None:
            return
        self.out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=self.session_id, key=turn["key"], user=turn["user"],
            assistant="\n".join(turn["reply"]).strip(), timestamp=turn["ts"], agent=AGENT,
            position=self.ctx.position + len(self.out), offset=turn["offset"], tools=tuple(turn["tools"]),
            files=tuple(turn["files"]), cwd=self.ctx.cwd or None, project=self.ctx.cwd or None))

    def start(self, line: Line, step: dict[str, Any], user: str) -> dict[str, Any]:
        self.close()
        index = step.get("step_index")
        key = f"step:{index}" if isinstance(index, int) else f"line:{line.offset}"
        self.turn = {"key": key, "user": user, "reply": [], "tools": [], "files": [], "offset": line.offset,
                     "ts": _s(step.get("created_at")) or None}
        return self.turn

    def step(self, line: Line, step: dict[str, Any]) -> None:
        stype, source = _s(step.get("type")), _s(step.get("source"))
        raw = step.get("content")
        content = raw if isinstance(raw, str) else ""
        if stype == "USER_INPUT":
            self.user(line, step, source, content)
        elif stype == "PLANNER_RESPONSE":
            self.answer(line, step, content)
        elif stype in _CONTEXT_TYPES:
            self.ledger.skipped(line.offset, "context put back by the harness")
        elif self.turn is None:
            self.ledger.skipped(line.offset, f"{stype or 'untyped'} step before any prompt")
        elif stype in _NOTES:
            text = one_line(strip_injected(content), MAX_RESULT)
            if text:
                self.turn["reply"].append(f"[{_NOTES[stype]}] {text}")
                self.ledger.folded(line.offset, self.turn["key"], f"{stype.lower()}")
            else:
                self.ledger.skipped(line.offset, "empty")
        elif source in ("MODEL", "") and stype:
            self.result(line, step, content)
        else:
            self.ledger.skipped(line.offset, f"{stype or 'untyped'} step from {source or 'nobody'}")

    def user(self, line: Line, step: dict[str, Any], source: str, content: str) -> None:
        text = prompt_text(content)
        if source not in ("USER_EXPLICIT", ""):
            if self.turn is not None and text:  # a sub-agent's task, a harness nudge: never the user's words
                self.turn["reply"].append(f"[{source.lower()}] {one_line(text, MAX_RESULT)}")
                self.ledger.folded(line.offset, self.turn["key"], f"input from {source}")
            else:
                self.ledger.skipped(line.offset, f"input from {source}")
            return
        if not text:
            self.close()  # what answers a request with nothing in it (a plan approved) answers no prompt
            self.ledger.skipped(line.offset, "no request (an approval, or injected context only)")
            return
        self.start(line, step, text)
        self.ledger.stored(line.offset, self.turn["key"] if self.turn else "", "prompt")

    def answer(self, line: Line, step: dict[str, Any], content: str) -> None:
        calls = [c for c in step.get("tool_calls") or [] if isinstance(c, dict)] if isinstance(
            step.get("tool_calls"), list) else []
        text = strip_injected(content).strip()
        if self.turn is None:
            if self.cut and not self.out:
                self.ledger.skipped(line.offset, "answer whose prompt was cut back at a checkpoint")
                return
            if not text and not calls:
                self.ledger.skipped(line.offset, "thinking only" if step.get("thinking") else "empty")
                return
            self.start(line, step, "")  # an answer before any prompt (a transcript cut at a checkpoint): kept
        turn = self.turn
        assert turn is not None
        if text:
            turn["reply"].append(text)
        for call in calls:
            name = _s(call.get("name")) or "tool"
            args = _args(call.get("args", call.get("arguments")))
            cwd = args.get("Cwd")
            if not self.ctx.cwd and isinstance(cwd, str) and _ABSOLUTE.match(cwd):
                self.ctx = replace(self.ctx, cwd=cwd)  # no workspace recorded: the session's first cwd
            turn["tools"].append(name)
            turn["reply"].append(f"[tool: {name}] {one_line(_arg(args), MAX_ARG)}".rstrip())
            if name in _FILE_TOOLS:
                for key in _FILE_KEYS:
                    add_unique(turn["files"], touched_path(args.get(key), self.ctx.cwd or None))
        if text:
            self.ledger.stored(line.offset, turn["key"], "answer")
        elif calls:
            self.ledger.folded(line.offset, turn["key"], "tool call")
        else:
            self.ledger.skipped(line.offset, "thinking only" if step.get("thinking") else "empty")

    def result(self, line: Line, step: dict[str, Any], content: str) -> None:
        assert self.turn is not None
        text = one_line(_STAMPS.sub("", content), MAX_RESULT)
        status = _s(step.get("status"))
        err = _s(step.get("error")) or _s(step.get("error_message"))
        if status in ("ERROR", "FAILED") or err:
            self.turn["reply"].append("  -> error: " + (text or one_line(err, MAX_RESULT)) if text or err
                                      else "  -> error")
        elif status in ("CANCELED", "CANCELLED"):
            self.turn["reply"].append("  -> cancelled")
        elif text:
            self.turn["reply"].append("  -> " + text)
        self.ledger.folded(line.offset, self.turn["key"], "tool result")


def parse(inp: Input) -> Parsed:
    """Exchanges in the given complete lines of one transcript. Never raises: a bad line is skipped."""
    reader = _Reader(inp)
    for line in inp.lines:
        step = loads(line.raw)
        if not isinstance(step, dict):
            reader.ledger.skipped(line.offset, "not JSON" if step is None else "not an object")
            continue
        reader.step(line, step)
    reader.close()
    last = reader.out[-1] if reader.out else None
    # the last exchange may still grow: read again from its prompt, numbered as it is now
    resume = (last.offset, last.position) if last is not None and last.offset is not None else None
    return Parsed(reader.out, reader.ledger, reader.ctx, resume)


def detect(probe: Probe) -> bool:
    """JSONL whose first records are steps (``step_index``, ``type``, ``source``), or a transcript named so."""
    for rec in probe.records[:3]:
        if isinstance(rec.get("step_index"), int) and isinstance(rec.get("type"), str) and "source" in rec:
            return True
    return probe.base in (FULL, CUT) and conversation_of(probe.name) != "" and \
        re.match(r'\{\s*"step_index"\s*:', probe.text) is not None


def _root(path: PurePath) -> PurePath | None:
    """``~/.gemini/antigravity-cli`` of a transcript at ``<root>/brain/<id>/.system_generated/logs/``."""
    parents = list(path.parents)
    return parents[4] if len(parents) > 4 and parents[3].name == "brain" else None


def beside(path: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """``ctx`` with the conversation's project: the ``workspace`` history.jsonl records for its id."""
    root = _root(path)
    conversation = conversation_of(str(path))
    if ctx.cwd or root is None or not conversation:
        return ctx
    for line in reversed(look.lines(root / "history.jsonl", HISTORY_MAX)):
        if conversation.encode() not in line.raw:
            continue
        rec = loads(line.raw)
        workspace = rec.get("workspace") if isinstance(rec, dict) else None
        if isinstance(workspace, str) and workspace and rec.get("conversationId") == conversation:
            return replace(ctx, cwd=workspace)
    return ctx


_GLOBS = (f"brain/*/.system_generated/logs/{FULL}", f"brain/*/.system_generated/logs/{CUT}")
PLACES = (
    Place("Antigravity CLI", linux=("~/.gemini/antigravity-cli",), macos=("~/.gemini/antigravity-cli",),
          windows=("%USERPROFILE%/.gemini/antigravity-cli",), globs=_GLOBS),
    Place("Antigravity", linux=("~/.gemini/antigravity",), macos=("~/.gemini/antigravity",),
          windows=("%USERPROFILE%/.gemini/antigravity",), globs=_GLOBS),
    Place("Antigravity IDE", linux=("~/.gemini/antigravity-ide",), macos=("~/.gemini/antigravity-ide",),
          windows=("%USERPROFILE%/.gemini/antigravity-ide",), globs=_GLOBS),
)

FORMAT = Format(SOURCE_KIND, "lines", detect, parse, suffixes=(".jsonl",), places=PLACES, ids="message",
                agent=AGENT, beside=beside,
                summary="Antigravity CLI conversations (~/.gemini/antigravity-cli/brain)")
