"""``mempal doctor``: the checks a client can make without opening the store or loading the model (the
configuration, the daemon and its socket, the data directory, hooks, MCP, disk space); every failed check says
how to fix it. ``mempald doctor`` adds the store, the model and the watch limit."""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

from mempal.connection import DaemonUnavailable, call
from mempal.paths import locate
from mempald.config import ConfigError, Settings, config_path, data_dir, load_settings


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    warning: bool = False


def _perm(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def check_config() -> tuple[Check, Settings | None]:
    try:
        s = load_settings()
    except ConfigError as exc:
        return Check("config", False, str(exc), f"edit {config_path()} (`mempal config edit`)"), None
    return Check("config", True, f"{config_path()} is valid" if config_path().exists() else "defaults"), s


def check_daemon() -> tuple[Check, dict[str, object] | None]:
    try:
        st = call("status", {}, timeout=5)
    except (DaemonUnavailable, OSError) as exc:
        fix = "run `mempald`, or `mempald install-service` to start it at login"
        return Check("daemon", False, str(exc), fix), None
    except Exception as exc:
        return Check("daemon", False, f"it answered with an error: {exc}", "see `mempal logs`"), None
    return Check("daemon", True, f"pid {st.get('pid')}, {st.get('drawers')} drawers, model {st.get('model')}"), st


def check_socket() -> Check:
    found = locate()  # where a client looks (the variables, the daemon's pointer, the default), as clients do
    sock = Path(found.socket)
    if not sock.exists():
        return Check("socket", False, f"{sock} does not exist (found by {found.how})", "start the daemon")
    dmode, smode = _perm(sock.parent), _perm(sock)
    ok = dmode & 0o077 == 0 and smode & 0o077 == 0
    return Check("socket permissions", ok, f"{sock} {smode:o} in {dmode:o}",
                 f"chmod 700 {sock.parent}; restart the daemon")


def check_data_dir() -> Check:
    d = data_dir()
    if not d.exists():
        return Check("data dir", True, f"{d} will be created on first start")
    st = d.stat()
    ok = st.st_uid == os.getuid() and os.access(d, os.W_OK)
    return Check("data dir", ok, f"{d} (mode {_perm(d):o}, owner uid {st.st_uid})",
                 f"chown -R $USER {d}; chmod 700 {d}")


def check_hooks() -> Check:
    settings = Path.home() / ".claude" / "settings.json"
    try:
        text = settings.read_text()
    except OSError:
        text = ""
    ok = "mempal-hook" in text
    return Check("Claude Code hooks", ok, f"{'installed in' if ok else 'not in'} {settings}",
                 "mempal install-hooks", warning=not ok)


def check_mcp() -> Check:
    found = []
    for p in (Path.home() / ".claude.json", Path.cwd() / ".mcp.json"):
        try:
            if "mempal" in json.dumps(json.loads(p.read_text()).get("mcpServers", {})):
                found.append(str(p))
        except (OSError, ValueError, AttributeError):
            continue
    return Check("MCP server", bool(found), ", ".join(found) or "not registered", "mempal install-mcp",
                 warning=not found)


def check_disk() -> Check:
    d = data_dir()
    probe = d if d.exists() else Path.home()
    free = shutil.disk_usage(probe).free
    return Check("disk space", free > 1e9, f"{free / 1e9:.1f} GB free at {probe}", "free some disk space")


def run_client_checks() -> tuple[list[Check], Settings | None, bool]:
    """The client's checks, the settings (None if the config is broken) and whether the daemon answered."""
    cfg, settings = check_config()
    daemon, st = check_daemon()
    out = [cfg, daemon, check_socket() if st else Check("socket", False, "daemon not running", "start mempald"),
           check_data_dir(), check_hooks(), check_mcp(), check_disk()]
    return out, settings, st is not None


def print_checks(results: list[Check], *, as_json: bool = False) -> int:
    if as_json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        for r in results:
            mark = "ok  " if r.ok else ("warn" if r.warning else "FAIL")
            print(f"[{mark}] {r.name}: {r.detail}")
            if not r.ok and r.fix:
                print(f"       fix: {r.fix}")
    return 0 if all(r.ok or r.warning for r in results) else 1


def run(as_json: bool) -> int:
    results, _settings, running = run_client_checks()
    if running:
        results.append(Check("store and model", True, "opened by the running daemon (`mempald doctor` checks them "
                                                      "in depth)"))
    else:
        results.append(Check("store and model", False, "not checked: the daemon is down and this client never opens "
                                                       "the store", "run `mempald doctor`", warning=True))
    return print_checks(results, as_json=as_json)
