"""The Stop hook and the transcript Claude Code writes asynchronously: when Stop fires, its last answer may not
be on disk yet. The input's ``last_assistant_message`` says what it is; the hook waits (at most
``LAST_ANSWER_WAIT``) until the transcript's end holds it before asking for the ingest, so the last answer is
never missing from what is stored. Stdlib only, nothing slow to import (``mempal.hook``)."""

from __future__ import annotations

import os
import time

from mempal import wirejson

LAST_ANSWER_WAIT = 3.0
LAST_ANSWER_TAIL = 256 * 1024  # bytes of the transcript's end searched for it
POLL_S = 0.05


def answer_needle(message: str) -> bytes | None:
    """What of ``message`` the transcript's JSON line holds verbatim: its last line of some length, JSON-escaped
    as Claude Code writes it (non-ASCII as is), at most 80 characters of it."""
    lines = [ln.strip() for ln in message.splitlines() if len(ln.strip()) >= 8]
    if not lines:
        return None
    return wirejson.dumps(lines[-1][-80:], ensure_ascii=False)[1:-1].encode("utf-8")


def await_last_answer(transcript: str, message: str) -> bool:
    """Wait (at most LAST_ANSWER_WAIT) until the transcript's end holds the last answer the host reported:
    Claude Code writes the transcript asynchronously, and may not have when Stop fires. True once it does."""
    needle = answer_needle(message)
    if needle is None:
        return True
    deadline = time.monotonic() + LAST_ANSWER_WAIT
    while True:
        try:
            with open(transcript, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                fh.seek(max(0, size - LAST_ANSWER_TAIL))
                if needle in fh.read():
                    return True
        except OSError:
            return False  # no such file: nothing to wait for
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
