"""The hooks as Claude Code runs them: a subprocess, real JSON on stdin, against a real daemon, and with the
daemon stopped (exit 0, nothing on stdout, fast)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, strip_injected
from tests.conftest import FORMATS, REPO, Daemon, mempal_cli
from tests.integration.test_skeleton import assistant_line, user_line

SHORT = FORMATS / "claude_code" / "short_session_v2.1.38.jsonl"
SHORT_CWD = "/home/marco/projects/spotter"
RELEVANT = "mix phx.server doesnt seem to start, what was wrong last time?"


def make_env(root: Path, runtime: Path) -> dict[str, str]:
    home = root / "home"
    (home / ".claude" / "projects").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "NOTIFY_SOCKET")}
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"), "XDG_CACHE_HOME": str(home / ".cache"),
        "MEMPAL_CONFIG_DIR": str(home / ".config/mempald"), "MEMPAL_DATA_DIR": str(home / ".local/share/mempald"),
        "MEMPAL_RUNTIME_DIR": str(runtime / "run"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO),
    })
    return env


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """One daemon for the module (starting one takes seconds): the short fixture session, stop_every=2."""
    if not SHORT.is_file():
        pytest.skip(f"the shared format fixtures are not at {FORMATS}")
    root = tmp_path_factory.mktemp("hooks")
    runtime = Path(tempfile.mkdtemp(prefix="mp-"))
    env = make_env(root, runtime)
    env["MEMPAL_HOOKS_STOP_EVERY"] = "2"
    proj = Path(env["HOME"]) / ".claude" / "projects" / "-home-marco-projects-spotter"
    proj.mkdir()
    shutil.copy(SHORT, proj / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl")
    d = Daemon(env, root / "mempald.log").start()
    d.idle()
    yield d
    d.kill()
    shutil.rmtree(runtime, ignore_errors=True)


def hook(env: dict[str, str], event: str, payload: Any, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "mempal.hook", event, *args], input=data, capture_output=True,
                         text=True, env={**env, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=60)
    return res, time.perf_counter() - t0


def base(event: str, **kw: Any) -> dict[str, Any]:
    out = {"session_id": "sess-1", "transcript_path": "/nonexistent/x.jsonl", "cwd": SHORT_CWD,
           "permission_mode": "default", "hook_event_name": event}
    out.update(kw)
    return out


def context_of(res: subprocess.CompletedProcess[str], event: str) -> str:
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    ctx: str = out["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith(INJECT_OPEN + ' id="') and ctx.endswith(INJECT_CLOSE)
    assert len(ctx) <= 9000
    assert strip_injected(ctx) == ""
    return ctx


@pytest.mark.timeout(240)
def test_prompt_hook_recalls_relevant_memories_only(live: Daemon) -> None:
    res, _ = hook(live.env, "prompt", base("UserPromptSubmit", prompt=RELEVANT))
    ctx = context_of(res, "UserPromptSubmit")
    assert "mix phx.server doesnt seem to start" in ctx and "drawer " in ctx and "source: " in ctx
    assert res.stdout.count("\n") == 1  # written once

    # Unrelated prompts, slash commands and the current session's own drawers inject nothing.
    for prompt in ("what is the capital of France?", "/compact", "yes"):
        res, _ = hook(live.env, "prompt", base("UserPromptSubmit", prompt=prompt))
        assert (res.returncode, res.stdout) == (0, ""), prompt
    res, _ = hook(live.env, "prompt", base("UserPromptSubmit", prompt=RELEVANT,
                                           session_id="55604662-cf2a-4331-851a-ec234028f8ca"))
    assert res.stdout == ""


@pytest.mark.timeout(240)
def test_prompt_hook_delivers_the_cowork_inbox_once(live: Daemon, tmp_path: Path) -> None:
    cwd = str(tmp_path / "acme")
    live.call("cowork_push", {"from": "codex", "to": "claude", "cwd": cwd, "text": "I renamed api.py to routes.py"})
    live.call("cowork_push", {"from": "claude", "to": "codex", "cwd": cwd, "text": "for codex only"})
    payload = base("UserPromptSubmit", prompt="ok", cwd=cwd)
    ctx = context_of(hook(live.env, "prompt", payload)[0], "UserPromptSubmit")
    assert "I renamed api.py to routes.py" in ctx and "from codex" in ctx and "for codex only" not in ctx
    assert hook(live.env, "prompt", payload)[0].stdout == ""  # drained: delivered once
    ctx = context_of(hook(live.env, "prompt", payload, "--agent", "codex")[0], "UserPromptSubmit")
    assert "for codex only" in ctx
    st = live.call("cowork_status", {"cwd": cwd})
    assert st["inboxes"]["claude"]["pending"] == st["inboxes"]["codex"]["pending"] == 0


@pytest.mark.timeout(240)
def test_session_start_injects_the_wake_up_text_also_after_compaction(live: Daemon) -> None:
    for source in ("startup", "compact"):
        res, _ = hook(live.env, "session-start", base("SessionStart", source=source))
        ctx = context_of(res, "SessionStart")
        assert "wing spotter" in ctx and "spotter" in ctx


@pytest.mark.timeout(240)
def test_stop_hook_saves_every_n_turns_and_never_loops(live: Daemon) -> None:
    transcript = str(next((Path(live.env["HOME"]) / ".claude" / "projects").rglob("*.jsonl")))
    payload = base("Stop", session_id="stop-sess", transcript_path=transcript, stop_hook_active=False)
    first, _ = hook(live.env, "stop", payload)
    assert (first.returncode, first.stdout) == (0, "")
    # a continuation forced by a Stop hook neither counts nor blocks
    active, _ = hook(live.env, "stop", {**payload, "stop_hook_active": True})
    assert (active.returncode, active.stdout) == (0, "")
    second, _ = hook(live.env, "stop", payload)
    assert second.returncode == 0
    assert json.loads(second.stdout)["systemMessage"].startswith("mempal: this session is saved in memory")
    third, _ = hook(live.env, "stop", payload)
    assert third.stdout == ""


@pytest.mark.timeout(240)
def test_stop_hook_ask_mode_blocks_once(daemon: Daemon, home: Path) -> None:
    daemon.start(extra_env={"MEMPAL_HOOKS_STOP_MODE": "ask", "MEMPAL_HOOKS_STOP_EVERY": "1"})
    env = {**daemon.env, "MEMPAL_HOOKS_STOP_MODE": "ask"}
    payload = base("Stop", session_id="ask-sess", stop_hook_active=False)
    res, _ = hook(env, "stop", payload)
    out = json.loads(res.stdout)
    assert out["decision"] == "block" and "`ingest`" in out["reason"] and "decision" in out["reason"]
    again, _ = hook(env, "stop", {**payload, "stop_hook_active": True})
    assert (again.returncode, again.stdout) == (0, "")


@pytest.mark.timeout(240)
def test_precompact_returns_at_once_and_the_transcript_is_ingested(live: Daemon) -> None:
    proj = Path(live.env["HOME"]) / ".claude" / "projects" / "-home-u-zeta"
    proj.mkdir(exist_ok=True)
    session = "99999999-2222-3333-4444-555555555555"
    path = proj / f"{session}.jsonl"
    path.write_text(user_line(session, "/home/u/zeta", "Why is the quokka cache keyed by tenant?", "zu-1",
                              "2026-03-01T10:00:00.000Z") + "\n"
                    + assistant_line(session, "/home/u/zeta", "Because tenants share product ids.", "za-1", "zu-1",
                                     "2026-03-01T10:00:05.000Z") + "\n")
    res, dt = hook(live.env, "precompact", base("PreCompact", session_id=session, transcript_path=str(path),
                                                 trigger="auto", custom_instructions=""))
    assert (res.returncode, res.stdout) == (0, "")
    assert dt < 2.0, dt  # it asks for the ingest and returns: /compact never waits for it
    hits = live.wait_for(lambda: live.call("search", {"query": "quokka cache keyed by tenant", "limit": 3})["hits"],
                         timeout=30)
    assert hits[0]["exchange_key"] == "zu-1"
    print(f"\nRELIABILITY precompact hook returned in {dt * 1000:.0f} ms (the ingest runs in the daemon)")


@pytest.mark.timeout(240)
def test_hooks_fail_open_on_bad_input(live: Daemon) -> None:
    for event, stdin in (("prompt", "not json"), ("prompt", "[1, 2]"), ("stop", ""), ("nonsense", "{}"),
                         ("precompact", json.dumps(base("PreCompact", transcript_path="/etc/passwd"))),
                         ("file", json.dumps(base("PreToolUse", tool_name="Read", tool_input="README.md"))),
                         ("file", json.dumps(base("PreToolUse", tool_name="Read", tool_input={"file_path": 7}))),
                         ("file", json.dumps(base("PreToolUse", tool_name="Read",
                                                  tool_input={"file_path": "/a\u0000b"})))):
        res, _ = hook(live.env, event, stdin)
        assert (res.returncode, res.stdout) == (0, ""), (event, stdin, res.stderr)


@pytest.mark.timeout(240)
def test_prompt_hook_round_trip_time(live: Daemon) -> None:
    times = []
    for i in range(30):  # a session is never shown the same memory twice: one session per run
        res, dt = hook(live.env, "prompt", base("UserPromptSubmit", prompt=RELEVANT, session_id=f"timing-{i}"))
        assert res.returncode == 0 and res.stdout
        times.append(dt * 1000)
    times.sort()
    p50, p95 = statistics.median(times), times[int(len(times) * 0.95) - 1]
    print(f"\nprompt hook round trip over {len(times)} runs: p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    assert p95 < 1500  # the target is 80 ms on an idle machine; this only catches gross regressions


@pytest.mark.timeout(240)
def test_the_command_install_hooks_writes_injects_memories(live: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    """The UserPromptSubmit command as install-hooks writes it (this Python, -P -S, the hook's entry; the palace's
    location pinned), run by a shell from another directory, as Claude Code runs it."""
    from mempal import install

    for key, value in live.env.items():
        if key.startswith(("MEMPAL_", "XDG_")) or key == "HOME":
            monkeypatch.setenv(key, value)
    groups = install.hook_entries(install.hook_command_prefix())["UserPromptSubmit"]
    cmd = groups[0]["hooks"][0]["command"]
    assert install.HOOK_ENTRY in cmd and " -P -S " in cmd and "except BaseException" in cmd  # the guarded import
    payload = json.dumps(base("UserPromptSubmit", prompt=RELEVANT, session_id="installed-command"))
    res = subprocess.run(cmd, shell=True, input=payload, capture_output=True, text=True, timeout=60,
                         env={**live.env, "PYTHONPATH": str(REPO)}, cwd=live.env["HOME"])
    assert "mix phx.server doesnt seem to start" in context_of(res, "UserPromptSubmit")


@pytest.mark.timeout(240)
def test_a_prompt_hook_run_that_injects_loads_no_slow_module(live: Daemon) -> None:
    """The whole run (input, call, output, the injection report), not only the imports: nothing brings in
    what would cost the process 10-30 ms of its start (tests/unit/client/test_wirejson.py has the list)."""
    from tests.unit.client.test_wirejson import HEAVY

    code = ("import sys; from mempal.hook import main; code = main(['prompt']); "
            f"print(sorted(set({HEAVY!r}) & set(sys.modules)), file=sys.stderr); sys.exit(code)")
    payload = json.dumps(base("UserPromptSubmit", prompt=RELEVANT, session_id="lean-run"))
    res = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, text=True,
                         env={**live.env, "PYTHONPATH": str(REPO)}, cwd=REPO, timeout=60)
    assert "mix phx.server doesnt seem to start" in context_of(res, "UserPromptSubmit")
    assert res.stderr.strip() == "[]"


@pytest.mark.timeout(120)
def test_every_hook_is_silent_and_fast_when_the_daemon_is_down(home: Path) -> None:
    env = dict(os.environ)
    payloads = {
        "prompt": base("UserPromptSubmit", prompt=RELEVANT),
        "session-start": base("SessionStart", source="startup"),
        "stop": base("Stop", stop_hook_active=False),
        "precompact": base("PreCompact", trigger="manual", transcript_path=str(SHORT)),
        "postcompact": base("PostCompact", trigger="auto", compact_summary="what the session did"),
        "file": base("PreToolUse", tool_name="Read", tool_input={"file_path": "/home/u/p/README.md"}),
    }
    for event, payload in payloads.items():
        res, dt = hook(env, event, payload)
        assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), event
        assert dt < 2.0, (event, dt)


@pytest.mark.timeout(240)
def test_cowork_cli_push_status_drain(live: Daemon, tmp_path: Path) -> None:
    cwd = str(tmp_path / "proj")
    out = mempal_cli(live.env, "cowork", "push", "--to", "codex", "--cwd", cwd, "look at the failing test")
    assert out.returncode == 0, out.stderr
    assert "queued for codex" in out.stdout
    st = json.loads(mempal_cli(live.env, "cowork", "status", "--cwd", cwd, "--json").stdout)
    assert st["inboxes"]["codex"]["pending"] == 1 and st["inboxes"]["claude"]["pending"] == 0
    assert "codex: 1 pending" in mempal_cli(live.env, "cowork", "status", "--cwd", cwd).stdout
    drained = json.loads(mempal_cli(live.env, "cowork", "drain", "--target", "codex", "--cwd", cwd, "--json").stdout)
    assert [m["text"] for m in drained["messages"]] == ["look at the failing test"]
    assert "inbox is empty" in mempal_cli(live.env, "cowork", "drain", "--target", "codex", "--cwd", cwd).stdout
    refused = mempal_cli(live.env, "cowork", "push", "--to", "codex", "--from", "codex", "--cwd", cwd, "hi")
    assert refused.returncode == 1 and "cannot push to itself" in refused.stderr
    too_big = mempal_cli(live.env, "cowork", "push", "--to", "claude", "--cwd", cwd, "x" * 9000)
    assert too_big.returncode == 1 and "limit is 8192 bytes" in too_big.stderr


REAL = FORMATS / "claude_code" / "real2" / "projects" / "-Users-agents-conductor-acp-python--conductor-pompeii"
REAL_CWD = "/Users/agents/conductor/acp-python/.conductor/pompeii"


def read_call(path: str, session: str, tool: str = "Read", cwd: str = REAL_CWD) -> dict[str, Any]:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return base("PreToolUse", session_id=session, cwd=cwd, tool_name=tool, tool_input={key: path},
                tool_use_id="toolu_01")


def injected_today(d: Daemon, event: str) -> int:
    tokens = d.call("status")["tokens"]
    value: int = tokens["days"].get(tokens["today"], {}).get("injected", {}).get(event, 0)
    return value


@pytest.mark.timeout(300)
def test_the_file_gate_injects_what_memory_knows_about_a_file_once_per_session(daemon: Daemon, home: Path) -> None:
    if not REAL.is_dir():
        pytest.skip(f"the shared real Claude Code files are not at {REAL}")
    target = home / ".claude" / "projects" / REAL.name
    shutil.copytree(REAL, target)
    daemon.start()
    daemon.idle()
    env = daemon.env
    readme = f"{REAL_CWD}/README.md"
    res, dt = hook(env, "file", read_call(readme, "gate-1"))
    ctx = context_of(res, "PreToolUse")
    assert "what memory holds about README.md" in ctx and "[drawer " in ctx
    assert "permissionDecision" not in res.stdout  # the tool call goes through the normal permission flow
    assert hook(env, "file", read_call(readme, "gate-1", tool="Edit"))[0].stdout == ""  # once per file and session
    assert context_of(hook(env, "file", read_call(readme, "gate-2"))[0], "PreToolUse")  # another session: again
    relative = hook(env, "file", read_call("GUIA_INTEGRACAO_ACP.md", "gate-1", tool="Write"))[0]
    assert "GUIA_INTEGRACAO_ACP.md" in context_of(relative, "PreToolUse")  # relative to the session's cwd
    for quiet in (read_call(f"{REAL_CWD}/never-touched.py", "gate-1"),
                  base("PreToolUse", session_id="gate-1", tool_name="Bash", tool_input={"command": "ls"})):
        out, _ = hook(env, "file", quiet)
        assert (out.returncode, out.stdout) == (0, ""), quiet
    # what the gate injected is counted for status (reported after the output, without a reply)
    daemon.wait_for(lambda: injected_today(daemon, "file") > 0, timeout=30)
    print(f"\nfile gate hook round trip: {dt * 1000:.0f} ms")


@pytest.mark.timeout(240)
def test_injections_are_counted_in_status(live: Daemon) -> None:
    before = injected_today(live, "prompt"), injected_today(live, "session-start")
    # a session of its own: recall never injects a drawer twice into one session, and others used sess-1
    fresh = {"session_id": "sess-counted"}
    context_of(hook(live.env, "prompt", base("UserPromptSubmit", prompt=RELEVANT, **fresh))[0], "UserPromptSubmit")
    context_of(hook(live.env, "session-start", base("SessionStart", source="startup", **fresh))[0], "SessionStart")
    live.wait_for(lambda: injected_today(live, "prompt") > before[0]
                  and injected_today(live, "session-start") > before[1], timeout=30)
    shown = mempal_cli(live.env, "status").stdout
    assert "tokens injected by hooks today: " in shown and "prompt " in shown and "session-start " in shown


@pytest.mark.timeout(240)
def test_precompact_gives_up_quickly_on_a_hung_daemon(live: Daemon) -> None:
    transcript = str(next((Path(live.env["HOME"]) / ".claude" / "projects").rglob("*.jsonl")))
    assert live.proc is not None
    live.proc.send_signal(signal.SIGSTOP)  # the socket still accepts; nothing answers
    try:
        res, dt = hook(live.env, "precompact", base("PreCompact", transcript_path=transcript, trigger="auto"))
    finally:
        live.proc.send_signal(signal.SIGCONT)
    assert (res.returncode, res.stdout) == (0, "")
    assert dt < 2.0, dt  # was up to 110 s, then 1.5 s for its ping: it no longer waits for anything
    assert live.call("ping") == {"pong": True}


# a hung daemon ------------------------------------------------------------------------------------------------
def installed_command(env: dict[str, str], event: str) -> str:
    """The command install-hooks writes for ``event`` (this Python, -P -S, the guarded entry; the palace pinned)."""
    from mempal import install
    from mempal.paths import pinned_env

    prefix = install.shlex.join(install.hook_argv())
    pins = pinned_env(env)
    if pins:
        prefix = "env " + " ".join(f"{k}={install.shlex.quote(v)}" for k, v in sorted(pins.items())) + " " + prefix
    return f"{prefix} {event}"


def children_cpu_ms() -> float:
    """CPU time (user + system) of this process's waited-for children so far."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * 1000


def run_installed(env: dict[str, str], event: str, payload: Any) -> tuple[subprocess.CompletedProcess[str], float]:
    """One hook run as the host runs it: the installed command line, through a shell, from the user's home."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    t0 = time.perf_counter()
    res = subprocess.run(installed_command(env, event), shell=True, input=data, capture_output=True, text=True,
                         env=env, cwd=env["HOME"], timeout=60)
    return res, time.perf_counter() - t0


def timed(env: dict[str, str], event: str, payload: Any) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """``run_installed`` with the wall time and the CPU time (shell, env, interpreter, hook) in ms."""
    cpu = children_cpu_ms()
    res, dt = run_installed(env, event, payload)
    return res, dt * 1000, children_cpu_ms() - cpu


def bare_run_ms(env: dict[str, str]) -> tuple[float, float]:
    """One run of the installed command's shape (the shell, the pins, this Python with -P -S) doing nothing:
    what a hook costs before its own work, measured beside each hook run on this shared machine (wall and CPU
    time, ms)."""
    cpu = children_cpu_ms()
    t0 = time.perf_counter()
    subprocess.run(installed_command(env, "").replace(" -c ", " -c pass #", 1), shell=True, input="",
                   capture_output=True, env=env, cwd=env["HOME"], timeout=60, check=True)
    return (time.perf_counter() - t0) * 1000, children_cpu_ms() - cpu


def stragglers(runtime: str, daemon_pid: int) -> list[int]:
    """Processes of this test's palace (its runtime dir in their environment) other than the daemon and its
    store process: a hook must leave nothing running behind it."""
    out = []
    needle = f"MEMPAL_RUNTIME_DIR={runtime}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (daemon_pid, os.getpid()):
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{entry}/status") as fh:
                ppid = next(int(ln.split()[1]) for ln in fh if ln.startswith("PPid:"))
        except (OSError, StopIteration, ValueError):
            continue
        if needle in env and ppid != daemon_pid:
            out.append(int(entry))
    return out


@pytest.mark.timeout(300)
def test_a_hung_daemon_costs_one_timeout_then_hooks_skip_it_until_it_answers(live: Daemon) -> None:
    """SIGSTOP: the socket still accepts, nothing answers. Before, every prompt paid its 3 s and every file
    touch its 2 s, again and again; now the first timeout leaves a marker and every hook after it answers at
    about the bare interpreter's cost, printing nothing, until the daemon answers again (SIGCONT)."""
    assert live.proc is not None
    env = {**live.env, "PYTHONPATH": str(REPO)}
    marker = Path(env["MEMPAL_RUNTIME_DIR"]) / "daemon-hung"
    marker.unlink(missing_ok=True)
    prompt = base("UserPromptSubmit", prompt=RELEVANT, session_id="hung-1")
    touch = base("PreToolUse", session_id="hung-1", tool_name="Read", tool_input={"file_path": "/home/u/p/x.py"})
    others = {"session-start": base("SessionStart", source="startup"),
              "stop": base("Stop", stop_hook_active=False),
              "precompact": base("PreCompact", trigger="auto", transcript_path=str(SHORT)),
              "postcompact": base("PostCompact", trigger="auto", compact_summary="a summary")}
    live.proc.send_signal(signal.SIGSTOP)
    try:
        # before: every run pays the whole timeout (the marker removed before each, as if there were none)
        before: dict[str, float] = {}
        for event, payload in (("prompt", prompt), ("file", touch)):
            marker.unlink(missing_ok=True)
            res, dt = run_installed(env, event, payload)
            assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), event
            before[event] = dt * 1000
        assert marker.is_file() and "file_context" in marker.read_text()  # what timed out, and when
        assert before["prompt"] >= 2900 and before["file"] >= 1900, before

        # after: the marker is there; every hook skips the daemon
        after: dict[str, list[float]] = {"prompt": [], "file": []}
        cpu: list[float] = []  # the hook's CPU time beyond the same command doing nothing, run by run
        bare: list[float] = []
        for i in range(15):
            for event, payload in (("prompt", prompt), ("file", {**touch, "session_id": f"hung-{i}"})):
                res, wall, used = timed(env, event, payload)
                assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), event
                after[event].append(wall)
                empty_wall, empty_cpu = bare_run_ms(env)
                bare.append(empty_wall)
                cpu.append(used - empty_cpu)
        for event, payload in others.items():
            res, dt = run_installed(env, event, payload)
            assert (res.returncode, res.stdout, res.stderr) == (0, "", ""), event
            assert dt < 1.0, (event, dt)
        assert stragglers(env["MEMPAL_RUNTIME_DIR"], live.proc.pid) == []
    finally:
        live.proc.send_signal(signal.SIGCONT)
    p50 = {e: statistics.median(t) for e, t in after.items()}
    worst = max(max(t) for t in after.values())
    empty = statistics.median(bare)
    own = statistics.median(cpu)
    print(f"\nRELIABILITY hung daemon (SIGSTOP): prompt hook {before['prompt']:.0f} ms and file hook "
          f"{before['file']:.0f} ms on every run before; after the first timeout p50 prompt {p50['prompt']:.0f} ms, "
          f"file {p50['file']:.0f} ms, max {worst:.0f} ms (the same command doing nothing: p50 {empty:.0f} ms); "
          f"the hook's own CPU time beyond that: p50 {own:.1f} ms ({os.getloadavg()[0]:.1f} load)")
    # The hook's own share, in CPU time (wall time on a shared 2-core machine is mostly waiting for a core): its
    # imports, a stat, and once a second a probe (a 20 ms wait, no CPU). Under 50 ms: about 10 here.
    assert own < 50, cpu
    assert p50["prompt"] < 1000 and p50["file"] < 1000, after  # never the timeout's 2-3 s
    assert worst < 1000, worst  # a probe waits 20 ms; a loaded machine adds the rest

    # SIGCONT: noticed at the next probe; the marker goes and memories are injected again
    def recovered() -> str:
        res, _ = run_installed(env, "prompt", {**prompt, "session_id": f"after-{time.monotonic()}"})
        return res.stdout

    resumed = time.perf_counter()
    out = live.wait_for(recovered, timeout=30)
    assert "mix phx.server doesnt seem to start" in out and not marker.exists()
    print(f"RELIABILITY hung daemon: memories injected again {(time.perf_counter() - resumed) * 1000:.0f} ms "
          "after SIGCONT")


@pytest.mark.timeout(240)
def test_a_daemon_that_is_down_clears_the_marker(home: Path) -> None:
    """A marker left behind (the daemon hung, then stopped): the first probe finds nobody listening and removes
    it; hooks stay silent and fast."""
    from mempal.paths import runtime_dir

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = runtime_dir(env)
    run.mkdir(parents=True, exist_ok=True)
    marker = run / "daemon-hung"
    marker.write_text("0 prompt_context\n")
    os.utime(marker, (time.time() - 5, time.time() - 5))
    res, dt = run_installed(env, "prompt", base("UserPromptSubmit", prompt=RELEVANT))
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    assert not marker.exists() and dt < 2.0


# Claude Code's newer events ------------------------------------------------------------------------------------
SUMMARY = ("This session moved the phoenix dev server to port 4010 because the tapir proxy holds 4000; the "
           "mix phx.server failure was the port clash, not the database.")


@pytest.mark.timeout(240)
def test_postcompact_stores_the_hosts_summary_with_the_session(live: Daemon) -> None:
    session = "55604662-cf2a-4331-851a-ec234028f8ca"  # the fixture session: its wing is spotter
    transcript = str(next((Path(live.env["HOME"]) / ".claude" / "projects").rglob(f"{session}.jsonl")))
    payload = base("PostCompact", session_id=session, transcript_path=transcript, cwd="/somewhere/else",
                   trigger="manual", compact_summary=SUMMARY)
    for _ in range(2):  # the same summary twice: stored once
        res, _dt = hook(live.env, "postcompact", payload)
        assert (res.returncode, res.stdout) == (0, ""), res.stderr

    def stored() -> list[dict[str, Any]]:
        hits = live.call("search", {"query": "tapir proxy holds port 4000", "limit": 5})["hits"]
        return [h for h in hits if "tapir proxy" in h["text"]]

    (hit,) = live.wait_for(stored, timeout=30)
    assert hit["session_id"] == session and hit["wing"] == "spotter"  # the session's wing, not the cwd's
    assert hit["source_path"] == transcript
    got = live.call("get", {"ids": [hit["drawer_id"]]})
    drawer = got["drawers"][0] if "drawers" in got else got[0]
    assert drawer.get("kind", hit.get("kind")) == "summary", drawer
    # bad input loses nothing and breaks nothing: no summary, no session
    for bad in ({**payload, "compact_summary": ""}, {**payload, "session_id": ""}, {**payload, "compact_summary": 7}):
        res, _dt = hook(live.env, "postcompact", bad)
        assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


CORE = ("Analysis:\nThe user asked why mix phx.server failed; the tapir proxy held port 4000.\n\nSummary:\n1. The "
        "phoenix dev server moved to port 4010.\n2. Pending: update the heron README's port table.")


def compacted_transcript(session: str, answer: str) -> list[str]:
    """A session compacted once, in Claude Code's shape: a prompt and its answer, the compact_boundary record,
    the summary as an isCompactSummary user record (opening and closing lines around CORE), the answer after it."""
    cwd, ts = "/home/marco/projects/heron", "2026-11-20T10:00:00Z"
    boundary = {"parentUuid": None, "logicalParentUuid": f"{session}-a1", "isSidechain": False,
                "userType": "external", "cwd": cwd, "sessionId": session, "version": "2.1.38", "gitBranch": "main",
                "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                "isMeta": False, "timestamp": ts, "uuid": f"{session}-b", "level": "info",
                "compactMetadata": {"trigger": "manual", "preTokens": 151230}}
    text = ("This session is being continued from a previous conversation that ran out of context. The summary "
            f"below covers the earlier portion of the conversation.\n\n{CORE}\n\nIf you need specific details "
            "from before compaction (like exact code snippets, error messages, or content you generated), read the "
            f"full transcript at: /home/marco/.claude/projects/-home-marco-projects-heron/{session}.jsonl")
    summary = {"parentUuid": f"{session}-b", "isSidechain": False, "userType": "external", "cwd": cwd,
               "sessionId": session, "version": "2.1.38", "gitBranch": "main", "type": "user",
               "message": {"role": "user", "content": text}, "isVisibleInTranscriptOnly": True,
               "isCompactSummary": True, "uuid": f"{session}-s", "timestamp": ts}
    return [user_line(session, cwd, "why does mix phx.server fail on heron?", f"{session}-u1", ts),
            assistant_line(session, cwd, "The tapir proxy holds port 4000.", f"{session}-a1", f"{session}-u1", ts),
            json.dumps(boundary), json.dumps(summary),
            assistant_line(session, cwd, answer, f"{session}-a2", f"{session}-s", ts)]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("hook_first", [False, True])
def test_a_compaction_summary_from_the_transcript_and_the_hook_is_one_drawer(live: Daemon, hook_first: bool) -> None:
    """Claude Code puts the summary in the transcript and gives it to PostCompact: whichever arrives first, the
    session keeps one summary, the transcript's (it goes on with the answer given after it)."""
    session = f"7c0e3f52-compact-{int(hook_first)}"
    answer = f"Updating the heron README port table now (run {int(hook_first)})."
    proj = Path(live.env["HOME"]) / ".claude" / "projects" / "-home-marco-projects-heron"
    proj.mkdir(exist_ok=True)
    path = proj / f"{session}.jsonl"
    tagged = CORE.replace("Analysis:", "<analysis>").replace("\n\nSummary:", "</analysis>\n\n<summary>")
    payload = base("PostCompact", session_id=session, transcript_path=str(path), cwd="/home/marco/projects/heron",
                   trigger="manual", compact_summary=tagged + "</summary>" if hook_first else CORE)

    def summaries() -> list[dict[str, Any]]:
        got = live.call("drawers", {"session_id": [session], "limit": 100})
        return [d for d in got["drawers"] if d.get("kind") == "summary"]

    if hook_first:
        res, _dt = hook(live.env, "postcompact", payload)
        assert (res.returncode, res.stdout) == (0, ""), res.stderr
        live.wait_for(summaries, timeout=30)
    path.write_text("\n".join(compacted_transcript(session, answer)) + "\n")
    live.wait_for(lambda: [d for d in summaries() if answer in d["text"]], timeout=60)
    if not hook_first:
        res, _dt = hook(live.env, "postcompact", payload)
        assert (res.returncode, res.stdout) == (0, ""), res.stderr
    (one,) = summaries()  # one drawer, the transcript's
    assert one["text"].startswith("This session is being continued") and answer in one["text"]
    assert "tapir proxy held port 4000" in one["text"] and one["exchange_key"].startswith("compact:")


@pytest.mark.timeout(300)
def test_stop_waits_for_the_last_answer_the_host_reports(daemon: Daemon, home: Path) -> None:
    """Claude Code writes the transcript asynchronously: when Stop fires its last answer may not be on disk.
    The hook waits for the input's last_assistant_message to reach the file before the ingest it asks for.
    (Filesystem events are off here, so only that ingest can store the exchange.)"""
    daemon.start(extra_env={"MEMPAL_HOOKS_STOP_EVERY": "1", "MEMPAL_INGEST_WATCH_EVENTS": "false",
                            "MEMPAL_INGEST_RECONCILE_INTERVAL_S": "3600"})
    env = {**daemon.env, "MEMPAL_HOOKS_STOP_EVERY": "1"}
    proj = home / ".claude" / "projects" / "-home-u-okapi"
    proj.mkdir()
    session = "77777777-2222-3333-4444-555555555555"
    path = proj / f"{session}.jsonl"
    answer = "The okapi importer retries three times because the vendor's API drops every tenth request."
    path.write_text(user_line(session, "/home/u/okapi", "Why does the okapi importer retry?", "ou-1",
                              "2026-03-02T10:00:00.000Z") + "\n")
    late = assistant_line(session, "/home/u/okapi", answer, "oa-1", "ou-1", "2026-03-02T10:00:04.000Z") + "\n"

    def write_late() -> None:
        time.sleep(0.8)
        with path.open("a") as fh:
            fh.write(late)

    import threading

    writer = threading.Thread(target=write_late)
    writer.start()
    res, dt = hook(env, "stop", base("Stop", session_id=session, transcript_path=str(path), cwd="/home/u/okapi",
                                     stop_hook_active=False, last_assistant_message=answer))
    writer.join()
    assert res.returncode == 0 and "saved in memory" in res.stdout, res.stderr
    hits = daemon.call("search", {"query": "okapi importer retries vendor API", "limit": 3})["hits"]
    assert hits and "drops every tenth request" in hits[0]["text"]  # stored by the hook's own ingest, whole
    assert 0.7 < dt < 10, dt


@pytest.mark.timeout(240)
def test_injected_context_is_counted_in_utf16_units_and_no_message_is_lost(live: Daemon, tmp_path: Path) -> None:
    """The host's 10,000 limit counts a JavaScript string's length: an emoji is two. Four messages of 1,900
    emoji (7,600 code points, 15,200 units) arrive over several prompts, each context within 9,000 units, and
    none is cut or lost."""
    cwd = str(tmp_path / "emoji")
    for i in range(4):
        live.call("cowork_push", {"from": "codex", "to": "claude", "cwd": cwd, "text": f"m{i} " + "🧠" * 1900})
    got, contexts = [], 0
    for _ in range(6):
        res, _dt = hook(live.env, "prompt", base("UserPromptSubmit", prompt="ok", cwd=cwd, session_id="u16"))
        if not res.stdout:
            break
        ctx = context_of(res, "UserPromptSubmit")
        assert len(ctx.encode("utf-16-le")) // 2 <= 9000
        got += [part.split()[0] for part in ctx.split("m")[1:] if part[:1].isdigit()]
        assert ctx.count("🧠") % 1900 == 0 and "…" not in ctx  # whole messages only
        contexts += 1
    assert sorted(got) == ["0", "1", "2", "3"] and contexts >= 2
    assert live.call("cowork_status", {"cwd": cwd})["inboxes"]["claude"]["pending"] == 0


@pytest.mark.timeout(240)
def test_injected_context_states_facts_not_instructions(live: Daemon) -> None:
    """Claude Code's docs warn that imperative text in injected context can trip its prompt-injection defences:
    what mempal adds around the memories describes earlier sessions; it tells the model to do nothing."""
    prompt = context_of(hook(live.env, "prompt", base("UserPromptSubmit", prompt=RELEVANT, session_id="facts"))[0],
                        "UserPromptSubmit")
    start = context_of(hook(live.env, "session-start", base("SessionStart", source="fork", session_id="facts"))[0],
                       "SessionStart")
    assert "Earlier sessions recorded these exchanges" in prompt
    assert "mempal memory of earlier sessions in this project (wing spotter)" in start
    framing = [ln for ctx in (prompt, start) for ln in ctx.splitlines()[1:2]]
    for line in framing:
        for word in ("cite", "Cite", "check ", "search mempal", "you must", "Use ", "relying on"):
            assert word not in line, (word, line)


# the hook commands and doctor ---------------------------------------------------------------------------------
def doctor_hooks(env: dict[str, str]) -> list[dict[str, Any]]:
    out = mempal_cli(env, "doctor", "--json")
    checks: list[dict[str, Any]] = json.loads(out.stdout)
    return [c for c in checks if "hooks" in c["name"]]


@pytest.mark.timeout(240)
def test_doctor_runs_the_installed_hooks_and_sees_a_broken_hook_path(home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    (before,) = doctor_hooks(env)
    assert not before["ok"] and before["warning"] and "not in" in before["detail"]
    from mempal.paths import runtime_dir

    marker = runtime_dir(env) / "daemon-hung"  # what the hooks leave when the daemon did not answer
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{time.time():.3f} prompt_context\n")
    hung = [c for c in doctor_hooks(env) if c["name"] == "hooks and the daemon"]
    assert hung and hung[0]["warning"] and "did not answer prompt_context" in hung[0]["detail"]
    marker.unlink()
    out = mempal_cli(env, "install-hooks")
    assert out.returncode == 0, out.stderr
    (ok,) = doctor_hooks(env)
    assert ok["ok"] and "each probed: they run" in ok["detail"], ok  # it warned "not in settings.json" here

    # `pip install -e '.[test]'` after `pip install .`: the package the commands name is gone
    settings_path = home / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    client = str(REPO / "client")
    for groups in settings["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = handler["command"].replace(client, str(home / "gone" / "site-packages"))
    settings_path.write_text(json.dumps(settings))
    cmd = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    res = subprocess.run(cmd, shell=True, input=json.dumps(base("UserPromptSubmit", prompt=RELEVANT)),
                         capture_output=True, text=True, env=env, cwd=str(home), timeout=60)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")  # fail open: it cannot even import itself
    (broken,) = doctor_hooks(env)
    assert not broken["ok"] and not broken["warning"]
    assert "the hook path is broken" in broken["detail"] and "No module named 'mempal'" in broken["detail"]
    assert broken["fix"].startswith("mempal install-hooks")
    text = mempal_cli(env, "doctor")
    assert text.returncode == 1 and "fix: mempal install-hooks" in text.stdout

    # a stale install (an older matcher) runs, but doctor says it differs from this release's
    assert mempal_cli(env, "install-hooks").returncode == 0
    settings = json.loads(settings_path.read_text())
    settings["hooks"]["SessionStart"][0]["matcher"] = "startup|resume|clear|compact"
    settings_path.write_text(json.dumps(settings))
    (stale,) = doctor_hooks(env)
    assert not stale["ok"] and stale["warning"] and "SessionStart" in stale["detail"]
