"""The service files for mempald: the systemd user unit (Linux) and the LaunchAgent plist (macOS), rendered.

The templates live here, not only in the repository's ``systemd/`` and ``launchd/`` folders,
because those folders are not part of the wheel; a unit test checks that the two copies agree.
``mempald.runtime.service`` writes the rendered file and drives the service manager.

Exit codes of the daemon, which the unit relies on (``RestartPreventExitStatus=``):

    0  clean shutdown
    2  bad configuration            (restarting cannot help)
    3  never started (e.g. the socket could not be bound; may be transient, so it is retried)
    4  another instance is running (restarting cannot help)
"""

from __future__ import annotations

import os
import plistlib
from collections.abc import Sequence
from typing import Any

__all__ = [
    "LAUNCHD_LABEL",
    "LAUNCHD_TEMPLATE",
    "SYSTEMD_TEMPLATE",
    "UNIT_NAME",
    "render_launchd_plist",
    "render_systemd_unit",
]

UNIT_NAME = "mempald.service"
LAUNCHD_LABEL = "com.mempal.mempald"

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
# every WatchdogSec/2 seconds; only the main process may notify. While it opens, the daemon asks
# for 60 s more every 20 s (EXTEND_TIMEOUT_USEC): a large store may take longer than the 90 s default.
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

