"""Shared pieces of the performance benchmarks: an isolated environment, a real daemon process, real-shaped
Claude Code transcripts, percentiles, the table and the JSON file.

Every benchmark starts ``python -m mempald`` with its own temp HOME, XDG and MEMPAL_* directories (like
``tests/conftest.py``), writes transcripts into the fake ``~/.claude/projects`` and talks to the daemon over
its real socket with ``mempal.connection``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from mempal.connection import Connection  # noqa: E402

# ---------------------------------------------------------------------------------------------------------
# environment


@dataclass
class BenchEnv:
    root: Path
    home: Path
    runtime: Path
    env: dict[str, str]
    keep: bool = False

    @property
    def projects(self) -> Path:
        return self.home / ".claude" / "projects"

    @property
    def data_dir(self) -> Path:
        return Path(self.env["MEMPAL_DATA_DIR"])

    def socket(self) -> Path:
        return socket_of(self.env)

    def cleanup(self) -> None:
        shutil.rmtree(self.runtime, ignore_errors=True)
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def bench_env(root: Path | None = None, keep: bool = False) -> Iterator[BenchEnv]:
    """A fake HOME with every mempald path inside it (nothing touches the real home)."""
    base = Path(tempfile.mkdtemp(prefix="mempal-bench-")) if root is None else root
    home = base / "home"
    runtime = Path(tempfile.mkdtemp(prefix="mpb-"))  # short: Unix socket paths are limited to ~107 bytes
    env = dict(os.environ)
    env.update({
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "MEMPAL_CONFIG_DIR": str(home / ".config" / "mempald"),
        "MEMPAL_DATA_DIR": str(home / ".local" / "share" / "mempald"),
        "MEMPAL_RUNTIME_DIR": str(runtime / "run"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
    })
    env.pop("XDG_RUNTIME_DIR", None)
    env.pop("NOTIFY_SOCKET", None)
    (home / ".claude" / "projects").mkdir(parents=True, exist_ok=True)
    be = BenchEnv(base, home, runtime, env, keep)
    try:
        yield be
    finally:
        be.cleanup()


def write_config(be: BenchEnv, text: str) -> None:
    """The daemon's config.toml in the bench's fake home."""
    cfg = be.home / ".config" / "mempald" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(text)


def socket_of(env: dict[str, str]) -> Path:
    from mempal.paths import socket_path

    return socket_path(env)


def role_of(cmdline: str) -> str:
    """What a process under the daemon is, from its command line (a child forked and not yet started on its
    own program still has the daemon's: ``rss_by_process`` leaves it out, its pages are the daemon's)."""
    if "mempald.store.host build" in cmdline:
        return "index build"
    if "mempald.store.host" in cmdline:
        return "store"
    if "resource_tracker" in cmdline:
        return "resource tracker"
    if "multiprocessing" in cmdline:
        return "drawer worker"
    return "daemon"


class Daemon:
    """A real ``python -m mempald`` process."""

    def __init__(self, be: BenchEnv) -> None:
        self.be = be
        self.log_path = be.root / "mempald.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.ready_s = 0.0
        self.sock = socket_of(be.env)
        self._conn: Connection | None = None

    def start(self, wait: bool = True, timeout: float = 120.0) -> Daemon:
        self.started_at = time.monotonic()
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "mempald"], env=self.be.env, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=str(REPO))
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 120.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"mempald exited with {self.proc.returncode}:\n{self.logs()[-3000:]}")
            try:
                with Connection(self.sock, timeout=2) as conn:
                    conn.call("ping")
                self.ready_s = time.monotonic() - self.started_at
                return self.ready_s
            except Exception:
                time.sleep(0.02)
        raise RuntimeError(f"mempald did not become ready in {timeout}s:\n{self.logs()[-3000:]}")

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> Any:
        """One call on a kept-open connection (reconnects once if it was dropped)."""
        for attempt in (0, 1):
            try:
                if self._conn is None:
                    self._conn = Connection(self.sock, timeout=timeout)
                    self._conn.connect()
                self._conn.timeout = timeout
                return self._conn.call(method, params)
            except Exception:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def timed(self, method: str, params: dict[str, Any] | None = None) -> tuple[float, Any]:
        t0 = time.perf_counter()
        res = self.call(method, params)
        return (time.perf_counter() - t0) * 1000.0, res

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def pids(self) -> list[int]:
        """The daemon and every process under it (its store process, an index build while one runs)."""
        out, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*"):
                with suppress(OSError):
                    todo.extend(int(c) for c in (task / "children").read_text().split())
        return out

    def proc_status(self, key: str) -> int:
        """A ``/proc/<pid>/status`` field in kB (VmRSS, VmHWM), summed over the daemon and its children
        (for VmHWM: the sum of each process's own peak)."""
        total = 0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith(key + ":"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total

    def rss_mb(self) -> float:
        return self.proc_status("VmRSS") / 1024.0

    def peak_rss_mb(self) -> float:
        return self.proc_status("VmHWM") / 1024.0

    def rss_by_process(self) -> list[tuple[str, dict[str, float]]]:
        """Each process's role (``role_of``) and its ``VmRSS``, ``RssAnon``, ``RssFile`` in MB."""
        out = []
        for pid in self.pids():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
                fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                              if ":" in line)
            except OSError:
                continue
            role = role_of(cmd)
            if role == "daemon" and pid != self.pid:
                continue  # forked, not yet exec'd: the daemon's own pages
            out.append((role, {k: round(int(fields.get(k, "0 kB").split()[0]) / 1024.0, 1)
                                       for k in ("VmRSS", "RssAnon", "RssFile")}))
        return out

    def rss_split_mb(self) -> dict[str, float]:
        """Anonymous memory vs file-backed pages (the store's mmapped files, reclaimable by the kernel)."""
        return {k: round(self.proc_status(k) / 1024.0, 1) for k in ("VmRSS", "RssAnon", "RssFile")}

    def logs(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 60.0) -> int:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def is_idle(st: dict[str, Any]) -> bool:
    return bool(st["scans"] >= 1 and st["file_backlog"] == 0 and st["dense_backlog"] == 0)


def wait_idle(d: Daemon, timeout: float, interval: float = 0.5,
              on_poll: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st: dict[str, Any] = d.call("status")
        if on_poll is not None:
            on_poll(st)
        if is_idle(st):
            return st
        time.sleep(interval)
    raise RuntimeError(f"daemon not idle after {timeout}s:\n{d.logs()[-3000:]}")


def dir_size_mb(path: Path) -> float:
    total = 0
    for p in path.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_blocks * 512
        except OSError:
            continue
    return total / 1e6


# ---------------------------------------------------------------------------------------------------------
# Claude Code transcripts in the real shape (see tests/fixtures' short_session_v2.1.38.jsonl): a session is
# progress lines, a user prompt, streamed assistant parts sharing one message id (thinking, text, tool_use),
# tool_result user lines with ``toolUseResult``, and a final assistant text.

_VOCABULARY = (
    "the a to of and in is it for that we this with on be as can not use should when if you are from but "
    "by or so then there what which will would need function module class method test tests error errors "
    "config configuration server client request response database query index cache memory queue worker "
    "thread async await event loop socket timeout retry deploy build release migration schema table column "
    "user session token auth password secret key value file path directory import export package version "
    "dependency install update upgrade branch commit merge rebase review change fix bug issue crash stack "
    "trace log logging debug warning latency throughput benchmark profile slow fast performance memory "
    "allocation leak garbage pointer buffer stream parse parser format json yaml toml string number integer "
    "float list dict map set array vector embedding model search ranking score filter payload point segment "
    "shard collection drawer wing room keyword dense sparse hybrid fusion watch watcher inotify cursor offset "
    "byte line chunk transcript exchange prompt answer assistant tool call result summary context window "
    "limit budget deadline hook install service daemon process signal shutdown startup readiness lock "
    "because however therefore instead also still only just already again first second next last before "
    "after while until since during between across inside outside above below into onto over under around "
    "elixir phoenix python rust go typescript react postgres redis kafka docker kubernetes nginx terraform "
    "vault staging production local remote ci pipeline job runner cron backup restore snapshot replica "
    "looks seems works fails breaks passes returns raises throws handles checks reads writes sends receives "
    "opens closes starts stops runs waits blocks holds releases keeps drops moves copies renames deletes"
)
WORDS = _VOCABULARY.split()
TOOLS = ("Bash", "Read", "Edit", "Grep", "Glob", "Write")
FILES = ("lib/app/server.ex", "src/main.rs", "mempald/ingest.py", "config/dev.exs", "README.md", "web/app.tsx",
         "tests/test_api.py", "deploy/k8s.yaml", "Makefile", "docs/setup.md")


def sentence(rnd: random.Random, lo: int, hi: int) -> str:
    words = rnd.choices(WORDS, k=rnd.randint(lo, hi))
    words[0] = words[0].capitalize()
    return " ".join(words) + rnd.choice((".", ".", ".", "?", "!"))


def paragraph(rnd: random.Random, words: int) -> str:
    out: list[str] = []
    n = 0
    while n < words:
        s = sentence(rnd, 6, 22)
        out.append(s)
        n += s.count(" ") + 1
    return " ".join(out)


def _base(session: str, cwd: str, uid: str, parent: str | None, ts: str) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
            "version": "2.1.38", "gitBranch": "main", "uuid": uid, "timestamp": ts}


def _assistant(base: dict[str, Any], msg_id: str, part: dict[str, Any], req: str) -> dict[str, Any]:
    return {**base, "type": "assistant", "requestId": req, "message": {
        "model": "claude-opus-4-6", "id": msg_id, "type": "message", "role": "assistant", "content": [part],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 3, "cache_creation_input_tokens": 1200, "cache_read_input_tokens": 11515,
                  "output_tokens": 13, "service_tier": "standard"}}}


def exchange_lines(rnd: random.Random, session: str, cwd: str, key: str, when: datetime,
                   prompt: str | None = None, answer: str | None = None) -> list[str]:
    """The JSONL lines of one exchange; ``key`` becomes the user line's uuid (the drawer's exchange_key)."""
    ts = [(when + timedelta(seconds=i)).isoformat().replace("+00:00", "Z") for i in range(12)]
    lines: list[dict[str, Any]] = []
    prompt = prompt if prompt is not None else paragraph(rnd, rnd.choice((8, 15, 30, 60)))
    user = {**_base(session, cwd, key, None, ts[0]), "type": "user",
            "message": {"role": "user", "content": prompt}, "thinkingMetadata": {"maxThinkingTokens": 31999},
            "todos": [], "permissionMode": "default"}
    lines.append(user)
    msg_id = f"msg_{uuid.UUID(int=rnd.getrandbits(128)).hex[:24]}"
    req = f"req_{uuid.UUID(int=rnd.getrandbits(128)).hex[:24]}"
    parent = key

    def nid() -> str:
        return str(uuid.UUID(int=rnd.getrandbits(128)))

    if answer is None:
        u = nid()
        lines.append(_assistant(_base(session, cwd, u, parent, ts[1]), msg_id, {
            "type": "thinking", "thinking": paragraph(rnd, 25), "signature": "<signature-redacted len=440>"}, req))
        parent = u
        for t in range(rnd.choice((0, 1, 1, 2))):
            tool = rnd.choice(TOOLS)
            tid = f"toolu_{uuid.UUID(int=rnd.getrandbits(128)).hex[:24]}"
            u = nid()
            inp: dict[str, Any] = {"command": "mix test 2>&1 | tail -40"} if tool == "Bash" else {
                "file_path": f"{cwd}/{rnd.choice(FILES)}"}
            lines.append(_assistant(_base(session, cwd, u, parent, ts[2 + 2 * t]), msg_id, {
                "type": "tool_use", "id": tid, "name": tool, "input": inp, "caller": {"type": "direct"}}, req))
            parent = u
            prog = nid()
            lines.append({**_base(session, cwd, prog, parent, ts[2 + 2 * t]), "type": "progress",
                          "data": {"type": "hook_progress", "hookEvent": "PostToolUse"},
                          "parentToolUseID": tid, "toolUseID": tid})
            result = paragraph(rnd, rnd.randint(10, 60))
            u = nid()
            lines.append({**_base(session, cwd, u, parent, ts[3 + 2 * t]), "type": "user",
                          "message": {"role": "user", "content": [
                              {"type": "tool_result", "content": result, "is_error": False, "tool_use_id": tid}]},
                          "toolUseResult": {"stdout": result, "stderr": "", "interrupted": False},
                          "sourceToolAssistantUUID": parent})
            parent = u
        answer = paragraph(rnd, rnd.choice((30, 60, 100, 150, 220)))
    u = nid()
    lines.append(_assistant(_base(session, cwd, u, parent, ts[10]), msg_id, {"type": "text", "text": answer}, req))
    return [json.dumps(x, separators=(",", ":")) for x in lines]


@dataclass
class Corpus:
    files: list[Path] = field(default_factory=list)
    exchanges: int = 0


def write_corpus(projects: Path, n_exchanges: int, per_session: int = 80, seed: int = 1,
                 projects_count: int = 6) -> Corpus:
    """``n_exchanges`` exchanges in sessions of ``per_session`` across a few project folders; older sessions
    get older mtimes (the backfill reads newest first)."""
    rnd = random.Random(seed)
    corpus = Corpus()
    start = datetime(2025, 6, 1, tzinfo=UTC)
    now = time.time()
    sessions = max(1, -(-n_exchanges // per_session))
    left = n_exchanges
    for s in range(sessions):
        proj = f"-home-u-projects-app{s % projects_count}"
        cwd = f"/home/u/projects/app{s % projects_count}"
        sid = str(uuid.UUID(int=rnd.getrandbits(128)))
        path = projects / proj / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        when = start + timedelta(hours=6 * s)
        count = min(per_session, left)
        with path.open("w") as fh:
            for i in range(count):
                key = str(uuid.UUID(int=rnd.getrandbits(128)))
                for line in exchange_lines(rnd, sid, cwd, key, when + timedelta(minutes=2 * i)):
                    fh.write(line + "\n")
        mtime = now - (sessions - s) * 3600
        os.utime(path, (mtime, mtime))
        left -= count
        corpus.files.append(path)
        corpus.exchanges += count
    return corpus


# ---------------------------------------------------------------------------------------------------------
# figures


def pct(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (``p`` in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(p / 100.0 * len(s) + 0.5) - 1))
    return float(s[k])


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"n": len(values), "p50": round(pct(values, 50), 2), "p95": round(pct(values, 95), 2),
            "p99": round(pct(values, 99), 2), "max": round(max(values), 2) if values else float("nan")}


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "arch": platform.machine(), "cpu": cpu, "python": platform.python_version()}


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def parser(doc: str, n_default: int, n_smoke: int) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--n", type=int, default=None, help=f"size (default {n_default}; smoke {n_smoke})")
    ap.add_argument("--smoke", action="store_true", help="tiny size, seconds: checks the benchmark still runs")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    ap.add_argument("--keep", action="store_true", help="keep the temp HOME (data dir, logs) for inspection")
    ap.set_defaults(n_default=n_default, n_smoke=n_smoke)
    return ap


def size(args: argparse.Namespace) -> int:
    if args.n is not None:
        return int(args.n)
    return int(args.n_smoke if args.smoke else args.n_default)


def report(name: str, rows: Sequence[tuple[str, Any]], result: dict[str, Any], json_path: Path | None,
           title: str = "") -> None:
    """Print a two-column table and write ``result`` (plus machine and load) as JSON."""
    result = {"benchmark": name, "machine": machine(), "loadavg_end": loadavg(), **result}
    width = max((len(k) for k, _ in rows), default=10)
    print(f"\n{title or name}  ({result['machine']['nproc']} cores {result['machine']['arch']}, "
          f"{result['machine']['cpu']}, load {' '.join(f'{x:.2f}' for x in result['loadavg_end'])})")
    print("-" * (width + 30))
    for k, v in rows:
        val = f"{v:,.2f}" if isinstance(v, float) else str(v)
        print(f"{k:<{width}}  {val}")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=2, default=str) + "\n")
        print(f"(json: {json_path})")
