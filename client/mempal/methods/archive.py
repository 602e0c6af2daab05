"""Declarations: the byte-exact transcript archive (what the agents delete, kept) and a session restored for resume."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param

METHODS: tuple[Method, ...] = (
    Method(
        "archive_status", "The transcript archive: sessions and files kept byte for byte, their bytes and the "
        "bytes on disk (the compression ratio), and whether archiving is paused (a disk almost full).",
        cli=("archive", "status"),
    ),
    Method(
        "archive_list", "The archived sessions, newest first, with their files; --deleted-upstream: only those "
        "whose transcript the agent has deleted (mempal restore-session brings them back).",
        (
            Param("wing", "str", "only this wing (project)", cli=Cli(flags=("--wing",))),
            Param("deleted_upstream", "bool", "only sessions whose original files are all gone"),
            Param("limit", "int", "at most this many sessions", default=200, lo=1, hi=100_000),
        ),
        cli=("archive", "list"), timeout=120.0,
    ),
    Method(
        "restore_session", "Write an archived session's files (sub-agent files included) back where the agent "
        "expects them, byte for byte (sha256 checked), so `claude --resume ID` or Codex's resume finds it again. "
        "An existing file with other bytes is never replaced without --force.",
        (
            Param("id", "str", "the session id (or a transcript's file name without .jsonl)", required=True,
                  max_len=512, cli=Cli(positional=True, metavar="ID")),
            Param("to", "path", "write the files below this folder instead (their paths kept relative to the "
                  "agent's folder, e.g. ~/.claude/projects)"),
            Param("dry_run", "bool", "only say what would be written"),
            Param("force", "bool", "replace existing files whose bytes differ"),
        ),
        writes=True, idempotent=True, cli=("restore-session",), timeout=600.0,
    ),
)
