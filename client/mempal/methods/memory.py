"""Declarations: saving, deleting, purging and re-embedding memories; AAAK compression."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param
from mempal.methods.vocab import MEMORY_TYPE_CHOICES

METHODS: tuple[Method, ...] = (
    Method(
        "ingest", "Save a memory: a decision and its reasons, a preference, a milestone, a problem and its fix.",
        (
            Param("text", "text", "the memory, self-contained (what, why, file paths); - reads stdin on the CLI",
                  required=True, cli=Cli(positional=True)),
            Param("wing", "str", "project it belongs to (default: derived from the working directory)"),
            Param("room", "str", "aspect, e.g. decisions, architecture, problems (default: classified)"),
            Param("memory_type", "enum", "kind of memory (default: classified)", choices=MEMORY_TYPE_CHOICES),
            Param("importance", "int", "0 (trivia) to 5 (critical)", default=3, lo=0, hi=5),
            Param("dry_run", "bool", "only report near-duplicates, save nothing"),
            Param("duplicate_threshold", "float", "cosine at which a stored memory counts as a near-duplicate",
                  default=0.92, lo=0.0, hi=1.0, mcp=False, cli=Cli(show=False)),
            Param("agent", "str", "who saves it (default: user on the CLI, the agent over MCP)", fill="agent",
                  aliases=("added_by",), mcp=False),
            Param("cwd", "path", "the working directory the wing is derived from", fill="cwd"),
        ),
        writes=True, idempotent=True, cli=("save",), mcp="ingest",
        help="Write it so it stands alone (what, why, file paths). Warns about near-duplicates; dry_run shows "
             "them without saving. Not for tentative ideas or what the code already says.",
    ),
    Method(
        "delete", "Soft-delete drawers by id: hidden from search, kept until purged, audited (who, when, why).",
        (
            Param("drawer_id", "ids", "the drawer id(s) to delete", required=True, aliases=("drawer_ids",),
                  cli=Cli(positional=True, nargs="+", metavar="DRAWER_ID")),
            Param("reason", "text", "why it is wrong or obsolete", default="", max_len=2000),
            Param("actor", "str", "who deletes (default: user on the CLI, the agent over MCP)", fill="agent",
                  mcp=False),
        ),
        destructive=True, idempotent=True, cli=("delete",), mcp="delete",
    ),
    Method(
        "restore", "Bring soft-deleted drawers back (before they are purged).",
        (Param("drawer_id", "ids", "the drawer id(s) to restore", required=True, aliases=("drawer_ids",),
               cli=Cli(positional=True, nargs="+", metavar="DRAWER_ID")),
         Param("actor", "str", "who restores", fill="agent", mcp=False)),
        writes=True, idempotent=True, cli=("restore",),
    ),
    Method(
        "purge", "Remove soft-deleted drawers for good.",
        (
            Param("before", "time", "only those deleted before this date or age (7d)"),
            Param("dry_run", "bool", "count them, remove nothing"),
            Param("all_machines", "bool", "a store other machines' daemons share: theirs too (default: this "
                  "machine's drawers only)", mcp=False),
            Param("actor", "str", "who purges", fill="agent", mcp=False),
        ),
        destructive=True, idempotent=True, cli=("purge",), timeout=3600.0,
    ),
    Method("reindex", "Re-embed every drawer with the configured model (resumable; status shows the backlog).",
           writes=True, idempotent=True, cli=("reindex",), timeout=600.0),
    Method(
        "compress", "AAAK-compress a text, or a wing's drawers (stored in room aaak unless dry_run). Lossy: the "
        "ratio is measured with the model's tokenizer.",
        (
            Param("text", "text", "the text to compress", cli=Cli(positional=True, nargs="?")),
            Param("wing", "str", "compress this wing's drawers instead"),
            Param("dry_run", "bool", "print the result, store nothing"),
        ),
        writes=True, idempotent=True, cli=("compress",), timeout=300.0,
    ),
)
