"""The format registry: every transcript format mempald reads, and the only place that decides a file's format.

Each adapter module declares a ``FORMAT`` (``mempald.normalize.format.Format``): what it reads, its detection
and its parse, with one signature. Detection runs in the order below (the most specific first): a file is
the first format whose ``detect`` accepts its head; a folder is a folder format (a Slack export) when one
accepts its entry names. A file no format claims is plain text, except a ``.json``/``.jsonl`` file, which is
in no known format (``None``: skipped and counted, never stored as text).
"""

from __future__ import annotations

from collections.abc import Iterable

from mempald.normalize import (
    agent_memory,
    aider,
    antigravity,
    chatgpt,
    claude_ai,
    claude_code,
    cline,
    codex,
    copilot,
    copilot_cli,
    cursor,
    cursor_agent,
    cursor_export,
    cursor_transcript,
    gemini,
    kilo_db,
    opencode_db,
    opencode_export,
    opencode_storage,
    plaintext,
    slack,
    specstory,
)
from mempald.normalize.format import Format, Probe

# Detection order: names (an editor's database) and headers first, then JSON documents by their marker keys, then
# JSONL rollouts; the folder and database formats after the file formats; the agents' memories (Markdown, by
# their names and front matter) just before plain text, their places listed last.
FORMATS: tuple[Format, ...] = (
    cursor.FORMAT, aider.FORMAT, specstory.FORMAT, cursor_export.FORMAT, gemini.FORMAT, antigravity.FORMAT,
    cursor_transcript.FORMAT, opencode_export.FORMAT, copilot.FORMAT, copilot_cli.FORMAT, chatgpt.FORMAT,
    claude_ai.FORMAT, codex.FORMAT,
    claude_code.FORMAT, cline.FORMAT, slack.FORMAT, opencode_storage.FORMAT, opencode_db.FORMAT, kilo_db.FORMAT,
    cursor_agent.FORMAT, agent_memory.FORMAT, plaintext.FORMAT,
)
TEXT = plaintext.FORMAT
_BY_NAME = {f.name: f for f in FORMATS}
_STRUCTURED = (".json", ".jsonl")
HEAD_BYTES = 65536  # how much of a file detection reads


def by_name(name: str) -> Format:
    """The format called ``name`` (KeyError for an unknown name)."""
    return _BY_NAME[name]


def names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def detect_file(head: bytes, name: str = "") -> Format | None:
    """The format of a file from its first bytes (up to ``HEAD_BYTES``) and its name; None for a JSON file in
    no known format."""
    probe = Probe(name=name, head=head)
    for fmt in FORMATS:
        if fmt.unit != "file" or fmt is TEXT:
            continue
        if probe.base in fmt.names or fmt.detect(probe):
            return fmt
    if probe.base.lower().endswith(_STRUCTURED) or (not probe.base and probe.text.startswith(("{", "["))):
        return None
    return TEXT


def detect_folder(entries: Iterable[str]) -> Format | None:
    """The folder format (a Slack export) of a folder with these entry names, or None."""
    probe = Probe(entries=tuple(entries))
    return next((f for f in FORMATS if f.unit == "folder" and f.detect(probe)), None)


def for_agent(agent: str) -> Format | None:
    """The format of an agent's own sessions (``claude`` -> Claude Code's transcripts), or None."""
    return next((f for f in FORMATS if f.agent and f.agent == agent), None)


def room_of_its_own(name: str) -> Format | None:
    """The format that claims a file of this exact name and files it in a room of its own (an agent's memory:
    ``CLAUDE.md``, ``AGENTS.md``), or None: such a file in a watched code project is read in that format."""
    return next((f for f in FORMATS if f.room and name in f.names), None)


def claims(fmt: Format, name: str) -> bool:
    """Could a file of this name be one of ``fmt``'s (its exact names, or its suffixes)?"""
    return name in fmt.names or (bool(fmt.suffixes) and name.lower().endswith(fmt.suffixes))


def unit_formats() -> tuple[Format, ...]:
    """The formats whose unit is a folder or a database (a path may belong to a unit larger than itself)."""
    return tuple(f for f in FORMATS if f.unit != "file")


def database_for(name: str) -> Format | None:
    """The database format that claims a file of this name (an editor's store), or None."""
    return next((f for f in FORMATS if f.unit == "database" and claims(f, name)), None)


def wanted(name: str) -> bool:
    """Could a file of this name be in a format read here (by its suffix or exact name)? Hidden files are not,
    except the ones a format names (``.aider.chat.history.md``)."""
    if any(name in f.names for f in FORMATS):
        return True
    return not name.startswith(".") and name.lower().endswith(
        tuple(s for f in FORMATS for s in f.suffixes))
