"""``mempald``: run the daemon, or install/uninstall it as a user service."""

from __future__ import annotations

import argparse
import sys

from mempald import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mempald", description="mempal's memory daemon")
    parser.add_argument("--version", action="version", version=f"mempald {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("run", help="run the daemon in the foreground (the default)")
    for name in ("install-service", "uninstall-service"):
        p = sub.add_parser(name, help=f"{name.split('-')[0]} the systemd user unit / launchd agent")
        p.add_argument("--dry-run", action="store_true", help="print what would be done, change nothing")
    args = parser.parse_args(argv)
    if args.command in ("install-service", "uninstall-service"):
        from mempald import service

        fn = service.install_service if args.command == "install-service" else service.uninstall_service
        return fn(dry_run=args.dry_run)
    from mempald.app import main_run

    return main_run(verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
