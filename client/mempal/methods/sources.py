"""Declarations: watched sources, one-off mining, project settings, migration and pack."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param
from mempal.methods.vocab import MODES

METHODS: tuple[Method, ...] = (
    Method(
        "watch_add", "Watch a folder (persisted in config, watched at once).",
        (
            Param("path", "path", "the folder (or file) to watch", required=True, cli=Cli(positional=True)),
            Param("mode", "enum", "convos: transcripts and exports; projects: code and notes; pack: a markdown "
                  "folder re-packed on change", default="convos", choices=MODES),
            Param("wing", "str", "the wing its drawers file under (default: from each file)"),
            Param("token_budget", "int", "pack mode: prune the pack to this many tokens (0: no limit)", default=0,
                  lo=0, hi=1_000_000),
            Param("output", "path", "pack mode: where the pack goes (default DIR/packed)",
                  cli=Cli(flags=("-o", "--output"))),
        ),
        writes=True, idempotent=True, cli=("watch", "add"),
    ),
    Method("watch_remove", "Stop watching a folder (its drawers are kept).",
           (Param("path", "path", "the watched folder", required=True, cli=Cli(positional=True)),),
           writes=True, idempotent=True, cli=("watch", "remove")),
    Method("watch_list", "The watched sources, with their mode and wing.", cli=("watch", "list")),
    Method(
        "mine", "One-off ingest of files or folders, with a summary (files, exchanges, drawers, skipped with "
        "reasons).",
        (
            Param("paths", "paths", "files or folders", required=True, cli=Cli(positional=True, nargs="+")),
            Param("mode", "enum", "how to read them (auto: a code project when the folder is a VCS root or "
                  "holds more source files than transcripts, else conversations)", default="auto",
                  choices=("auto", *MODES[:2])),
            Param("wing", "str", "the wing their drawers file under (default: from each file)"),
            Param("limit", "int", "read at most this many files (0: all)", default=0, lo=0, hi=10_000_000),
            Param("dry_run", "bool", "read everything as the ingest would and report it, store nothing (the "
                  "same reading as `mempal inspect`)"),
            Param("plan_only", "bool", "only list the files that would be read", cli=Cli(show=False)),
            Param("root", "path", "the folder the given paths lie in (for batches of a planned mine)",
                  cli=Cli(show=False)),
        ),
        writes=True, idempotent=True, cli=("mine",), timeout=24 * 3600.0,
    ),
    Method(
        "inspect", "What reading FILE would store, nothing stored: every line or record accounted for (stored in "
        "which exchange, folded into one, or skipped and why) and the exchanges it would store.",
        (
            Param("path", "path", "the file (or a Slack export folder)", required=True, cli=Cli(positional=True)),
            Param("mode", "enum", "how to read it (auto: as its source does, else as mine would)", default="auto",
                  choices=("auto", *MODES[:2])),
            Param("counts_only", "bool", "only the counts, not the table of lines"),
        ),
        cli=("inspect",), timeout=600.0,
    ),
    Method(
        "reread", "Read a watched source (or a file or folder of it) again with the current adapters: its "
        "drawers are replaced (same ids where the exchange is the same) and the ones no longer produced removed.",
        (Param("path", "path", "the watched source, or a file or folder inside it", required=True,
               cli=Cli(positional=True)),),
        writes=True, destructive=True, idempotent=True, cli=("reread",), timeout=24 * 3600.0,
    ),
    Method(
        "init", "Write DIR/mempal.toml with the project's wing and the room of each folder (edit it after).",
        (
            Param("path", "path", "the project folder", required=True, cli=Cli(positional=True, metavar="DIR")),
            Param("wing", "str", "the wing (default: the folder's name)"),
            Param("force", "bool", "overwrite an existing mempal.toml"),
        ),
        writes=True, idempotent=True, cli=("init",),
    ),
    Method(
        "migrate", "Copy the daemon's palace to another store (a Qdrant server URL, path:/dir or an embedded "
        "store folder); resumable and verified.",
        (Param("to", "str", "http(s)://host:6333, path:/dir, or an embedded store folder", required=True,
               max_len=4096),),
        writes=True, idempotent=True, cli=("migrate",), timeout=24 * 3600.0,
    ),
    Method(
        "pack", "Compress a markdown folder into a tiered summary (overview, topics, facts).",
        (
            Param("dir", "path", "the markdown folder", required=True, cli=Cli(positional=True)),
            Param("output", "path", "where to write (default DIR/packed)", cli=Cli(flags=("-o", "--output"))),
            Param("format", "enum", "one file, or one per tier", default="single", choices=("single", "multi")),
            Param("chunk_size", "int", "tokens per chunk", default=512, lo=32, hi=4096),
            Param("compression_target", "float", "aimed ratio of input to output tokens", default=6.0, lo=1.0,
                  hi=1000.0),
            Param("topic", "str", "the pack's topic (default: from the folder)"),
            Param("token_budget", "int", "prune the result to this many tokens (0: no limit)", default=0, lo=0,
                  hi=10_000_000),
            Param("run_id", "str", "a name for this run, to follow it with pack_progress", max_len=200,
                  cli=Cli(show=False)),
        ),
        writes=True, idempotent=True, cli=("pack",), timeout=3600.0,
    ),
    Method(
        "pack_progress", "The packs running now (calls and pack-mode watches): stage, done of total, time so far.",
        (Param("run_id", "str", "only this run (the run_id given to pack)", max_len=200),),
    ),
    Method(
        "pack_prune", "Prune a pack to a token budget or an importance floor, merging near-duplicate facts.",
        (
            Param("file", "path", "the pack (knowledge_base.md or its JSON twin)", required=True,
                  cli=Cli(positional=True)),
            Param("max_tokens", "int", "keep at most this many tokens", lo=1, hi=10_000_000),
            Param("min_importance", "float", "drop facts less important than this", lo=0.0, hi=1.0),
            Param("similarity_threshold", "float", "cosine at which two facts are merged", default=0.80, lo=0.0,
                  hi=1.0),
            Param("no_merge", "bool", "do not merge near-duplicates"),
            Param("dry_run", "bool", "print the plan, write nothing"),
            Param("output", "path", "where to write (default: in place)", cli=Cli(flags=("-o", "--output"))),
        ),
        writes=True, idempotent=True, cli=("pack", "prune"), timeout=3600.0,
    ),
)
