"""Declarations: one memory across machines, through a folder the user already syncs (docs/SYNC.md)."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param

METHODS: tuple[Method, ...] = (
    Method(
        "sync_init", "Start syncing memory through a folder your sync tool already syncs (Syncthing, Dropbox, "
        "iCloud, a git repo, a share): this machine writes its drawers, forgets and facts there, and reads the "
        "other machines'.",
        (
            Param("dir", "path", "the shared folder (made if missing)", required=True, cli=Cli(positional=True)),
            Param("encrypt", "bool", "seal every segment with a new key kept 0600 in the config dir (copy it to "
                  "the other machines)"),
        ),
        writes=True, cli=("sync", "init"), timeout=600.0,
    ),
    Method(
        "sync_join", "Sync this machine through a folder another machine made with sync init.",
        (
            Param("dir", "path", "the shared folder", required=True, cli=Cli(positional=True)),
            Param("key_file", "path", "the key file sync init --encrypt wrote (an encrypted folder only)"),
        ),
        writes=True, idempotent=True, cli=("sync", "join"), timeout=600.0,
    ),
    Method("sync_status", "Each machine of the sync folder, how far this one has read it, and any segment it "
           "could not read, with what to do.", cli=("sync", "status")),
    Method("sync_leave", "Stop syncing (the drawers imported stay; the folder is left as it is).",
           writes=True, idempotent=True, cli=("sync", "leave")),
    Method("machines", "The machines whose memories this one holds: drawers of each, the last segment each "
           "wrote and the last one read here.", cli=("machines",)),
)
