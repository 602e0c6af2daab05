"""Declarations: progressive disclosure (index first, then whole drawers, then their context), the file gate,
and the token accounting behind them."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param

HOOK_EVENTS: tuple[str, ...] = ("prompt", "session-start", "file")  # the hooks that inject context

METHODS: tuple[Method, ...] = (
    Method(
        "get", "Whole drawers by id (after an index search): text, metadata and each one's token count.",
        (
            Param("drawer_id", "ids", "the drawer id(s), at most 50 (or any unique start of one, 4+ characters)",
                  required=True, aliases=("drawer_ids", "ids"), id_start=True,
                  cli=Cli(positional=True, nargs="+", metavar="DRAWER_ID")),
            Param("max_tokens", "int", "cut each drawer to this many (LLM) tokens (0: whole)", default=0, lo=0,
                  hi=100_000),
        ),
        cli=("get",), mcp="get", returns="GetResult",
        help="Step 2 of search(format=\"index\") -> get -> timeline: fetch only the drawers the index showed are "
             "worth their tokens. Soft-deleted or unknown ids are listed as missing.",
    ),
    Method(
        "timeline", "The exchanges around a drawer in its session, and an outline of the session (one title per "
        "exchange).",
        (
            Param("drawer_id", "id", "the drawer to centre on (or any unique start of its id)", required=True,
                  id_start=True, cli=Cli(positional=True)),
            Param("before", "int", "exchanges before it", default=2, lo=0, hi=20),
            Param("after", "int", "exchanges after it", default=2, lo=0, hi=20),
            Param("max_tokens", "int", "(LLM) tokens for the exchanges in all (the outline comes on top)",
                  default=2000, lo=100, hi=50_000),
            Param("outline", "int", "outline lines at most, centred on the drawer (0: none)", default=30, lo=0,
                  hi=500),
        ),
        cli=("timeline",), mcp="timeline",
        help="Step 3: what led to a decision and what came of it. The outline shows where in the session the "
             "drawer sits; ask again with another drawer id to move along.",
    ),
    Method(
        "file_context", "What memory knows about a file: the most recent and most important exchanges whose "
        "tool calls touched it (exact path, then the path relative to the project), within a token budget.",
        (
            Param("path", "path", "the file (absolute, or relative to cwd)", required=True,
                  cli=Cli(positional=True)),
            Param("cwd", "path", "the project directory (default: the current one)", fill="cwd"),
            Param("session_id", "str", "the current session (its own exchanges are left out)"),
            Param("max_tokens", "int", "(LLM) tokens of context at most", default=400, lo=50, hi=20_000),
            Param("limit", "int", "exchanges at most", default=3, lo=1, hi=20),
        ),
        cli=("file-context",), mcp="file_context",
        help="The PreToolUse hook injects this once per file per session before Read/Edit/Write; call it for a "
             "file you are about to change when no hook did.",
    ),
    Method(
        "hook_injected", "Hooks report the context they injected, for the token figures in status.",
        (
            Param("event", "enum", "which hook injected it", required=True, choices=HOOK_EVENTS),
            Param("text", "text", "the injected text", required=True, max_len=200_000),
        ),
        writes=True, idempotent=False,
    ),
)
