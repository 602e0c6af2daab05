"""Install mempald as a per-user service: a systemd user unit on Linux, a LaunchAgent on macOS.

``mempald install-service [--dry-run]`` renders the file for this platform (``service_files``) with the real
path of the installed executable, writes it, and enables and starts it; ``uninstall-service`` undoes that.
Both print every action. The command runner is injectable so tests never touch a real manager.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from mempald.runtime.service_files import LAUNCHD_LABEL, UNIT_NAME, render_launchd_plist, render_systemd_unit

__all__ = [
    "default_path_env",
    "install_service",
    "launchd_log_dir",
    "plist_path",
    "resolve_executable",
    "uninstall_service",
    "unit_path",
]

Runner = Callable[[list[str]], int]


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
