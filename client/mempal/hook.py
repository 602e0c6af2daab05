"""``mempal-hook EVENT [--agent claude|codex|gemini|antigravity|cline]``: the hook commands the agents run (what
differs for Gemini CLI, Antigravity CLI and Cline, their input and output shapes, is in ``mempal.hook_agents``).

EVENT is one of:
- ``prompt`` (UserPromptSubmit): delivers this agent's cowork inbox for the cwd and, when enabled, the few
  memories relevant to the prompt (``recall``), as ``hookSpecificOutput.additionalContext``;
- ``session-start`` (SessionStart, every source: startup, resume, clear, compact, fork): the wake-up text (L0
  identity and the L1 story of this cwd's wing);
- ``stop`` (Stop): every ``hooks.stop_every`` turns, makes sure the transcript is ingested now; ``silent``
  mode says so in a short ``systemMessage``, ``ask`` mode blocks once asking the agent to save its key
  decisions through the MCP ``ingest`` tool (never when ``stop_hook_active``: no loops). Claude Code writes the
  transcript asynchronously: the input's ``last_assistant_message`` is waited for in the transcript
  (``mempal.hook_transcript``) before the ingest, so the last answer is never missing from it;
- ``precompact`` (PreCompact; ``session-end``, Gemini's SessionEnd): asks for the transcript's ingest (a
  notification, no reply awaited) and returns at once, printing nothing: ``/compact`` is never held up;
- ``postcompact`` (PostCompact): stores the input's ``compact_summary`` with its session (``compact_summary``);
- ``file`` (PreToolUse, matcher ``Read|Edit|Write|MultiEdit|NotebookEdit``): the file gate. The first time a
  session touches a file, the most important and recent earlier exchanges whose tool calls touched it (the
  daemon's ``file_context``, within ``FILE_TOKENS``), as ``hookSpecificOutput.additionalContext``. At most once
  per file per session (a marker file claimed atomically under the runtime dir; given back if the daemon did
  not answer). Claude Code passes a PreToolUse hook's additionalContext to the model from 2.1.9 on (older
  versions ignore it: nothing breaks); no ``permissionDecision`` is sent: the call takes the normal permission flow;
- ``rule`` (PreToolUse, every tool): the user's rules, checked before the tool runs (``mempal.hook_rules``).

Contract: read one JSON object from stdin, write stdout at most once at the end, exit 0 always. Any error,
a daemon that is down or slow, bad input: no output at all (fail open). A hard deadline below the installed
timeout guarantees an answer in time. A daemon that accepts connections but does not answer costs one hook its
timeout, once: the hooks after it skip it until it answers a probe (``mempal.hook_hung``). ``--probe`` after the
event (``mempal doctor``) says the command works, and nothing else. Stdlib only, and only the small ``client``
modules, so the interpreter starts and answers in tens of milliseconds (the prompt hook runs on every prompt):
nothing on its path imports ``json``, ``socket``, ``signal``, ``pathlib`` or ``typing`` (each brings ``re`` or
``enum``, 10-30 ms of a process's start; a unit test keeps it so). ``MEMPAL_HOOK_DEBUG=1`` prints errors.

Everything injected is wrapped in ``<mempal-context id="...">…</mempal-context>``: the normalizers drop
such spans, so injected context never comes back as memory. After writing its output, a hook that injected
something tells the daemon what (a ``hook_injected`` notification on the same connection, no reply awaited),
for the token figures in ``mempal status``.
"""

from __future__ import annotations

import os
import sys
import time

from mempal import wirejson
from mempal.connection import Connection
from mempal.hook_agents import adapt, agent_of, empty_reply, injection, joined, stop_reply
from mempal.hook_hung import mark_hung, skip_daemon, timed_out
from mempal.hook_rules import rule_handler
from mempal.hook_transcript import await_last_answer
from mempal.paths import runtime_dir_str
from mempal.utf16 import cut, units

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# the C module under ``signal`` (which imports enum): setitimer, SIGALRM and ITIMER_REAL are its own
_signal: Any = sys.modules.get("signal") or __import__("_signal")

# Must equal mempald.normalize.model.INJECT_OPEN / INJECT_CLOSE (a unit test checks); copied so a hook never
# imports the daemon's package.
INJECT_OPEN = "<mempal-context"
INJECT_CLOSE = "</mempal-context>"
# Claude Code passes additionalContext of this size whole (10,000 is its limit), counted as the host counts a
# string's length: in UTF-16 code units (an emoji is two), not in code points.
MAX_CONTEXT_CHARS = 9000

EVENTS = {"prompt": "UserPromptSubmit", "session-start": "SessionStart", "stop": "Stop", "precompact": "PreCompact",
          "postcompact": "PostCompact", "file": "PreToolUse", "rule": "PreToolUse", "session-end": "SessionEnd"}
# Hard deadline per event, in seconds: always below the timeout install-hooks writes (hooks/settings.json).
DEADLINES = {"prompt": 4.0, "session-start": 8.0, "stop": 25.0, "precompact": 2.0, "postcompact": 8.0,
             "file": 3.0, "rule": 2.0, "session-end": 2.0}
RECALL_TIMEOUT = 3.0
RECALL_BUDGET_MS = 1500  # the daemon stops searching after this and still delivers the inbox
WAKE_TIMEOUT = 6.0
CONFIG_TIMEOUT = 2.0
STOP_INGEST_TIMEOUT = 18.0  # with hook_config's and the last answer's waits, below the stop deadline
CONNECT_TIMEOUT = 0.5  # PreCompact's connection (a full backlog of a hung daemon's socket blocks a connect)
SUMMARY_TIMEOUT = 5.0
FILE_TIMEOUT = 2.0
FILE_TOKENS = 400  # model tokens the file gate injects at most
FILE_EXCHANGES = 3
FILE_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit")
COUNTER_DIR = "hook-turns"
SEEN_DIR = "hook-files"
COUNTER_MAX_AGE_S = 7 * 86400

ASK_REASON = (
    "mempal: {count} turns into this session. Before you stop, save the key decisions made so far with the "
    "mempal MCP `ingest` tool (mcp__mempal__ingest): one memory per firm decision, stating what was decided "
    "and why, with the file paths involved (memory_type \"decision\", importance 3-5, wing = this project). "
    "Skip what is already saved and anything tentative. Then stop; you will not be asked again for this turn."
)


class _Deadline(Exception):
    pass


def _on_alarm(_signum: int, _frame: object) -> None:
    raise _Deadline


def wrap(text: str) -> str:
    """``text`` inside a unique marker, whole result at most MAX_CONTEXT_CHARS UTF-16 code units."""
    tag = f'{INJECT_OPEN} id="{os.urandom(6).hex()}">'
    body = text.replace(INJECT_CLOSE, "[/mempal-context]").strip()
    room = MAX_CONTEXT_CHARS - len(tag) - len(INJECT_CLOSE) - 2
    if units(body) > room:
        body = cut(body, room - 1).rstrip() + "…"
    return f"{tag}\n{body}\n{INJECT_CLOSE}"


def context_room() -> int:
    """How much text (UTF-16 code units) fits inside the marker."""
    return MAX_CONTEXT_CHARS - len(wrap(""))


def _str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


class _Run:
    """This hook run's connection (the call, then the injection report) and what it injected."""

    conn: Connection | None = None
    injected: tuple[str, str] | None = None  # (event, text) to report once the output is written
    agent = "claude"  # who runs the hook (the output's shape)


_run = _Run()


def call(method: str, params: dict[str, Any], *, timeout: float) -> Any:
    if _run.conn is None:
        _run.conn = Connection(timeout=timeout)
    _run.conn.set_timeout(timeout)
    try:
        return _run.conn.call(method, params)
    except BaseException as exc:
        if isinstance(exc, _Deadline) or timed_out(exc):
            mark_hung(method)
        raise


def _additional(event: str, text: str) -> str:
    context = wrap(text)
    _run.injected = (next((k for k, v in EVENTS.items() if v == event), event), context)
    return wirejson.dumps(injection(_run.agent, event, context), ensure_ascii=False)


def _report_injection() -> None:
    """Tell the daemon what was injected (best effort, after the output is out), then close."""
    conn, injected = _run.conn, _run.injected
    _run.conn, _run.injected = None, None
    if conn is not None:
        if injected is not None:
            conn.notify("hook_injected", {"event": injected[0], "text": injected[1]})
        conn.close()


# events ------------------------------------------------------------------------------------------------------
def on_prompt(data: dict[str, Any], agent: str) -> str | None:
    prompt = _str(data, "prompt") or ""
    params: dict[str, Any] = {"prompt": prompt, "agent": agent, "max_chars": context_room(),
                              "budget_ms": RECALL_BUDGET_MS}
    for key in ("cwd", "session_id"):
        if _str(data, key):
            params[key] = data[key]
    res = call("prompt_context", params, timeout=RECALL_TIMEOUT)
    text = res.get("text") if isinstance(res, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    return _additional("UserPromptSubmit", text)


def on_session_start(data: dict[str, Any], _agent_name: str) -> str | None:
    params: dict[str, Any] = {}
    if _str(data, "cwd"):
        params["cwd"] = data["cwd"]
    res = call("wake_up", params, timeout=WAKE_TIMEOUT)
    text = res.get("text") if isinstance(res, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    head = (f"mempal memory of earlier sessions in this project (wing {res.get('wing', '?')}): who the user is, and "
            "the decisions, preferences, outcomes and fixes recorded so far, each with its date and drawer id. "
            "The code may have changed since; mempal's search holds the full exchanges.\n\n")
    return _additional("SessionStart", head + text)


def bump_turns(session_id: str) -> int:
    """Count this session's turns in a small file under the runtime dir; returns the new count."""
    folder, safe = os.path.join(runtime_dir_str(), COUNTER_DIR), _safe(session_id)
    path = os.path.join(folder, safe)
    try:
        with open(path, encoding="utf-8") as fh:
            count = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        count = 0
        os.makedirs(folder, mode=0o700, exist_ok=True)
        _prune(folder)
    count += 1
    tmp = os.path.join(folder, f".{safe}.{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(str(count))
    os.replace(tmp, path)
    return count


def _safe(session_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)[:120] or "unknown"


def _prune(folder: str, *, dirs: bool = False) -> None:
    """Remove what is older than a week in ``folder`` (files, or with ``dirs`` the folders of old sessions)."""
    cutoff = time.time() - COUNTER_MAX_AGE_S
    for entry in os.scandir(folder):
        try:
            if entry.stat().st_mtime >= cutoff:
                continue
            if dirs and entry.is_dir(follow_symlinks=False):
                for inner in os.scandir(entry.path):
                    os.unlink(inner.path)
                os.rmdir(entry.path)
            elif not dirs:
                os.unlink(entry.path)
        except OSError:
            continue


def on_stop(data: dict[str, Any], _agent_name: str) -> str | None:
    if data.get("stop_hook_active"):
        return None  # already continuing because of a Stop hook: never block twice
    cfg = call("hook_config", {}, timeout=CONFIG_TIMEOUT)
    every = int(cfg.get("stop_every", 15))
    mode = str(cfg.get("stop_mode", "silent"))
    count = bump_turns(_str(data, "session_id") or "unknown")
    if every <= 0 or count % every:
        return None
    transcript = _str(data, "transcript_path")
    last = _str(data, "last_assistant_message")
    if transcript and last:
        await_last_answer(transcript, last)
    if mode == "ask":
        if transcript:
            # the ask is what matters here; if this fails the watcher catches the transcript up anyway
            try:
                call("ingest_file", {"path": transcript}, timeout=STOP_INGEST_TIMEOUT)
            except Exception:
                pass
        return stop_reply(_run.agent, {"decision": "block", "reason": ASK_REASON.format(count=count)})
    if not transcript:
        return None
    saved = call("ingest_file", {"path": transcript}, timeout=STOP_INGEST_TIMEOUT)
    n = saved.get("written") if isinstance(saved, dict) else None
    what = f"{n} drawer(s) written" if isinstance(n, int) and n else "already up to date"
    return stop_reply(_run.agent, {"systemMessage": f"mempal: this session is saved in memory ({what})."})


def on_precompact(data: dict[str, Any], _agent_name: str) -> str | None:
    """Ask for the transcript's ingest and return at once: a PreCompact hook that waits holds up ``/compact``."""
    transcript = _str(data, "transcript_path")
    if transcript:
        conn = _run.conn = Connection(timeout=CONNECT_TIMEOUT)
        conn.connect()
        conn.notify("ingest_file", {"path": transcript})
    return None


def on_postcompact(data: dict[str, Any], agent: str) -> str | None:
    """Store the host's summary of the compacted conversation with its session (nothing is printed)."""
    summary = _str(data, "compact_summary")
    session = _str(data, "session_id")
    if not summary or not summary.strip() or not session:
        return None
    params: dict[str, Any] = {"summary": summary, "session_id": session, "agent": agent}
    for key in ("cwd", "transcript_path", "trigger"):
        if _str(data, key):
            params[key] = data[key]
    call("compact_summary", params, timeout=SUMMARY_TIMEOUT)
    return None


def _session_dir(session_id: str) -> str:
    return os.path.join(runtime_dir_str(), SEEN_DIR, _safe(session_id))


def claim_file(session_id: str, path: str) -> str | None:
    """The marker of ``path`` in this session if this call is the first to claim it, else None."""
    folder = _session_dir(session_id)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
        _prune(os.path.dirname(folder), dirs=True)
    import hashlib  # here, not at the top: it costs the other hooks milliseconds (OpenSSL)

    marker = os.path.join(folder, hashlib.sha1(path.encode("utf-8", "surrogatepass")).hexdigest()[:24])
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return None
    return marker


def on_file(data: dict[str, Any], _agent_name: str) -> str | None:
    tool_input = data.get("tool_input")
    if data.get("tool_name") not in FILE_TOOLS or not isinstance(tool_input, dict):
        return None
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        return None
    cwd = _str(data, "cwd")
    if not os.path.isabs(path) and cwd:
        path = os.path.join(cwd, path)
    path = os.path.normpath(path)
    session = _str(data, "session_id")
    marker = claim_file(session or "unknown", path)
    if marker is None:
        return None  # already given in this session
    params: dict[str, Any] = {"path": path, "max_tokens": FILE_TOKENS, "limit": FILE_EXCHANGES}
    if cwd:
        params["cwd"] = cwd
    if session:
        params["session_id"] = session
    try:
        res = call("file_context", params, timeout=FILE_TIMEOUT)
    except BaseException:
        try:
            os.unlink(marker)  # not answered: a later touch of the file may try again
        except OSError:
            pass
        raise
    text = res.get("text") if isinstance(res, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    return _additional("PreToolUse", text)


HANDLERS = {"prompt": on_prompt, "session-start": on_session_start, "stop": on_stop, "precompact": on_precompact,
            "postcompact": on_postcompact, "file": on_file, "rule": rule_handler(call), "session-end": on_precompact}
PROBE_FLAG = "--probe"


def run(args: list[str], stdin: bytes) -> str | None:
    """The hook's stdout (None: print nothing). Raises on any problem; ``main`` turns that into silence."""
    event = args[0] if args else ""
    handler = HANDLERS.get(event)
    if handler is None:
        raise ValueError(f"unknown hook event {event!r} (expected {', '.join(HANDLERS)})")
    data = wirejson.loads(stdin.decode("utf-8")) if stdin.strip() else {}
    if not isinstance(data, dict):
        raise TypeError("hook input is not a JSON object")
    if skip_daemon():
        return None  # hung: skipped until it answers a probe again
    _run.agent = agent = agent_of(args, data)
    adapted = adapt(agent, event, data)
    if adapted is not None and adapted.pop("wake", False):  # no SessionStart in agy: a first prompt wakes up too
        return joined([handler(adapted, agent), on_session_start(adapted, agent)])
    return handler(adapted, agent) if adapted is not None else None


def _run_with_deadline(args: list[str]) -> str | None:
    armed = hasattr(_signal, "setitimer")
    if armed:
        _signal.signal(_signal.SIGALRM, _on_alarm)
        _signal.setitimer(_signal.ITIMER_REAL, DEADLINES.get(args[0] if args else "", 4.0))
    try:
        return run(args, sys.stdin.buffer.read())
    finally:
        if armed:
            _signal.setitimer(_signal.ITIMER_REAL, 0)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if PROBE_FLAG in args:  # `mempal doctor`: this command line starts the hook; stdin and the daemon untouched
        known = bool(args) and args[0] in HANDLERS
        print(f"mempal-hook ok: {args[0]}" if known else f"mempal-hook: unknown event {args[:1]}",
              file=sys.stdout if known else sys.stderr)
        return 0 if known else 2
    try:
        out = _run_with_deadline(args)
    except BaseException as exc:  # fail open: the daemon down or slow, bad input, anything
        out = None
        if os.environ.get("MEMPAL_HOOK_DEBUG"):
            print(f"mempal-hook: {type(exc).__name__}: {exc}", file=sys.stderr)
    out = out or empty_reply(args)
    if out:
        try:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
        except OSError:
            pass
    try:
        _report_injection()
    except BaseException:
        pass
    return 0


def entry() -> None:
    """The ``mempal-hook`` command: ``main``, then out at once. The output is flushed and the connection closed;
    the interpreter's own shutdown (module teardown, a last collection) would add ~3 ms to every prompt."""
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    entry()
