"""One Cursor message ("bubble") as mempald keeps it (pure): what the user typed and attached, what the
assistant answered and did. Shared by the database reader (``cursor``) and nothing else.

A bubble (``bubbleId:<composer>:<bubble>`` in ``cursorDiskKV``, or an item of a legacy ``conversation`` array)
is ``{_v, type: 1 user | 2 assistant, bubbleId, text, richText, createdAt, ...}``:

- a user bubble's ``text`` is the prompt, whole; what it attached (``context.fileSelections``,
  ``context.selections``, ``context.folderSelections``, ``attachedCodeChunks``,
  ``attachedFileCodeChunksMetadataOnly``, images) is recorded as attachments (paths, one a line), never pasted
  into the prompt;
- an assistant bubble's ``text`` is its answer (code fences and diffs in it kept verbatim); ``codeBlocks``
  whose content the text does not already hold are added as fenced blocks; a tool call
  (``toolFormerData {name, params|rawArgs, result, status}``) becomes ``[tool: name] arg`` and ``  -> result``
  lines; ``thinking`` / ``allThinkingBlocks`` are dropped.
"""

from __future__ import annotations

import hashlib
import urllib.parse
from datetime import UTC, datetime
from typing import Any

from mempald.normalize.common import MAX_ARG, MAX_RESULT, add_unique, as_str, one_line, touched_path
from mempald.normalize.cursor_transcript_text import typed
from mempald.normalize.format import loads
from mempald.normalize.model import strip_injected

USER = 1
ASSISTANT = 2
_ARG_KEYS = ("command", "target_file", "relative_workspace_path", "file_path", "path", "query", "search_term",
             "pattern", "url", "explanation")
_FILE_KEYS = ("target_file", "relative_workspace_path", "file_path", "path")


def path_of_uri(value: Any) -> str:
    """A folder or file path from a VS Code URI: ``{fsPath|path, scheme}`` or ``file:///home/u/x`` (a remote
    URI keeps its path part); "" for anything else."""
    if isinstance(value, dict):
        for key in ("fsPath", "path"):
            text = as_str(value.get(key))
            if text:
                return text
        return path_of_uri(value.get("external") or value.get("uri"))
    text = as_str(value)
    if "://" in text:
        parsed = urllib.parse.urlparse(text)
        path = urllib.parse.unquote(parsed.path)
        if len(path) > 2 and path[0] == "/" and path[2] == ":":
            return path[1:]  # file:///c:/Users/... -> c:/Users/...
        return path
    return text


def iso_of(value: Any) -> str | None:
    """An ISO timestamp from epoch milliseconds or an ISO string; None when absent or out of range."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def attachments(bubble: dict[str, Any]) -> list[str]:
    """What a user bubble attached (file, folder and selection paths, images), in order, once each."""
    out: list[str] = []
    ctx = bubble.get("context") if isinstance(bubble.get("context"), dict) else {}
    assert isinstance(ctx, dict)
    for key in ("fileSelections", "folderSelections", "selections", "terminalSelections", "selectedDocs",
                "externalLinks"):
        items = ctx.get(key)
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            where = (path_of_uri(item.get("uri")) or as_str(item.get("relativePath"))
                     or as_str(item.get("relativeWorkspacePath")) or as_str(item.get("url"))
                     or as_str(item.get("name")))
            if key == "selections" and where:
                rng = item.get("range") if isinstance(item.get("range"), dict) else {}
                assert isinstance(rng, dict)
                start, end = rng.get("selectionStartLineNumber"), rng.get("positionLineNumber")
                if isinstance(start, int) and isinstance(end, int):
                    where += f":{min(start, end)}-{max(start, end)}"
            add_unique(out, where or None)
    for key in ("attachedCodeChunks", "attachedFileCodeChunksMetadataOnly"):
        items = bubble.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                add_unique(out, as_str(item.get("relativeWorkspacePath")) or path_of_uri(item.get("uri")) or None)
    images = bubble.get("images")
    if isinstance(images, list) and images:
        out.append(f"{len(images)} image{'s' if len(images) > 1 else ''}")
    return out


def prompt_key(session: str, prompt: str, seen: dict[str, int]) -> str:
    """An exchange's key from its prompt, the same in every copy of a Cursor conversation (its store, a SpecStory
    history of it), so a copy read too lands on the same drawers: the conversation's id, ``:p`` and 16 hex of the
    whitespace-normalised prompt's SHA-1, ``.n`` for its n-th repeat in the conversation (``seen`` counts them).
    (The conversation's id keeps the same prompt in two conversations apart: keys are matched across sessions.)"""
    digest = hashlib.sha1(" ".join(prompt.split()).encode("utf-8", "surrogatepass")).hexdigest()[:16]  # (a lone
    # surrogate, JSON may hold one, hashes as itself: valid text keeps its key)
    n = seen.get(digest, 0)
    seen[digest] = n + 1
    return f"{session}:p{digest}" + (f".{n}" if n else "")


def user_text(bubble: dict[str, Any]) -> str:
    return typed(strip_injected(as_str(bubble.get("text")))).strip()


def _tool_args(tool: dict[str, Any]) -> dict[str, Any]:
    for key in ("params", "rawArgs"):
        val = tool.get(key)
        parsed = loads(val) if isinstance(val, str) else val
        if isinstance(parsed, dict):
            return parsed
    return {}


def tool_lines(tool: dict[str, Any], cwd: str | None) -> tuple[str, list[str], list[str]]:
    """A tool call's name, its summary lines and the files it names."""
    name = as_str(tool.get("name")) or as_str(tool.get("tool")) or "tool"
    args = _tool_args(tool)
    arg = next((args[k] for k in _ARG_KEYS if isinstance(args.get(k), str) and args[k].strip()), "")
    lines = [f"[tool: {name}] {one_line(arg, MAX_ARG)}".rstrip()]
    status = as_str(tool.get("status"))
    result = tool.get("result")
    result_text = result if isinstance(result, str) else "" if result is None else one_line(result)
    if status in ("error", "cancelled", "canceled", "rejected"):
        lines.append(f"  -> {status}" + (": " + one_line(result_text, MAX_RESULT) if result_text else ""))
    elif result_text.strip():
        lines.append("  -> " + one_line(result_text, MAX_RESULT))
    files: list[str] = []
    for key in _FILE_KEYS:
        add_unique(files, touched_path(args.get(key), cwd))
    return name, lines, files


def answer_parts(bubble: dict[str, Any], cwd: str | None) -> tuple[list[str], list[str], list[str]]:
    """An assistant bubble's text pieces (answer, code blocks it lacks, tool lines), tools and files; thinking
    is left out."""
    text = strip_injected(as_str(bubble.get("text"))).strip()
    parts = [text] if text else []
    blocks = bubble.get("codeBlocks")
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        content = as_str(block.get("content")).strip("\n")
        if content.strip() and content not in text:
            lang = as_str(block.get("languageId"))
            parts.append(f"```{lang}\n{content}\n```")
    tools: list[str] = []
    files: list[str] = []
    tool = bubble.get("toolFormerData")
    if isinstance(tool, dict) and (tool.get("name") or tool.get("tool")):
        name, lines, touched = tool_lines(tool, cwd)
        tools.append(name)
        parts.append("\n".join(lines))
        for f in touched:
            add_unique(files, f)
    return parts, tools, files


def has_thinking(bubble: dict[str, Any]) -> bool:
    thinking = bubble.get("thinking")
    return (isinstance(thinking, dict) and bool(as_str(thinking.get("text")))) or bool(bubble.get("allThinkingBlocks"))
