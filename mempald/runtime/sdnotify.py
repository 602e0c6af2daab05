"""The sd_notify protocol, from the standard library only.

systemd starts a ``Type=notify`` service with ``NOTIFY_SOCKET`` in its environment: the path of a
datagram Unix socket (or, when it starts with ``@``, a name in the abstract namespace). The service
sends newline-separated ``KEY=VALUE`` assignments to it: ``READY=1`` once it serves, ``STOPPING=1``
when it begins to shut down, ``WATCHDOG=1`` at least every ``WATCHDOG_USEC`` microseconds when the
unit sets ``WatchdogSec=``, and free-form ``STATUS=`` text shown by ``systemctl status``.

Everything here is a no-op returning ``False`` when ``NOTIFY_SOCKET`` is unset (a foreground run,
launchd, tests), and nothing ever raises: a failed notification must not take the daemon down.
The caller decides whether a ``False`` is worth a log line; this module does no logging.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping

__all__ = ["Notifier"]

# A datagram to a Unix socket only blocks while the receiver's queue is full. systemd drains it at
# once, so this bound only matters if something is badly wrong; it keeps a caller on the event loop
# from hanging there.
_SEND_TIMEOUT = 1.0


class Notifier:
    """Sends sd_notify messages for this process.

    ``environ`` defaults to ``os.environ`` and is read once, here. ``pid`` (default: this process)
    is compared with ``WATCHDOG_PID`` the way ``sd_watchdog_enabled()`` does, so a child that
    inherited the variables does not believe the watchdog is its business.
    """

    def __init__(self, environ: Mapping[str, str] | None = None, *, pid: int | None = None) -> None:
        env = os.environ if environ is None else environ
        self._address = _parse_address(env.get("NOTIFY_SOCKET", ""))
        self._watchdog_usec = _parse_watchdog(env, os.getpid() if pid is None else pid)

    def __repr__(self) -> str:
        return f"Notifier(address={self._address!r}, watchdog_usec={self._watchdog_usec!r})"

    @property
    def enabled(self) -> bool:
        """True when a service manager is listening (``NOTIFY_SOCKET`` names a usable socket)."""
        return self._address is not None

    def watchdog_interval(self) -> float | None:
        """Seconds between watchdog pings (half of ``WATCHDOG_USEC``), or None when not asked for."""
        if self._address is None or self._watchdog_usec is None:
            return None
        return self._watchdog_usec / 2 / 1_000_000

    def notify(self, message: str) -> bool:
        """Send one raw message (``KEY=VALUE`` lines). True if it was handed to the socket."""
        address = self._address
        if address is None:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.settimeout(_SEND_TIMEOUT)
                sock.sendto(message.encode("utf-8", "replace"), address)
        except (OSError, ValueError):
            return False
        return True

    def ready(self, status: str = "") -> bool:
        """Tell the manager the service is up (after the socket is bound)."""
        return self.notify("READY=1" + (f"\nSTATUS={_one_line(status)}" if status else ""))

    def reloading(self) -> bool:
        """Announce a configuration reload; send :meth:`ready` when it is done.

        ``MONOTONIC_USEC`` is included as ``Type=notify-reload`` (systemd 253+) requires; older
        managers ignore it.
        """
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self.notify(f"RELOADING=1\nMONOTONIC_USEC={usec}")

    def stopping(self) -> bool:
        """Announce the start of an orderly shutdown."""
        return self.notify("STOPPING=1")

    def status(self, text: str) -> bool:
        """Set the one-line status shown by ``systemctl status``."""
        return self.notify(f"STATUS={_one_line(text)}")

    def watchdog(self) -> bool:
        """Keep-alive ping; send one every :meth:`watchdog_interval` seconds."""
        return self.notify("WATCHDOG=1")

    def extend_timeout(self, seconds: float) -> bool:
        """Ask for more time to start or stop (e.g. while the embedding model is assembled)."""
        return self.notify(f"EXTEND_TIMEOUT_USEC={max(0, round(seconds * 1_000_000))}")


def _parse_address(value: str) -> str | None:
    if value.startswith("/"):
        return value
    if value.startswith("@") and len(value) > 1:
        # Linux abstract namespace: the leading NUL byte replaces the '@'.
        return "\0" + value[1:]
    # Unset, empty, relative, or a transport this module does not speak (e.g. "vsock:...").
    return None


def _parse_watchdog(env: Mapping[str, str], pid: int) -> int | None:
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0:
        return None
    owner = env.get("WATCHDOG_PID")
    if owner:
        try:
            if int(owner) != pid:
                return None
        except ValueError:
            return None
    return usec


def _one_line(text: str) -> str:
    # A newline would start a new assignment; the protocol has no escaping.
    return " ".join(text.splitlines())
