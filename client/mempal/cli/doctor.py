"""``mempal doctor``: the checks a client can make without opening the store or loading the model (the
configuration, the daemon and its socket, the data directory, hooks, MCP, disk space); every failed check says
how to fix it. The hooks (of every agent mempal installs hooks for) are checked by running each installed command
with ``--probe``: a command that cannot start the hook (its package moved) is reported as a broken hook path.
``mempald doctor`` adds the store, the model and the watch limit."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from mempal.cli.doctor_hooks import Installed, installed
from mempal.cli.doctor_hooks import hook_groups as _ours
from mempal.connection import DaemonUnavailable, call
from mempal.hook import PROBE_FLAG
from mempal.hook_hung import mark_path
from mempal.install import claude_settings_path, codex_hooks_path, hook_entries, is_ours
from mempal.install_files import InstallError, read_json
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
    if st.get("drawers") is None:  # a store on a server that does not answer (the daemon runs without it)
        why = str((st.get("warnings") or ["the store does not answer"])[0])  # (status lists the store's reason first)
        return Check("daemon", False, f"pid {st.get('pid')}, running without its store: {why}",
                     "start the Qdrant server or fix store.url (or do what the reason says, then restart mempald); "
                     "what is read meanwhile waits in the local outbox",
                     warning=True), st
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


HOOK_PROBE_TIMEOUT_S = 10.0  # one hook command's start, probed (a cold interpreter on a busy machine included)


def broken_fix(install: str) -> str:
    return (f"{install}, run with the Python whose `mempal` you use: the commands name an interpreter and a package "
            "folder that no longer start the hook (`pip install -e` after `pip install .` moves the package; a venv "
            "was removed)")


BROKEN_FIX = broken_fix("mempal install-hooks")


def probe_hook(command: str) -> str | None:
    """Run an installed hook command as its host would, with ``--probe`` (the hook then says it started and
    does nothing else): None when it runs, else what went wrong."""
    try:
        res = subprocess.run(f"{command} {PROBE_FLAG}", shell=True, stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=HOOK_PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"did not start within {HOOK_PROBE_TIMEOUT_S:g}s"
    except OSError as exc:
        return str(exc)
    if res.returncode == 0 and res.stdout.startswith("mempal-hook ok"):
        return None
    said = [ln for ln in res.stderr.splitlines() if ln.strip()]
    return f"exit {res.returncode}" + (f": {said[-1].strip()[:300]}" if said else " without the probe's answer "
                                       "(a hook of an older release, or another program)")


def check_hook_file(name: str, path: Path, agent: str) -> Check | None:
    """mempal's hooks in one settings file: none (None), or whether each command runs and whether they are
    this release's (every event, the matchers)."""
    try:
        settings = read_json(path)
    except InstallError as exc:
        return Check(name, False, str(exc), f"fix {path} by hand, then mempal install-hooks")
    ours = _ours(settings)
    if not ours:
        return None
    commands = [(event, str(h["command"])) for event, groups in ours.items() for g in groups for h in g["hooks"]
                if is_ours(h)]
    broken = [(event, why) for event, cmd in commands if (why := probe_hook(cmd)) is not None]
    if broken:
        shown = "; ".join(f"{event}: {why}" for event, why in broken[:3])
        return Check(name, False, f"the hook path is broken: {len(broken)} of {len(commands)} hook commands in "
                                  f"{path} do not run ({shown})", BROKEN_FIX)
    wanted = hook_entries("mempal-hook", agent)
    stale = sorted(event for event, groups in wanted.items()
                   if [g.get("matcher") for g in ours.get(event, [])] != [g.get("matcher") for g in groups])
    if stale:
        return Check(name, False, f"{len(commands)} hook commands in {path} run, but differ from this release's "
                                  f"for {', '.join(stale)}", "mempal install-hooks", warning=True)
    return Check(name, True, f"{len(commands)} hook commands in {path}, each probed: they run")


def check_installed(found: Installed) -> Check:
    """One agent's hooks (``mempal.cli.doctor_hooks``): each command run with ``--probe`` as the agent runs it,
    and its events beside this release's."""
    if found.error:
        return Check(found.name, False, found.error, f"fix {found.where} by hand, then {found.fix}")
    n = len(found.commands)
    broken = [(event, why) for event, cmd in found.commands if (why := probe_hook(cmd)) is not None]
    if broken:
        shown = "; ".join(f"{event}: {why}" for event, why in broken[:3])
        return Check(found.name, False, f"the hook path is broken: {len(broken)} of {n} hook commands in "
                                        f"{found.where} do not run ({shown})", broken_fix(found.fix))
    events = found.events
    differ = [f"{what} {', '.join(sorted(names))}" for what, names in (
        ("missing", found.wanted - events), ("not this release's", events - found.wanted),
        ("written by an earlier release (they cannot be probed)", set(found.unprobed))) if names]
    if differ:
        return Check(found.name, False, f"{n} hook commands in {found.where} run, but differ from this release's: "
                                        f"{'; '.join(differ)}", found.fix, warning=True)
    return Check(found.name, True, f"{n} hook commands in {found.where}, each probed: they run")


def check_hooks() -> list[Check]:
    """Claude Code's hooks (user settings, and this project's when it has mempal's), Codex's, Gemini CLI's,
    Antigravity's, Cursor's and Cline's when installed: found by their commands, each run with ``--probe``."""
    user = claude_settings_path("user")
    found = [c for c in (check_hook_file("Claude Code hooks", user, "claude"),
                         check_hook_file("Claude Code hooks (project)", claude_settings_path("project"), "claude")
                         if claude_settings_path("project") != user else None,
                         check_hook_file("Codex hooks", codex_hooks_path("user"), "codex")) if c is not None]
    if not any(c.name.startswith("Claude Code") for c in found):
        found.insert(0, Check("Claude Code hooks", False, f"not in {user}", "mempal install-hooks", warning=True))
    found += [check_installed(f) for f in installed()]
    hung = check_hung_marker()
    return found + ([hung] if hung is not None else [])


def check_hung_marker() -> Check | None:
    """The hooks' marker of a daemon that did not answer (``mempal.hook_hung``): while it is there, hooks skip
    the daemon (until it answers a probe)."""
    marker = Path(mark_path())
    try:
        when, _, method = marker.read_text(encoding="utf-8").strip().partition(" ")
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(when)))
    except (OSError, ValueError):
        return None
    return Check("hooks and the daemon", False, f"hooks skip the daemon: it did not answer {method or 'a call'} in "
                 f"time at {since} ({marker}); the next hook probes it again", "if it stays: `mempal logs`, then "
                 "restart mempald", warning=True)


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


def check_sync() -> Check:
    """The sync folder (``mempal sync``): every segment of the other machines read, or what to do."""
    try:
        st = call("sync_status", {}, timeout=10)
    except Exception as exc:
        return Check("sync folder", False, f"the daemon did not say: {exc}", "see `mempal logs`", warning=True)
    problems = st.get("problems") or []
    if st.get("error"):
        return Check("sync folder", False, f"{st.get('dir')}: {st['error']}", "see `mempal sync status`")
    if problems:
        first = problems[0]
        return Check("sync folder", False, f"{len(problems)} segment(s) could not be read, e.g. {first['segment']}: "
                     f"{first['error']}", first["what_to_do"], warning=True)
    lag = sum(int(m.get("lag") or 0) for m in st.get("machines") or [])
    return Check("sync folder", True, f"{st.get('dir')}: {len(st.get('machines') or [])} machines, "
                 f"{lag} segments waiting, {st.get('outbox')} drawers to write")


def run_client_checks() -> tuple[list[Check], Settings | None, bool]:
    """The client's checks, the settings (None if the config is broken) and whether the daemon answered."""
    cfg, settings = check_config()
    daemon, st = check_daemon()
    out = [cfg, daemon, check_socket() if st else Check("socket", False, "daemon not running", "start mempald"),
           check_data_dir(), *check_hooks(), check_mcp(), check_disk()]
    if st is not None and settings is not None and settings.sync.dir:
        out.append(check_sync())
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
