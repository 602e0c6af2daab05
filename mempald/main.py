"""``mempald``: run the daemon, install it as a user service, or work on the data without it.

    mempald [run] [-v]                   the daemon, in the foreground (the default)
    mempald install-service | uninstall-service [--dry-run]
    mempald doctor [--json]              every check, the store and the model included
    mempald repair [--json]              rebuild a damaged state database or store from what survives
    mempald migrate --to URL [--from PATH]
    mempald restore PATH                 a backup (`mempal backup PATH`) back into an empty data dir
    mempald pack DIR ... | pack-prune FILE ...

Only this package opens a store or loads the model; the ``mempal`` client tells which of these to run when the
daemon is down. Every command runs with umask 077: whatever it creates (the data dir, the store, a migration's
copy, a pack) is the owner's only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from mempald import __version__


def main(argv: list[str] | None = None) -> int:
    os.umask(0o077)
    parser = argparse.ArgumentParser(prog="mempald", description="mempal's memory daemon")
    parser.add_argument("--version", action="version", version=f"mempald {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("run", help="run the daemon in the foreground (the default)")
    for name in ("install-service", "uninstall-service"):
        p = sub.add_parser(name, help=f"{name.split('-')[0]} the systemd user unit / launchd agent")
        p.add_argument("--dry-run", action="store_true", help="print what would be done, change nothing")
    p = sub.add_parser("doctor", help="check the installation, the store and the model (exit 0 only if all pass; "
                       "a stopped daemon is a warning: an offline check)")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("repair", help="rebuild a damaged state database or store from what survives (the daemon "
                       "must be stopped); transcripts still on disk are read again")
    p.add_argument("--json", action="store_true")
    from mempald.benchmarks import longmemeval
    from mempald.ops import offline

    longmemeval.register(sub)  # `mempald bench longmemeval FILE`
    offline.register(sub)
    args = parser.parse_args(argv)
    if args.command in ("install-service", "uninstall-service"):
        from mempald.runtime import service

        fn = service.install_service if args.command == "install-service" else service.uninstall_service
        return fn(dry_run=args.dry_run)
    if args.command == "doctor":
        from mempal.cli.doctor import print_checks
        from mempald.ops.doctor import run_checks

        return print_checks(run_checks(), as_json=args.json)
    if args.command == "repair":
        from mempald.ops.repair import main_repair

        return main_repair(as_json=args.json)
    if args.command in ("migrate", "restore", "pack", "pack-prune", "bench"):
        return offline.run(args)
    # The lock first, before the runtime's imports (0.4 s): from then on a client sees a daemon starting and waits
    # for it (``mempal.paths.starting_daemon``) instead of saying none runs. ``run`` reports a lock not taken.
    from mempald.config import data_dir
    from mempald.lock import instance_lock

    lock = instance_lock(data_dir())
    with contextlib.suppress(OSError):
        lock.acquire()
    from mempald.runtime.malloc import limit_arenas

    limit_arenas()  # before the runtime starts a thread or a process
    from mempald.runtime.app import main_run

    return main_run(lock, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
