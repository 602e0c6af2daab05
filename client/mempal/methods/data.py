"""Declarations: the user's control over their memory: forget, exclude, export, import, back up."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param

EXPORT_FORMATS: tuple[str, ...] = ("jsonl", "md")
AUDIT_ACTIONS: tuple[str, ...] = ("forget", "forget-reingest", "delete", "restore", "purge", "ingest", "import")

METHODS: tuple[Method, ...] = (
    Method(
        "forget", "Forget every drawer of a transcript, a session or a wing (and room): soft-deleted, audited, and "
        "not stored again from a transcript still on disk. The answer counts them first.",
        (
            Param("source", "path", "the transcript (or file) whose drawers to forget"),
            Param("session", "str", "the session whose drawers to forget"),
            Param("wing", "str", "the wing (project) whose drawers to forget", cli=Cli(flags=("--wing",))),
            Param("room", "str", "only this room of it"),
            Param("before", "time", "only what happened before this: ISO date, epoch seconds or an age like 30d "
                  "(undated drawers count as old)"),
            Param("excluded", "bool", "forget every stored drawer the exclusions in force cover (config "
                  "ingest.exclude and .mempalignore files)", mcp=False),
            Param("dry_run", "bool", "only count what would be forgotten"),
            Param("reingest", "bool", "the way back: remove these drawers for good and read their transcripts "
                  "again (earlier forgets of them are lifted); those whose transcript is gone are forgotten"),
            Param("reason", "text", "why (kept in the audit log)", default="", max_len=2000),
            Param("all_machines", "bool", "a store other machines' daemons share: theirs too (default: this "
                  "machine's drawers only)", mcp=False),
            Param("actor", "str", "who forgets (default: user on the CLI, the agent over MCP)", fill="agent",
                  mcp=False),
        ),
        destructive=True, idempotent=True, cli=("forget",), mcp="forget", timeout=3600.0,
        help="Only when the user asks to forget something. Call it with dry_run true first and tell the user "
             "how many drawers (by wing and room) it would forget; forget for real only after they agree. "
             "Forgotten drawers are hidden at once and removed for good by purge.",
    ),
    Method(
        "audit", "What was done to your memories, newest first: forgotten, deleted, restored, purged, saved by hand "
        "and imported; who did it (the user, an agent), when, to what and why.",
        (
            Param("since", "time", "only what happened since: ISO date, epoch seconds or an age like 7d"),
            Param("action", "enum", "only this kind of action", choices=AUDIT_ACTIONS),
            Param("limit", "int", "at most this many entries", default=100, lo=1, hi=100_000),
        ),
        cli=("audit",),
    ),
    Method(
        "exclude_add", "Never read what this rule names from now on (kept in config ingest.exclude, applied at "
        "once); counts what is already stored of it, and forgets it with forget.",
        (
            Param("pattern", "str", "an absolute path (/..., ~/...: that folder or file and all in it), a name glob "
                  "(*-private) or a glob from any folder (**/secret/**); matched against file paths and the "
                  "working directories of sessions", required=True, max_len=4096, cli=Cli(positional=True)),
            Param("forget", "bool", "also forget the drawers already stored that the rule covers"),
            Param("actor", "str", "who excludes", fill="agent", mcp=False),
        ),
        destructive=True, idempotent=True, cli=("exclude", "add"), timeout=3600.0,
    ),
    Method(
        "exclude_list", "The exclusion rules in force (config and .mempalignore files) and what each has kept out.",
        (Param("stored", "bool", "also count the drawers stored before a rule existed that it covers"),),
        cli=("exclude", "list"), timeout=600.0,
    ),
    Method(
        "exclude_remove", "Stop excluding what a rule names (its files are read at the next scan; what was "
        "forgotten stays forgotten).",
        (Param("pattern", "str", "the rule, as `mempal exclude list` shows it", required=True, max_len=4096,
               cli=Cli(positional=True)),),
        writes=True, idempotent=True, cli=("exclude", "remove"),
    ),
    Method(
        "export", "Write every drawer verbatim to a file: JSONL with every metadata field (mempal import reads it "
        "back), or Markdown, one note per wing and session (opens well in an editor or Obsidian). Files 0600.",
        (
            Param("output", "path", "where: a .jsonl file, or the folder of the Markdown notes (absolute, outside "
                  "the daemon's own folders)", required=True, cli=Cli(flags=("-o", "--output"))),
            Param("format", "enum", "jsonl: for mempal import and scripts; md: notes to read", default="jsonl",
                  choices=EXPORT_FORMATS),
            Param("wing", "str", "only this wing"),
            Param("since", "time", "only newer than this: ISO date, epoch seconds or an age like 30d"),
            Param("include_deleted", "bool", "also the soft-deleted drawers (marked as such)"),
            Param("force", "bool", "replace an existing file, or write into a folder that is not empty"),
        ),
        cli=("export",), timeout=24 * 3600.0,
    ),
    Method(
        "import_drawers", "Read an export (mempal export --format jsonl) back: drawers keep their ids and metadata, "
        "are re-embedded, and one already stored as exported is left alone (importing twice changes nothing).",
        (
            Param("path", "path", "the .jsonl file", required=True, cli=Cli(positional=True, metavar="FILE")),
            Param("dry_run", "bool", "only check and count the lines, store nothing"),
            Param("actor", "str", "who imports", fill="agent", mcp=False),
        ),
        writes=True, idempotent=True, cli=("import",), timeout=24 * 3600.0,
    ),
    Method(
        "backup", "A consistent snapshot of the store, the state database and the config, taken while the daemon "
        "runs and ingests, into a new or empty folder (mempald restore brings it back).",
        (Param("path", "path", "the backup folder (new or empty; absolute, outside the daemon's own folders)",
               required=True, cli=Cli(positional=True)),),
        cli=("backup",), timeout=24 * 3600.0,
    ),
)
