"""Install mempald as a per-user service: a systemd user unit on Linux, a LaunchAgent on macOS.

``mempald install-service [--dry-run]`` renders the file for this platform with the real path of
the installed executable, writes it, and enables and starts it; ``uninstall-service`` undoes that.
Both print every action. The command runner is injectable so tests never touch a real manager.

The templates live here, not only in the repository's ``systemd/`` and ``launchd/`` folders,
because those folders are not part of the wheel; a unit test checks that the two copies agree.

Exit codes of the daemon, which the unit relies on (``RestartPreventExitStatus=``):

    0  clean shutdown
    2  bad configuration            (restarting cannot help)
    3  never started (e.g. the socket could not be bound; may be transient, so it is retried)
    4  another instance is running (restarting cannot help)
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "LAUNCHD_LABEL",
    "LAUNCHD_TEMPLATE",
    "SYSTEMD_TEMPLATE",
    "UNIT_NAME",
    "default_path_env",
    "install_service",
    "launchd_log_dir",
    "plist_path",
    "render_launchd_plist",
    "render_systemd_unit",
    "resolve_executable",
    "uninstall_service",
    "unit_path",
]

UNIT_NAME = "mempald.service"
LAUNCHD_LABEL = "com.mempal.mempald"

Runner = Callable[[list[str]], int]

# Placeholders: @EXEC@ is the command that starts the daemon (already quoted for systemd),
# @DATA_DIR@ and @CONFIG_DIR@ are ReadWritePaths= entries.
SYSTEMD_TEMPLATE = """\
# mempald: local-first memory daemon for AI coding agents (systemd user unit).
# Installed by `mempald install-service`; remove with `mempald uninstall-service`.
# Logs: journalctl --user -u mempald
#
# Daemon exit codes: 0 clean shutdown, 2 bad configuration, 3 never started,
# 4 another instance running. 2 and 4 are not retried: restarting cannot fix them.

[Unit]
Description=mempald memory daemon for AI coding agents
# Stop retrying after 5 failed starts in 5 minutes (a crash loop), instead of forever.
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
# READY=1 is sent once the socket is bound, STOPPING=1 when shutdown begins, and WATCHDOG=1
# every WatchdogSec/2 seconds; only the main process may notify.
Type=notify
NotifyAccess=main
ExecStart=@EXEC@ run
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=5
RestartPreventExitStatus=2 4
WatchdogSec=60
TimeoutStopSec=30
Environment=PYTHONUNBUFFERED=1
# The data directory holds private conversations: files it creates are for this user only.
UMask=0077

# --- Sandboxing ---------------------------------------------------------------------------
# A user manager can only apply the file-system options below inside a user namespace, so
# PrivateUsers= is set explicitly (systemd 253 and later imply it; 252 and earlier silently
# ignore the options without it). If this unit fails with status 218/USER or 226/NAMESPACE
# because unprivileged user namespaces are disabled (e.g. Ubuntu 24.04's
# kernel.apparmor_restrict_unprivileged_userns=1), `systemctl --user edit mempald` and add:
#   [Service]
#   PrivateUsers=no
#   PrivateTmp=no
#   ProtectSystem=no
#   ProtectHome=no
#   ProtectKernelTunables=no
#   ProtectControlGroups=no
PrivateUsers=yes
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=strict
# read-only, not yes: the daemon must still read every watched folder (transcripts under
# ~/.claude and ~/.codex, export folders, code repositories). Only its own directories are
# writable; the leading '-' keeps a missing one from failing the start (install-service
# creates them).
ProtectHome=read-only
ReadWritePaths=@DATA_DIR@ @CONFIG_DIR@
# %t/mempald (the socket directory, $XDG_RUNTIME_DIR/mempald), created 0700 and writable.
RuntimeDirectory=mempald
RuntimeDirectoryMode=0700
ProtectKernelTunables=yes
ProtectControlGroups=yes
# AF_UNIX: the client socket and sd_notify. AF_INET/AF_INET6: a Qdrant server (store.url) and
# fetching a fastembed model named in config; the default embedded setup makes no TCP
# connection. inotify is a system call, not a socket, so AF_NETLINK is not needed.
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
# Left off on purpose: W^X enforcement kills a process that maps writable+executable memory,
# which libffi trampolines (ctypes callbacks) and onnxruntime's generated kernels may do.
MemoryDenyWriteExecute=no
SystemCallArchitectures=native

[Install]
WantedBy=default.target
"""

_LAUNCHD_EXEC = "@EXEC@"
_LAUNCHD_LOG_DIR = "@LOG_DIR@"
_LAUNCHD_PATH = "@PATH@"


def _launchd_dict(program: Sequence[str], log_dir: str, path_env: str) -> dict[str, Any]:
    return {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": [*program, "run"],
        "RunAtLoad": True,
        # Restart after a crash or a non-zero exit; a clean exit (0, e.g. `mempal stop`) stays down.
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        # SIGTERM, then SIGKILL after this many seconds (matches the systemd TimeoutStopSec=).
        "ExitTimeOut": 30,
        "ProcessType": "Background",
        "StandardOutPath": f"{log_dir}/mempald.out.log",
        "StandardErrorPath": f"{log_dir}/mempald.err.log",
        "EnvironmentVariables": {"PATH": path_env, "PYTHONUNBUFFERED": "1"},
    }


LAUNCHD_TEMPLATE: bytes = plistlib.dumps(_launchd_dict([_LAUNCHD_EXEC], _LAUNCHD_LOG_DIR, _LAUNCHD_PATH))
"""The LaunchAgent with placeholders, as stored in ``launchd/com.mempal.mempald.plist``."""


# ---------------------------------------------------------------------------------------------
# Rendering


def _systemd_word(word: str, *, expands_vars: bool) -> str:
    """Quote one word for a unit file so systemd reads it back unchanged.

    ``%`` (specifiers) is always doubled; ``$`` only where systemd expands variables (command
    arguments, not the executable itself). A word with spaces or quotes is double-quoted with
    backslashes and double quotes escaped.
    """
    escaped = word.replace("%", "%%")
    if expands_vars:
        escaped = escaped.replace("$", "$$")
    if escaped and not any(c.isspace() or c in "\\\"'" for c in escaped):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _systemd_command(words: Sequence[str]) -> str:
    exe = words[0]
    # systemd refuses an executable path with control characters, quotes or backslashes
    # ("Executable name contains special characters"), however it is quoted.
    if any(ord(c) < 0x20 or c in "\x7f\\\"'" for c in exe):
        raise ValueError(
            "systemd cannot start an executable whose path contains quotes, backslashes "
            f"or control characters: {exe!r}"
        )
    return " ".join(
        [_systemd_word(exe, expands_vars=False), *(_systemd_word(w, expands_vars=True) for w in words[1:])]
    )


def _exec_words(exec_path: str | Sequence[str]) -> list[str]:
    return [exec_path] if isinstance(exec_path, str) else list(exec_path)


def render_systemd_unit(
    exec_path: str | Sequence[str],
    *,
    data_dir: str | None = None,
    config_dir: str | None = None,
) -> str:
    """The user unit for ``exec_path`` (an absolute executable, or an argv such as
    ``[python, "-m", "mempald"]``). ``data_dir``/``config_dir`` default to
    ``%h/.local/share/mempald`` and ``%h/.config/mempald``; explicit paths are escaped."""
    words = _exec_words(exec_path)
    if not words or not os.path.isabs(words[0]):
        raise ValueError(f"ExecStart needs an absolute executable path, got {words!r}")
    command = _systemd_command(words)
    return (
        SYSTEMD_TEMPLATE.replace("@EXEC@", command)
        .replace("@DATA_DIR@", _rw_path(data_dir, "%h/.local/share/mempald"))
        .replace("@CONFIG_DIR@", _rw_path(config_dir, "%h/.config/mempald"))
    )


def _rw_path(path: str | None, default: str) -> str:
    # '-': a missing directory does not fail the start (the daemon then reports it clearly).
    if path is None:
        return "-" + default
    if not os.path.isabs(path):
        raise ValueError(f"ReadWritePaths= needs an absolute path, got {path!r}")
    return _systemd_word("-" + path, expands_vars=False)


def render_launchd_plist(exec_path: str | Sequence[str], *, log_dir: str, path_env: str) -> bytes:
    """The LaunchAgent plist (XML) for ``exec_path``."""
    words = _exec_words(exec_path)
    if not words or not os.path.isabs(words[0]):
        raise ValueError(f"ProgramArguments needs an absolute executable path, got {words!r}")
    return plistlib.dumps(_launchd_dict(words, log_dir, path_env))


# ---------------------------------------------------------------------------------------------
# Paths


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var, "")
    # The XDG spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / default


def unit_path() -> Path:
    """``$XDG_CONFIG_HOME/systemd/user/mempald.service`` (``~/.config`` when unset)."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "systemd" / "user" / UNIT_NAME


def plist_path() -> Path:
    """``~/Library/LaunchAgents/com.mempal.mempald.plist``."""
    return Path.home() / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"


def launchd_log_dir() -> Path:
    """``~/Library/Logs/mempald``."""
    return Path.home() / "Library" / "Logs" / "mempald"


def _linux_dirs() -> tuple[Path, Path]:
    return _xdg("XDG_DATA_HOME", ".local/share") / "mempald", _xdg("XDG_CONFIG_HOME", ".config") / "mempald"


def resolve_executable() -> list[str]:
    """The command that starts this installation of mempald, as an absolute argv.

    Order: the running ``mempald`` script (``sys.argv[0]``, so a venv that is not on PATH still
    installs itself), then ``mempald`` on PATH, then ``[sys.executable, "-m", "mempald"]``.
    Paths are made absolute but symlinks are kept: resolving them would pin a versioned target
    (a Homebrew Cellar or Nix store path, a venv's python) that an upgrade removes.
    """
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and Path(argv0).name == "mempald" and os.path.isfile(argv0) and os.access(argv0, os.X_OK):
        return [os.path.abspath(argv0)]
    found = shutil.which("mempald")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "mempald"]


def default_path_env(exec_words: Sequence[str]) -> str:
    """PATH for the LaunchAgent: launchd gives jobs only /usr/bin:/bin:/usr/sbin:/sbin, so add the
    executable's own directory and Homebrew's, which is where git and friends usually live."""
    candidates = [
        os.path.dirname(exec_words[0]),
        "/opt/homebrew/bin",
        "/usr/local/bin",
        "/usr/bin",
        "/bin",
        "/usr/sbin",
        "/sbin",
    ]
    seen: list[str] = []
    for c in candidates:
        if c and c not in seen:
            seen.append(c)
    return ":".join(seen)


# ---------------------------------------------------------------------------------------------
# Install / uninstall


def _default_run(cmd: list[str]) -> int:
    try:
        return subprocess.run(cmd, check=False).returncode
    except OSError as exc:  # e.g. systemctl / launchctl not installed
        print(f"  cannot run {cmd[0]}: {exc}", file=sys.stderr)
        return 127


def _fmt(cmd: Sequence[str]) -> str:
    return shlex.join(cmd)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _manager(platform: str) -> str | None:
    if platform.startswith("linux"):
        return "systemd"
    if platform == "darwin":
        return "launchd"
    return None


def _unsupported(platform: str, out: TextIO) -> int:
    print(
        f"install-service supports Linux (systemd) and macOS (launchd), not {platform!r}; "
        "start the daemon with `mempald run` from your own supervisor instead.",
        file=out,
    )
    return 1


def _gui_domain() -> str:
    return f"gui/{os.getuid()}"


def install_service(
    *,
    dry_run: bool,
    out: TextIO | None = None,
    run: Runner = _default_run,
    platform: str | None = None,
    exec_path: Sequence[str] | None = None,
) -> int:
    """Write, enable and start the service for this platform. Returns a process exit code.

    With ``dry_run`` it prints the file and the commands and changes nothing. ``platform``
    (default ``sys.platform``) and ``exec_path`` (default :func:`resolve_executable`) exist for
    tests. On a re-install a running service is restarted so the new file takes effect.
    ``out`` defaults to the current ``sys.stdout``.
    """
    out = sys.stdout if out is None else out
    plat = sys.platform if platform is None else platform
    manager = _manager(plat)
    if manager is None:
        return _unsupported(plat, out)
    words = list(exec_path) if exec_path is not None else resolve_executable()
    try:
        return _install(manager, words, dry_run=dry_run, out=out, run=run)
    except ValueError as exc:  # an executable path the service manager cannot start
        print(f"Cannot install the service: {exc}", file=out)
        return 1


def _install(manager: str, words: list[str], *, dry_run: bool, out: TextIO, run: Runner) -> int:
    if manager == "systemd":
        target = unit_path()
        data_dir, config_dir = _linux_dirs()
        home = Path.home()
        content = render_systemd_unit(
            words,
            # Keep the portable %h form when the directories are the defaults.
            data_dir=None if data_dir == home / ".local/share/mempald" else str(data_dir),
            config_dir=None if config_dir == home / ".config/mempald" else str(config_dir),
        ).encode()
        make_dirs = [data_dir, config_dir]
        systemctl = ["systemctl", "--user"]
        commands: list[tuple[list[str], bool]] = [([*systemctl, "daemon-reload"], True)]
        if target.exists() and target.read_bytes() != content:
            # Restart only if running (picks up a new executable path); enable --now starts it otherwise.
            commands.append(([*systemctl, "try-restart", UNIT_NAME], True))
        commands.append(([*systemctl, "enable", "--now", UNIT_NAME], True))
    else:
        target = plist_path()
        log_dir = launchd_log_dir()
        content = render_launchd_plist(words, log_dir=str(log_dir), path_env=default_path_env(words))
        make_dirs = [log_dir]  # launchd does not create the log folder itself
        domain = _gui_domain()
        commands = []
        if target.exists():
            # bootstrap refuses a job that is already loaded; unload the old one first.
            commands.append((["launchctl", "bootout", f"{domain}/{LAUNCHD_LABEL}"], False))
        commands.append((["launchctl", "enable", f"{domain}/{LAUNCHD_LABEL}"], True))
        commands.append((["launchctl", "bootstrap", domain, str(target)], True))

    if dry_run:
        print(f"Would write {target}:", file=out)
        print(content.decode(), file=out)
        for d in make_dirs:
            print(f"Would create {d}/", file=out)
        for cmd, _ in commands:
            print(f"Would run: {_fmt(cmd)}", file=out)
        return 0

    for d in make_dirs:
        # 0700: the data directory holds private conversations (parents get the usual mode).
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    _write_atomic(target, content)
    print(f"Wrote {target}", file=out)
    for cmd, required in commands:
        print(f"Running: {_fmt(cmd)}", file=out)
        rc = run(cmd)
        if rc != 0:
            if not required:
                print(f"  (exit {rc}, ignored: nothing was loaded)", file=out)
                continue
            print(f"  failed with exit {rc}", file=out)
            if manager == "systemd":
                print(
                    "  Is a systemd user session running? Check `systemctl --user status`; "
                    f"the unit is written at {target}.",
                    file=out,
                )
            return 1
    if manager == "systemd":
        print("Started mempald.service; logs: journalctl --user -u mempald", file=out)
        _linger_hint(out)
    else:
        print(f"Started {LAUNCHD_LABEL}; logs in {launchd_log_dir()}/", file=out)
    return 0


def _linger_hint(out: TextIO) -> None:
    user = os.environ.get("USER") or os.environ.get("LOGNAME")
    linger = Path("/var/lib/systemd/linger")
    if user and linger.is_dir() and not (linger / user).exists():
        print(
            "Note: user services stop when your last session ends; "
            "run `loginctl enable-linger` to keep mempald running.",
            file=out,
        )


def uninstall_service(
    *,
    dry_run: bool,
    out: TextIO | None = None,
    run: Runner = _default_run,
    platform: str | None = None,
) -> int:
    """Stop and disable the service and remove its file. Returns a process exit code.

    Nothing installed is not an error (exit 0). A failing command is reported, the file is still
    removed, and the exit code is 1. ``out`` defaults to the current ``sys.stdout``.
    """
    out = sys.stdout if out is None else out
    plat = sys.platform if platform is None else platform
    manager = _manager(plat)
    if manager is None:
        return _unsupported(plat, out)
    if manager == "systemd":
        target = unit_path()
        before = [["systemctl", "--user", "disable", "--now", UNIT_NAME]]
        after = [["systemctl", "--user", "daemon-reload"]]
    else:
        target = plist_path()
        before = [["launchctl", "bootout", f"{_gui_domain()}/{LAUNCHD_LABEL}"]]
        after = []

    if not target.exists():
        print(f"Nothing to do: {target} does not exist.", file=out)
        return 0
    if dry_run:
        for cmd in before:
            print(f"Would run: {_fmt(cmd)}", file=out)
        print(f"Would remove {target}", file=out)
        for cmd in after:
            print(f"Would run: {_fmt(cmd)}", file=out)
        return 0

    status = 0
    for cmd in before:
        print(f"Running: {_fmt(cmd)}", file=out)
        rc = run(cmd)
        if rc != 0:
            print(f"  failed with exit {rc}", file=out)
            status = 1
    target.unlink(missing_ok=True)
    print(f"Removed {target}", file=out)
    for cmd in after:
        print(f"Running: {_fmt(cmd)}", file=out)
        rc = run(cmd)
        if rc != 0:
            print(f"  failed with exit {rc}", file=out)
            status = 1
    return status
