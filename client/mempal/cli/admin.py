"""``mempal`` administration, without the daemon: config show/get/set/edit, logs, doctor, identity edit."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any


def _lookup(tree: dict[str, Any], key: str) -> Any:
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def _parse_value(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(raw)
        except ValueError:
            pass
    return raw


def cmd_config(args: argparse.Namespace) -> int:
    from mempald import config as cfg  # light (tomllib, platformdirs): config is read where it lives

    try:
        if args.action == "show":
            settings = cfg.load_settings()
            tree = cfg.as_dict(settings)
            if args.json:
                print(json.dumps({"path": str(cfg.config_path()), "settings": tree,
                                  "origins": dict(settings.origins)}, indent=2, default=str))
                return 0
            print(f"# {cfg.config_path()}")
            for section, body in tree.items():
                if not isinstance(body, dict):
                    print(f"{section} = {body!r}")
                    continue
                for k, v in body.items():
                    print(f"{section}.{k} = {v!r}    # {settings.origin(f'{section}.{k}')}")
            return 0
        if args.action == "get":
            settings = cfg.load_settings()
            print(json.dumps(_lookup(cfg.as_dict(settings), args.key), default=str))
            return 0
        if args.action == "set":
            if not args.key or args.value is None:
                print("mempal config set KEY VALUE", file=sys.stderr)
                return 2
            section, _, key = args.key.partition(".")
            raw = cfg.read_raw()
            raw.setdefault(section, {})[key] = _parse_value(args.value)
            cfg.write_raw(raw)
            print(f"{args.key} = {args.value!r} written to {cfg.config_path()}; "
                  "reload the daemon (SIGHUP) for source changes, restart it for the rest")
            return 0
        path = cfg.config_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text("# mempald settings: see `mempal config show` for every key and its default\n")
        rc = subprocess.call([os.environ.get("EDITOR", "vi"), str(path)])
        cfg.load_settings()
        print(f"{path} is valid")
        return rc
    except cfg.ConfigError as exc:
        print(f"mempal config: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:
        print(f"mempal config: unknown key {exc}", file=sys.stderr)
        return 2


def cmd_logs(args: argparse.Namespace) -> int:
    unit = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "systemd/user/mempald.service"
    if shutil.which("journalctl") and unit.exists():
        cmd = ["journalctl", "--user", "-u", "mempald", "-n", str(args.lines), "--no-pager"]
        if args.follow:
            cmd.append("-f")
        return subprocess.call(cmd)
    log = Path.home() / "Library" / "Logs" / "mempald" / "mempald.log"
    if log.exists():
        cmd = ["tail", "-n", str(args.lines)] + (["-F"] if args.follow else []) + [str(log)]
        return subprocess.call(cmd)
    print("no service logs found: mempald logs to stderr when run in a terminal; install it as a service "
          "(`mempald install-service`) to get them in the journal (Linux) or ~/Library/Logs/mempald (macOS)",
          file=sys.stderr)
    return 1


def cmd_doctor(args: argparse.Namespace) -> int:
    from mempal.cli.doctor import run

    return run(as_json=args.json)


def cmd_identity(args: argparse.Namespace) -> int:
    from mempald.config import load_settings  # light (platformdirs, tomllib): the same path the daemon reads

    path = load_settings().identity_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("# Who I am\n\nWrite a few lines about yourself and how you like to work. "
                        "mempal puts this at the top of every wake-up (L0).\n")
    return subprocess.call([os.environ.get("EDITOR", "vi"), str(path)])


def register(sub: Any) -> None:
    p = sub.add_parser("config", help="settings: show, get KEY, set KEY VALUE, edit")
    p.add_argument("action", choices=["show", "get", "set", "edit"])
    p.add_argument("key", nargs="?")
    p.add_argument("value", nargs="?")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_config)

    p = sub.add_parser("logs", help="show the daemon's logs (journal or launchd log)")
    p.add_argument("-f", "--follow", action="store_true")
    p.add_argument("-n", "--lines", type=int, default=100)
    p.set_defaults(func=cmd_logs)

    p = sub.add_parser("identity", help="edit the L0 identity file")
    p.add_argument("action", choices=["edit"])
    p.set_defaults(func=cmd_identity)

    p = sub.add_parser("doctor", help="check the installation and explain each fix (exit 0 only if all pass)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)
