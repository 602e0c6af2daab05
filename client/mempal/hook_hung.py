"""A hung daemon, as the hooks see it: one that takes connections (its socket's backlog does) but does not
answer, as a stopped (SIGSTOP) or deadlocked process does. Without this, each hook would wait its whole
timeout, every time: 3 s on every prompt, 2 s on every file touch.

The first hook whose call times out leaves a marker, ``HUNG_MARK`` in the runtime dir (when, and which method).
While it is there, a hook skips the daemon at the cost of a ``stat``; at most one hook every ``PROBE_EVERY``
seconds (the marker's mtime, touched by the prober) probes it with a ``ping`` that waits ``PROBE_WAIT`` at
most. An answer removes the marker, so the daemon recovering is noticed within about a second of use; so does
finding nobody listening (a daemon that is down is refused in a millisecond, no marker needed). Nothing runs
in the background, and nothing outlives the hook. Stdlib only, nothing slow to import (``mempal.hook``).
"""

from __future__ import annotations

import os
import time

from mempal.connection import Connection
from mempal.paths import runtime_dir_str

HUNG_MARK = "daemon-hung"
PROBE_EVERY = 1.0
PROBE_WAIT = 0.02


def timed_out(exc: BaseException) -> bool:
    """Did the daemon take the connection or the request and then not answer in time?"""
    return isinstance(exc, TimeoutError) or isinstance(exc.__cause__, TimeoutError)


def mark_path() -> str:
    return os.path.join(runtime_dir_str(), HUNG_MARK)


def mark_hung(method: str) -> None:
    """Record that the daemon did not answer ``method`` in time (when, and what): the next hooks skip it."""
    try:
        with open(mark_path(), "w", encoding="utf-8") as fh:
            fh.write(f"{time.time():.3f} {method}\n")
    except OSError:
        pass


def clear_hung() -> None:
    try:  # noqa: SIM105 (contextlib would cost the hook's start)
        os.unlink(mark_path())
    except OSError:
        pass


def skip_daemon() -> bool:
    """True while the daemon is marked hung and does not answer. No marker: False at the cost of a ``stat``. A
    marker younger than PROBE_EVERY: True at once. Older: this hook probes (the marker is touched first, so
    the hooks meanwhile skip at once)."""
    path = mark_path()
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        return False
    if 0 <= age < PROBE_EVERY:
        return True
    try:
        os.utime(path)
    except OSError:
        return False
    probe = None
    try:
        probe = Connection(timeout=PROBE_WAIT)
        probe.call("ping", {})
    except BaseException as exc:
        if timed_out(exc):
            return True
    finally:
        if probe is not None:
            probe.close()
    clear_hung()
    return False
