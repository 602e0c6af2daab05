"""How a Codex tool call and its output read in an exchange (pure).

- ``function_call`` arguments are a JSON string: the command (``cmd``/``command``, arrays unwrapped from
  ``bash -lc``), else a path, query, URL or plan size.
- Code mode (0.14x): a ``custom_tool_call`` named ``exec`` carries JavaScript that calls ``tools.NAME({...})``;
  each call reads as ``[tool: NAME] <its cmd or path>``, not as the script.
- Outputs: unified exec's ``Chunk ID / Wall time / Process exited with code N / Output:`` header and the older
  ``Exit code: N / Output:`` are cut to the output itself; a list of ``{type, text}`` parts is joined; a JSON
  ``{"output", "metadata": {"exit_code"}}`` is unwrapped. A non-zero exit reads ``-> error (exit N): ...``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mempald.normalize.common import MAX_ARG, add_unique
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.shell import command_files, command_text, patch_files

_ARG_KEYS = ("cmd", "command", "path", "file_path", "query", "url", "pattern", "explanation", "prompt")
_EXIT = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)\s*$", re.MULTILINE)
_RUNNING = re.compile(r"^Process running with session ID (\d+)", re.MULTILINE)
_HEADER = re.compile(r"^(?:Chunk ID|Wall time|Original token count|Total output lines|Exit code|Process exited with "
                     r"code|Process running with session ID)\b.*$")
_JS_CALL = re.compile(r"\btools\.([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_JS_STR = r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)"""
_JS_KEY = {key: re.compile(r"""["']?""" + key + r"""["']?\s*:\s*""" + _JS_STR) for key in (
    "cmd", "command", "path", "file_path", "query", "url", "workdir", "input", "patch")}


def loads(raw: Any) -> Any:
    try:
        return json.loads(raw)
    except (TypeError, ValueError, RecursionError):
        return None


def _js_string(literal: str) -> str:
    body = literal[1:-1]
    if literal[0] == '"':
        decoded = loads(literal)
        if isinstance(decoded, str):
            return decoded
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def decoded(args: Any) -> Any:
    """Function-call arguments decoded once (a JSON string in the rollout), else as they are."""
    return _decoded(args)


def _decoded(args: Any) -> Any:
    if isinstance(args, str) and args.lstrip().startswith(("{", "[")):
        decoded = loads(args)
        return args if decoded is None else decoded
    return args


def args_summary(args: Any) -> str:
    args = _decoded(args)
    if isinstance(args, dict):
        for key in _ARG_KEYS:
            val = args.get(key)
            text = command_text(val) if key in ("cmd", "command") else (val if isinstance(val, str) else "")
            if text.strip():
                return _one_line(text, MAX_ARG)
        if isinstance(args.get("plan"), list):
            return f"{len(args['plan'])} steps"
        return ""
    if isinstance(args, str):
        return _one_line(args, MAX_ARG)
    return command_text(args)


def call_files(args: Any, cwd: str | None) -> list[str]:
    """Files a shell-like function call clearly touched (its command, run in its ``workdir``)."""
    args = _decoded(args)
    if isinstance(args, dict):
        workdir = args.get("workdir") if isinstance(args.get("workdir"), str) else cwd
        for key in ("cmd", "command"):
            if key in args:
                return command_files(args[key], workdir)
        return []
    return command_files(args, cwd) if isinstance(args, list) else []


def patch_summary(patch: Any) -> str:
    if not isinstance(patch, str):
        return ""
    files = patch_files(patch, None)
    return _one_line(", ".join(files), MAX_ARG) if files else _one_line(patch, MAX_ARG)


def code_mode_calls(script: Any, cwd: str | None) -> list[tuple[str, str, list[str]]]:
    """The ``tools.NAME({...})`` calls of a code-mode ``exec`` script: (name, argument, files touched)."""
    if not isinstance(script, str):
        return []
    out: list[tuple[str, str, list[str]]] = []
    calls = list(_JS_CALL.finditer(script))
    for i, m in enumerate(calls):
        end = calls[i + 1].start() if i + 1 < len(calls) else len(script)
        body = script[m.end() : end]
        found = {key: _js_string(k.group(1)) for key, rx in _JS_KEY.items() if (k := rx.search(body))}
        arg = next((found[k] for k in ("cmd", "command", "path", "file_path", "query", "url") if found.get(k)), "")
        workdir = found.get("workdir") or cwd
        files: list[str] = []
        if m.group(1) == "apply_patch":
            for f in patch_files(found.get("input") or found.get("patch") or body, workdir):
                add_unique(files, f)
            arg = ", ".join(files) or arg
        else:
            for f in command_files(found.get("cmd") or found.get("command") or "", workdir):
                add_unique(files, f)
        out.append((m.group(1), _one_line(arg, MAX_ARG), files))
    return out


def _parts_text(value: Any) -> str | None:
    if isinstance(value, list):
        texts = [p.get("text") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(t for t in texts if t)
    return None


def output_summary(output: Any) -> str | None:
    """``  -> short result`` for a tool output (None when there is nothing to say)."""
    exit_code: int | None = None
    body: Any = output
    if isinstance(output, dict):
        body = output.get("content", output.get("output", ""))
    joined = _parts_text(body)
    if joined is not None:
        body = joined
    if isinstance(body, str) and body.lstrip().startswith("{"):
        decoded = loads(body)
        if isinstance(decoded, dict) and "output" in decoded:
            meta = decoded.get("metadata")
            if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
                exit_code = meta["exit_code"]
            body = decoded.get("output")
    running = False
    if isinstance(body, str):
        m = _EXIT.search(body[:2000])
        if m:
            exit_code = int(m.group(1))
        running = bool(_RUNNING.search(body[:2000]))
        if "Output:" in body[:2000] and (m or running or _HEADER.match(body)):
            body = body.split("Output:", 1)[1].lstrip("\n")
    text = _one_line(body) if isinstance(body, str) and body.strip() else "" if isinstance(body, str) else \
        _one_line(body) if body not in (None, "") else ""
    if exit_code not in (None, 0):
        return f"  -> error (exit {exit_code}): {text}".rstrip()
    if not text and running:
        return "  -> (still running)"
    return f"  -> {text}" if text else None
