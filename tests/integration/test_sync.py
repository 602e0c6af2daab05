"""One memory across machines through a shared folder: two real daemons in two homes, each writing its own
folder of segments; the test plays the sync tool (it copies a machine's folder to the other side, whole files
renamed into place, as Syncthing and Dropbox do)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempald.sync.segment import encode
from tests.conftest import REPO, Daemon, mempal_cli
from tests.integration.test_skeleton import assistant_line, user_line

SECRET = "AKIAQWERTYUIOPASDFGH"  # an AWS access key id: redacted before anything is stored or written
PASSWORD = "hunter2-Xq9v!horse"
CWD = "/home/dev/projects/orbit"
PROMPT = "which message broker did we settle on for the orbit telemetry pipeline?"
ANSWER = "We settled on NATS JetStream for orbit telemetry: Kafka was too heavy for the edge boxes."


class Machine:
    def __init__(self, name: str, root: Path, runtime: Path) -> None:
        self.name = name
        self.home = root / name
        (self.home / ".claude" / "projects").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "NOTIFY_SOCKET")}
        h = self.home
        env.update({
            "HOME": str(h), "XDG_CONFIG_HOME": str(h / ".config"), "XDG_DATA_HOME": str(h / ".local/share"),
            "XDG_STATE_HOME": str(h / ".local/state"), "XDG_CACHE_HOME": str(h / ".cache"),
            "MEMPAL_CONFIG_DIR": str(h / ".config/mempald"), "MEMPAL_DATA_DIR": str(h / ".local/share/mempald"),
            "MEMPAL_RUNTIME_DIR": str(runtime / name), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO),
            "MEMPAL_STORE_MACHINE": name, "MEMPAL_SYNC_INTERVAL_S": "0.5",
        })
        self.env = env
        self.daemon = Daemon(env, root / f"{name}.log")

    def transcript(self, session: str, pairs: list[tuple[str, str]]) -> Path:
        proj = self.home / ".claude" / "projects" / "-home-dev-projects-orbit"
        proj.mkdir(exist_ok=True)
        lines = []
        for i, (q, a) in enumerate(pairs):
            ts = f"2026-11-0{1 + i % 9}T10:{i % 60:02d}:00Z"
            lines += [user_line(session, CWD, q, f"u-{session}-{i}", ts),
                      assistant_line(session, CWD, a, f"a-{session}-{i}", f"u-{session}-{i}", ts)]
        path = proj / f"{session}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return path


def relay(src: Path, dst: Path, machine: str | None = None) -> int:
    """What a sync tool does: every file of ``src`` (or of one machine's folder) appears in ``dst``, each whole
    (written to a temporary name, then renamed). Returns how many files were copied."""
    n = 0
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        if f.is_dir() or rel.name.startswith(".") or (machine and rel.parts[0] not in (machine,)):
            continue
        target = dst / rel
        if target.exists() and target.stat().st_size == f.stat().st_size:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".syncthing.{target.name}.tmp")
        shutil.copyfile(f, tmp)
        os.replace(tmp, target)
        n += 1
    return n


def segment_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*.mps")))


def search(d: Daemon, query: str, **kw: Any) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = d.call("search", {"query": query, **kw})["hits"]
    return hits


def found(d: Daemon, text: str, **kw: Any) -> list[dict[str, Any]]:
    return [h for h in search(d, PROMPT, **kw) if text in h["text"]]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Machine, Machine]]:
    runtime = Path(tempfile.mkdtemp(prefix="mp-"))
    a, b = Machine("laptop", tmp_path, runtime), Machine("desktop", tmp_path, runtime)
    yield a, b
    a.daemon.kill()
    b.daemon.kill()
    shutil.rmtree(runtime, ignore_errors=True)


def joined(a: Machine, b: Machine, tmp_path: Path, *, encrypt: bool = False) -> tuple[Path, Path]:
    """A makes the sync folder (its copy of it: ``dir_a``), the sync tool brings it to B (``dir_b``), B joins."""
    dir_a, dir_b = tmp_path / "sync-a", tmp_path / "sync-b"
    out = a.daemon.call("sync_init", {"dir": str(dir_a), "encrypt": encrypt})
    assert out["machine"] == "laptop" and out["encrypted"] is encrypt
    dir_b.mkdir()
    shutil.copy(dir_a / "mempal-sync.json", dir_b / "mempal-sync.json")
    params: dict[str, Any] = {"dir": str(dir_b)}
    if encrypt:
        params["key_file"] = out["key_file"]
    assert b.daemon.call("sync_join", params)["encrypted"] is encrypt
    return dir_a, dir_b


def wait_written(d: Daemon, folder: Path, what: bytes, timeout: float = 60) -> None:
    """Until a whole segment of ``folder`` holds ``what`` (and nothing waits in the outbox)."""
    d.wait_for(lambda: d.call("sync_status")["outbox"] == 0 and what in segment_bytes(folder), timeout)


def lag_of(d: Daemon, machine: str) -> int:
    return int(next(m["lag"] for m in d.call("sync_status")["machines"] if m["machine"] == machine))


def hook_prompt(env: dict[str, str], prompt: str) -> str:
    payload = {"session_id": "other-sess", "transcript_path": "/nonexistent/x.jsonl", "cwd": CWD,
               "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    res = subprocess.run([sys.executable, "-m", "mempal.hook", "prompt"], input=json.dumps(payload),
                         capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.timeout(300)
def test_a_prompt_on_a_is_found_on_b_and_a_forget_on_b_reaches_a(pair: tuple[Machine, Machine],
                                                                  tmp_path: Path) -> None:
    a, b = pair
    a.daemon.start()
    b.daemon.start()
    dir_a, dir_b = joined(a, b, tmp_path)
    transcript = a.transcript("s-orbit", [(PROMPT, ANSWER),
                             (f"the staging key is {SECRET} and the db password is {PASSWORD}, keep them handy",
                              "Noted. I will not repeat them."),
                             ("<private>my salary is 91234</private> also, what did we pick for orbit storage?",
                              "ClickHouse for the orbit metrics store.")])
    a.daemon.call("kg", {"op": "add", "subject": "orbit", "predicate": "uses", "object": "NATS JetStream"})
    a.daemon.idle()
    wait_written(a.daemon, dir_a, b"NATS JetStream")
    a.daemon.wait_for(lambda: b'"t":"fact"' in segment_bytes(dir_a))
    # redaction and <private> applied before anything reached a segment: every byte of every segment checked
    everything = segment_bytes(dir_a)
    for secret in (SECRET, PASSWORD, "91234"):
        assert secret.encode() not in everything
    assert b"[REDACTED:" in everything

    # the folder reaches B: the prompt is found there by search and by the hook within 10 s
    assert relay(dir_a, dir_b, "laptop") >= 1
    t0 = time.monotonic()
    b.daemon.wait_for(lambda: found(b.daemon, "NATS JetStream"), timeout=10)
    took = time.monotonic() - t0
    print(f"\nSYNC a prompt written on A found by search on B {took:.2f} s after the folder reached B")
    hits = found(b.daemon, "NATS JetStream")
    assert hits[0]["machine"] == "laptop"
    assert found(b.daemon, "NATS JetStream", machine="laptop")
    assert not found(b.daemon, "NATS JetStream", machine="desktop")
    assert "NATS JetStream" in hook_prompt(b.env, "what message broker did we pick for orbit telemetry?")
    st = b.daemon.call("sync_status")
    assert st["imported"] >= 3 and st["embedded_here"] == 0  # the vectors came with the drawers: not embedded again
    assert st["problems"] == [] and [m["lag"] for m in st["machines"] if m["machine"] == "laptop"] == [0]
    facts = b.daemon.call("kg_query", {"subject": "orbit"})
    assert "nats jetstream" in str(facts).lower()  # the knowledge graph's fact came along
    assert b.daemon.call("status")["dense_backlog"] == 0
    listed = {m["machine"]: m for m in b.daemon.call("machines")["machines"]}
    assert listed["laptop"]["drawers"] >= 3 and listed["laptop"]["read_segment"] >= 1
    assert listed["laptop"]["last_written"]
    assert listed["desktop"]["this_machine"]
    # the CLI: sync status and machines
    cli = mempal_cli(b.env, "sync", "status")
    assert cli.returncode == 0 and "laptop" in cli.stdout
    assert "laptop" in mempal_cli(b.env, "machines").stdout
    assert "machine: desktop" in mempal_cli(b.env, "status").stdout
    shown = mempal_cli(b.env, "search", PROMPT, "--machine", "laptop")
    assert shown.returncode == 0 and "NATS JetStream" in shown.stdout and "on laptop" in shown.stdout

    # forget on B: its tombstone reaches A, where the drawer is forgotten too
    out = b.daemon.call("forget", {"session": "s-orbit", "reason": "test", "actor": "user"})
    assert out["forgotten"] >= 3
    assert not found(b.daemon, "NATS JetStream")
    b.daemon.wait_for(lambda: b.daemon.call("sync_status")["outbox"] == 0 and (dir_b / "desktop").is_dir())
    relay(dir_b, dir_a, "desktop")
    a.daemon.wait_for(lambda: not found(a.daemon, "NATS JetStream"), timeout=10)
    # forgotten on A as a forget there would: purged, then its transcript read again, it does not come back
    assert a.daemon.call("purge", {})["purged"] >= 3
    a.daemon.call("reread", {"path": str(transcript)})
    a.daemon.idle()
    assert not found(a.daemon, "NATS JetStream")
    mine = segment_bytes(dir_b / "desktop")
    assert b'"t":"tomb"' in mine and b'"t":"drawer"' not in mine and b'"t":"fact"' not in mine  # nothing echoed
    # and it stays forgotten on B when A's segments are read again (a conflicted copy of one, here)
    first = sorted((dir_b / "laptop").glob("seg-*.mps"))[0]
    shutil.copy(first, first.with_name(first.stem + " (conflicted copy 2026-12-05).mps"))
    b.daemon.wait_for(lambda: lag_of(b.daemon, "laptop") == 0)
    assert b.daemon.call("sync_status")["problems"] == []
    assert not found(b.daemon, "NATS JetStream")
    assert "NATS" not in hook_prompt(b.env, "what message broker did we pick for orbit telemetry?")
    # leaving: the folder is left alone, nothing more is written or read, the imported drawers stay
    left = mempal_cli(b.env, "sync", "leave")
    assert left.returncode == 0 and str(dir_b) in left.stdout
    assert b.daemon.call("sync_status")["syncing"] is False
    assert "[sync]" not in (b.home / ".config" / "mempald" / "config.toml").read_text()
    b.daemon.call("ingest", {"text": "the desktop alone knows the orbit door code is in the safe", "wing": "orbit"})
    assert b.daemon.call("sync_status")["outbox"] == 0
    assert "nats jetstream" in str(b.daemon.call("kg_query", {"subject": "orbit"})).lower()  # what came stays


@pytest.mark.timeout(300)
def test_encrypted_folder_wrong_key_and_a_truncated_segment(pair: tuple[Machine, Machine], tmp_path: Path) -> None:
    a, b = pair
    a.daemon.start()
    b.daemon.start()
    dir_a = tmp_path / "sync-a"
    init = mempal_cli(a.env, "sync", "init", str(dir_a), "--encrypt", "--json")
    assert init.returncode == 0, init.stderr
    key_file = Path(json.loads(init.stdout)["key_file"])
    assert key_file.stat().st_mode & 0o077 == 0
    assert key_file.read_bytes().strip().decode() not in a.daemon.logs()  # the key is never logged
    dir_b = tmp_path / "sync-b"
    dir_b.mkdir()
    shutil.copy(dir_a / "mempal-sync.json", dir_b / "mempal-sync.json")
    wrong = tmp_path / "wrong.key"
    wrong.write_bytes(base64.b64encode(os.urandom(32)) + b"\n")  # a key, not the folder's
    bad = mempal_cli(b.env, "sync", "join", str(dir_b), "--key-file", str(wrong))
    assert bad.returncode != 0 and "does not open" in bad.stderr + bad.stdout
    assert b.daemon.call("sync_status")["syncing"] is False  # a wrong key joins nothing
    ok = mempal_cli(b.env, "sync", "join", str(dir_b), "--key-file", str(key_file))
    assert ok.returncode == 0, ok.stderr

    a.transcript("s-enc", [(PROMPT, ANSWER)])
    a.daemon.idle()
    a.daemon.wait_for(lambda: a.daemon.call("sync_status")["outbox"] == 0 and list((dir_a / "laptop").glob("*.mps")))
    assert b"NATS" not in segment_bytes(dir_a)  # sealed
    # the sync tool has copied only part of the segment so far: reported, skipped, read again once whole
    seg = sorted((dir_a / "laptop").glob("seg-*.mps"))[0]
    half = dir_b / "laptop" / seg.name
    half.parent.mkdir(parents=True)
    half.write_bytes(seg.read_bytes()[: seg.stat().st_size // 2])
    problems = b.daemon.wait_for(lambda: b.daemon.call("sync_status")["problems"])
    assert problems[0]["segment"] == str(half) and "truncated" in problems[0]["error"]
    assert "read again" in problems[0]["what_to_do"]
    doctor = mempal_cli(b.env, "doctor")
    assert "sync folder" in doctor.stdout and "truncated" in doctor.stdout
    assert not found(b.daemon, "NATS JetStream")
    # another machine's segment that is not a segment at all, and one sealed with another key
    (dir_b / "attic").mkdir()
    (dir_b / "attic" / "seg-0000000001.mps").write_bytes(b"garbage")
    from mempald.sync.seal import Sealer, new_key
    (dir_b / "attic" / "seg-0000000002.mps").write_bytes(encode("attic", 2, [{"t": "fact", "id": 1}],
                                                                 Sealer(new_key())))
    # whole and sealed with the folder's key, but a record this version cannot apply (a time that is no number)
    from mempald.sync.seal import read_key
    odd = {"t": "drawer", "id": "00000000-0000-5000-8000-000000000001", "model": "", "dense": None,
           "payload": {"text": "odd", "ts": "soon", "content_hash": "x"}}
    (dir_b / "attic" / "seg-0000000003.mps").write_bytes(encode("attic", 3, [odd], Sealer(read_key(key_file))))

    def attic() -> dict[str, str]:
        return {Path(p["segment"]).name: p["status"] for p in b.daemon.call("sync_status")["problems"]
                if "attic" in p["segment"]}
    assert b.daemon.wait_for(lambda: len(attic()) == 3 and attic()) == {"seg-0000000001.mps": "damaged",
                                                                        "seg-0000000002.mps": "locked",
                                                                        "seg-0000000003.mps": "damaged"}
    relay(dir_a, dir_b, "laptop")  # now whole
    b.daemon.wait_for(lambda: found(b.daemon, "NATS JetStream"), timeout=10)
    assert not [p for p in b.daemon.call("sync_status")["problems"] if "laptop" in p["segment"]]
    assert b.daemon.proc is not None and b.daemon.proc.poll() is None  # bad input never stopped it
    # the share is unmounted (the folder gone): said in sync status, nothing made where it was; back, it goes on
    away = dir_b.rename(tmp_path / "sync-b-away")
    b.daemon.call("ingest", {"text": "the orbit staging box moved to rack 4", "wing": "orbit"})
    err = b.daemon.wait_for(lambda: b.daemon.call("sync_status")["error"])
    assert "not a mempal sync folder" in err and not dir_b.exists()
    away.rename(dir_b)
    b.daemon.wait_for(lambda: not b.daemon.call("sync_status")["error"] and b.daemon.call("sync_status")[
        "outbox"] == 0 and list((dir_b / "desktop").glob("seg-*.mps")))  # (sealed: its text is not readable)
    # a third machine that took the laptop's id by mistake may not write into its folder
    twin = Machine("laptop", tmp_path / "twin", Path(tempfile.mkdtemp(prefix="mp-")))
    try:
        twin.daemon.start()
        refused = mempal_cli(twin.env, "sync", "join", str(dir_b), "--key-file", str(key_file))
        assert refused.returncode != 0 and "another machine with the id 'laptop'" in refused.stderr
        assert twin.daemon.call("sync_status")["syncing"] is False
    finally:
        twin.daemon.kill()


def drawers_of(d: Daemon, machine: str) -> int:
    return int(next((m["drawers"] for m in d.call("machines")["machines"] if m["machine"] == machine), 0))


KILLS = int(os.environ.get("MEMPAL_SYNC_KILLS", "6"))


@pytest.mark.timeout(900)
def test_kill_9_during_segment_writes_and_imports_loses_and_duplicates_nothing(pair: tuple[Machine, Machine],
                                                                                tmp_path: Path) -> None:
    """Both daemons on one folder (linked, as an NFS share is); each round A gets a new session and one of the
    two is killed -9 in the middle of its work: A once its outbox holds drawers (before or while their segment
    is written), B once it has started importing. In the end B holds exactly A's drawers."""
    a, b = pair
    shared = tmp_path / "shared"
    a.daemon.start()
    b.daemon.start()
    a.daemon.call("sync_init", {"dir": str(shared)})
    b.daemon.call("sync_join", {"dir": str(shared)})
    for i in range(KILLS):
        pairs = [(f"round {i} question {j}: how do we shard the orbit table number {j}?",
                  f"Round {i} answer {j}: by tenant id, {j * 7} partitions.") for j in range(40)]
        if i % 2 == 0:
            a.transcript(f"s-kill-{i}", pairs)
            a.daemon.wait_for(lambda: a.daemon.call("sync_status")["outbox"] > 0 or list(shared.rglob("*.mps")))
            a.daemon.kill()
            a.daemon.start()
        else:
            b.daemon.kill()
            a.transcript(f"s-kill-{i}", pairs)
            a.daemon.wait_for(lambda: a.daemon.call("sync_status")["outbox"] == 0 and a.daemon.call(
                "status")["file_backlog"] == 0)
            b.daemon.start()
            b.daemon.wait_for(lambda: b.daemon.call("sync_status")["imported"] > 0, interval=0.02)
            b.daemon.kill()
            b.daemon.start()
    a.daemon.idle()
    a.daemon.wait_for(lambda: a.daemon.call("sync_status")["outbox"] == 0)
    expected = drawers_of(a.daemon, "laptop")
    assert expected >= KILLS * 40
    b.daemon.wait_for(lambda: lag_of(b.daemon, "laptop") == 0 and drawers_of(b.daemon, "laptop") == expected,
                      timeout=120)
    assert b.daemon.call("sync_status")["problems"] == []
    assert not list(shared.rglob(".seg-*"))  # no unfinished segment left behind
    for i in range(KILLS):
        hits = search(b.daemon, "how do we shard the orbit table", session_id=[f"s-kill-{i}"])
        assert hits and all(h["machine"] == "laptop" for h in hits)
    print(f"\nRELIABILITY sync: {KILLS} kill -9 rounds, {expected} drawers on A, {drawers_of(b.daemon, 'laptop')} "
          f"on B, {len(list(shared.rglob('seg-*.mps')))} segments")


@pytest.mark.timeout(300)
def test_an_older_segment_read_again_does_not_set_a_drawer_back(pair: tuple[Machine, Machine],
                                                                 tmp_path: Path) -> None:
    """A drawer written twice (its exchange's answer grew) is in two segments; a conflicted copy of the older
    one appearing later is read, and the drawer keeps the newer text (segment numbers, not arrival, decide)."""
    a, b = pair
    shared = tmp_path / "shared"
    a.daemon.start()
    b.daemon.start()
    a.daemon.call("sync_init", {"dir": str(shared)})
    b.daemon.call("sync_join", {"dir": str(shared)})
    session, cwd = "s-grow", CWD
    ts = "2026-11-02T09:00:00Z"
    first = [user_line(session, cwd, "what port does the orbit gateway listen on?", "u-g", ts),
             assistant_line(session, cwd, "The orbit gateway listens on port 7100.", "a-g1", "u-g", ts)]
    path = a.transcript(session, [])
    path.write_text("\n".join(first) + "\n")
    a.daemon.idle()
    a.daemon.wait_for(lambda: b"port 7100" in segment_bytes(shared / "laptop"))
    older = sorted((shared / "laptop").glob("seg-*.mps"))[-1]
    with path.open("a") as fh:  # the answer goes on: the same exchange, the same drawer, a longer text
        fh.write(assistant_line(session, cwd, "Correction: since the migration it is port 7443.", "a-g2", "a-g1",
                                ts) + "\n")
    a.daemon.wait_for(lambda: b"7443" in segment_bytes(shared / "laptop") and a.daemon.call("sync_status")[
        "outbox"] == 0)

    def text_on_b() -> str:
        hits = search(b.daemon, "orbit gateway port", session_id=[session])
        return str(hits[0]["text"]) if hits else ""
    b.daemon.wait_for(lambda: "7443" in text_on_b())
    shutil.copy(older, older.with_name(older.stem + ".sync-conflict-20261205-101010-ABCDEFG.mps"))
    b.daemon.wait_for(lambda: lag_of(b.daemon, "laptop") == 0)
    assert b.daemon.call("sync_status")["problems"] == []
    assert "7443" in text_on_b()
