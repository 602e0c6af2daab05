"""Files that are not regular, or are huge (issue 22, point 3; and ``mine`` stopping at an unreadable link,
point 8). A FIFO blocks whoever opens it, ``/dev/zero`` never ends, ``/proc/self/environ`` holds the daemon's
secrets, a sparse 5 GB ``.txt`` fills memory: none is read, each is counted in ``status`` (or the ``mine``
summary) and logged with its path and reason, and the daemon keeps ingesting, answering and stopping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mempal.protocol import INVALID_PARAMS
from tests.conftest import Daemon, mempal_cli
from tests.integration.test_crash import keyword_idle
from tests.integration.test_files_in_motion import _start_without_root_override, keys, wait_keys, write

ENV = {"MEMPAL_INGEST_DEBOUNCE_MS": "50"}
SID = "a0722000-0000-4000-8000-000000000001"


def vm_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def healthy(d: Daemon) -> None:
    assert d.proc is not None and d.proc.poll() is None, d.logs()[-3000:]
    assert d.call("ping") == {"pong": True}
    assert "ingest_crashed" not in d.logs() and "handler_crashed" not in d.logs(), d.logs()[-3000:]


def timed_status(d: Daemon) -> float:
    t0 = time.monotonic()
    d.call("status", timeout=10)
    return time.monotonic() - t0


def error_of(d: Daemon, method: str, params: dict[str, Any]) -> dict[str, Any]:
    from mempal.connection import Connection
    from mempal.protocol import RpcError
    from tests.integration.test_socket_abuse import sock_path

    with Connection(sock_path(d), timeout=30) as conn:
        try:
            conn.call(method, params)
        except RpcError as exc:
            return {"code": exc.code, "message": exc.message}
    raise AssertionError(f"{method} {params} was accepted")


@pytest.mark.timeout(240)
def test_fifos_in_the_projects_folder_never_block_ingest_status_or_sigterm(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-fifo"
    proj.mkdir(parents=True)
    for i in range(3):
        os.mkfifo(proj / f"pipe-{i}.jsonl")
    write(proj / f"{SID}.jsonl", SID, range(1))
    daemon.start(extra_env=ENV)
    daemon.wait_for(lambda: set(keys(daemon)) == {"x-u0"})
    os.mkfifo(proj / "pipe-live.jsonl")  # one more while it runs: its event reaches the reader
    write(proj / f"{SID}.jsonl", SID, range(1, 3))
    daemon.wait_for(lambda: set(keys(daemon)) == {"x-u0", "x-u1", "x-u2"}, timeout=60)
    st = keyword_idle(daemon, 60)
    assert max(timed_status(daemon) for _ in range(5)) < 2.0
    src = st["sources"][0]
    assert src["refused"] == {"fifo": 3} or src["refused"] == {"fifo": 4}, src
    assert all(r == "fifo" for r in src["refused_paths"].values())
    logs = daemon.logs()
    assert all(f"pipe-{i}.jsonl" in logs for i in range(3)) and '"reason": "fifo"' in logs
    daemon.call("ingest_file", {"path": str(proj / f"{SID}.jsonl")})  # the hooks' call still works
    healthy(daemon)
    t0 = time.monotonic()
    assert daemon.stop() == 0
    print(f"RELIABILITY fifos=4 sigterm_s={time.monotonic() - t0:.1f}")


@pytest.mark.timeout(300)
def test_mine_refuses_fifos_devices_proc_and_giant_files_and_records_every_file(daemon: Daemon,
                                                                               tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# alpha\n\nThe alpha note: the deploy runs on kumquat servers.\n")
    (notes / "d.md").write_text("# delta\n\nThe delta note: zebras guard the staging cluster.\n")
    os.mkfifo(notes / "pipe.txt")
    (notes / "zero.txt").symlink_to("/dev/zero")
    (notes / "environ.txt").symlink_to("/proc/self/environ")
    (notes / "gone.md").symlink_to(tmp_path / "nothing-here.md")
    with (notes / "big.txt").open("wb") as fh:
        fh.truncate(5 * 1024**3)  # sparse: 5 GB by its size, nothing on disk
    _start_without_root_override(daemon)  # as root: without CAP_DAC_OVERRIDE, so the 000 file below is unreadable
    secret = tmp_path / "secret.md"
    secret.write_text("a secret that must not be read")
    secret.chmod(0)
    (notes / "b.md").symlink_to(secret)
    assert daemon.proc is not None
    before = vm_kb(daemon.proc.pid, "VmHWM")

    # Through the CLI, as a user runs it (planned batches: one bad file must not stop the rest).
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", "mine", str(notes), "--json"], env=daemon.env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["files"] == 8, summary
    assert summary["skipped"].get("fifo") == 1 and summary["skipped"].get("device") == 1, summary
    assert summary["skipped"].get("pseudo_file") == 1 and summary["skipped"].get("too_large") == 1, summary
    errors = "\n".join(summary["errors"])
    assert "gone.md" in errors and "b.md" in errors and "Permission denied" in errors, summary
    hits = daemon.call("search", {"query": "zebras guard the staging cluster"})["hits"]
    assert hits and hits[0]["source_path"] == str(notes / "d.md")
    texts = [d.get("text", "") for d in daemon.call("drawers", {"limit": 1000, "fields": ["text"]})["drawers"]]
    assert not any("MEMPAL_" in t or "PATH=" in t for t in texts), "the daemon's environment was stored"
    assert not any("secret that must not" in t for t in texts)

    # The socket call names each skipped file and why; the folder with its FIFO mined 50 times at once (the
    # finding: enough of these and status hung, SIGTERM no longer stopped the daemon) blocks nothing.
    direct = daemon.call("mine", {"paths": [str(notes)]}, timeout=120)
    listed = "\n".join(direct["skipped_files"])
    assert "pipe.txt: a FIFO" in listed and "zero.txt: a device" in listed, listed
    assert "big.txt: 5,368,709,120 bytes" in listed and "environ.txt: a file of a kernel pseudo" in listed, listed
    results: list[Any] = []

    def mine_fifo() -> None:
        try:
            results.append(daemon.call("mine", {"paths": [str(notes)]}, timeout=60))
        except Exception as exc:
            results.append(exc)

    threads = [threading.Thread(target=mine_fifo) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 50 and all(isinstance(r, dict) for r in results), results[:3]
    assert timed_status(daemon) < 2.0
    grown_mb = (vm_kb(daemon.proc.pid, "VmHWM") - before) / 1024
    print(f"RELIABILITY special_files mine_probes=52 peak_rss_growth_mb={grown_mb:.0f}")
    assert grown_mb < 200, f"peak memory grew by {grown_mb:.0f} MB"
    logs = daemon.logs()
    assert "file_skipped" in logs and str(notes / "zero.txt") in logs
    healthy(daemon)
    assert daemon.stop() == 0


@pytest.mark.timeout(240)
def test_paths_naming_devices_proc_or_fifos_are_refused(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-fifo"
    proj.mkdir(parents=True)
    os.mkfifo(proj / "hook.jsonl")
    os.mkfifo(tmp_path / "pipe.md")
    daemon.start(extra_env=ENV)
    for method, params in (("watch_add", {"path": "/dev/zero"}), ("watch_add", {"path": "/proc/self/environ"}),
                           ("watch_add", {"path": "/proc"}), ("mine", {"paths": ["/proc/self/environ"]}),
                           ("mine", {"paths": ["/dev/zero"]}), ("mine", {"paths": [str(tmp_path / "pipe.md")]}),
                           ("ingest_file", {"path": str(proj / "hook.jsonl")}),
                           ("pack_prune", {"file": "/dev/zero"}), ("init", {"path": "/proc"})):
        err = error_of(daemon, method, params)
        assert err["code"] == INVALID_PARAMS and "not read" in err["message"], (method, params, err)
    # nothing was added: only the agents' own folders the home has (Claude Code's, and ~/.claude's memories)
    assert sorted(s["path"] for s in daemon.call("watch_list")["sources"]) == sorted(
        [str(home / ".claude"), str(home / ".claude" / "projects")])
    healthy(daemon)


@pytest.mark.timeout(300)
def test_a_link_to_dev_zero_in_a_watched_folder_is_skipped_at_every_start(daemon: Daemon, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# alpha\n\nThe alpha note about the quartz release train.\n")
    (notes / "z.txt").symlink_to("/dev/zero")
    (notes / "big.txt").write_bytes(b"many words " * 1000)  # 11 kB, over the cap set below
    env = {**ENV, "MEMPAL_INGEST_MAX_FILE_BYTES": "8192", "MEMPAL_INGEST_RECONCILE_INTERVAL_S": "0.5"}
    daemon.start(extra_env=env)
    daemon.call("watch_add", {"path": str(notes)})
    for start in range(2):  # the finding: a crash loop on every restart. Twice, to be sure.
        if start:
            assert daemon.stop() == 0
            daemon.start(extra_env=env)
        keyword_idle(daemon, 120)
        st = daemon.wait_for(lambda: (s := daemon.call("status"))["scans"] >= 4 and s, timeout=60)
        src = next(s for s in st["sources"] if s["path"] == str(notes))
        assert src["refused"] == {"device": 1, "too_large": 1}, src
        assert src["refused_paths"][str(notes / "z.txt")] == "device"
        assert daemon.call("search", {"query": "quartz release train"})["hits"]
        assert daemon.proc is not None and vm_kb(daemon.proc.pid, "VmHWM") < 1_500_000
    shown = mempal_cli(daemon.env, "status").stdout  # and a person reading status sees them, with their paths
    assert "not read: 1 device, 1 too_large" in shown and f"{notes / 'z.txt'} (device)" in shown, shown
    skipped = [ln for ln in daemon.logs().splitlines() if '"file_skipped"' in ln and "z.txt" in ln]
    assert len(skipped) == 2, skipped  # logged once per start, not at each of its scans
    healthy(daemon)


def _watched_notes_with_fifos(daemon: Daemon, tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# alpha\n\nThe alpha note about the quartz release train.\n")
    daemon.start(extra_env={**ENV, "MEMPAL_DAEMON_SHUTDOWN_TIMEOUT_S": "2"})
    daemon.call("watch_add", {"path": str(notes)})
    keyword_idle(daemon, 120)
    for i in range(3):  # more than the daemon's two ingest loops
        os.mkfifo(notes / f"pipe-{i}.txt")
    (notes / "b.md").write_text("# beta\n\nThe beta note about the onyx deploy window.\n")
    return notes


@pytest.mark.timeout(240)
def test_fifos_made_in_a_watched_folder_never_keep_the_daemon_from_answering_or_stopping(
        daemon: Daemon, tmp_path: Path) -> None:
    """FIFOs appear in a watched folder of any format while the daemon runs: it goes on answering, and SIGTERM
    ends it within its shutdown timeout plus the grace period even if a worker thread is stuck opening one
    (``shutdown_forced`` then names where it was stuck)."""
    notes = _watched_notes_with_fifos(daemon, tmp_path)
    daemon.wait_for(lambda: any(s["path"] == str(notes) for s in daemon.call("status")["sources"]), timeout=30)
    assert max(timed_status(daemon) for _ in range(5)) < 2.0
    assert daemon.call("search", {"query": "quartz release train"})["hits"]
    t0 = time.monotonic()
    assert daemon.stop(timeout=60) == 0
    took = time.monotonic() - t0
    print(f"RELIABILITY fifo_watched sigterm_s={took:.1f} forced={'shutdown_forced' in daemon.logs()}")
    assert took < 2 + 10 + 5, f"SIGTERM took {took:.0f}s"


@pytest.mark.timeout(240)
def test_fifos_made_in_a_watched_folder_never_stop_its_other_files_being_read(daemon: Daemon,
                                                                              tmp_path: Path) -> None:
    notes = _watched_notes_with_fifos(daemon, tmp_path)
    daemon.wait_for(lambda: daemon.call("search", {"query": "onyx deploy window"})["hits"], timeout=60)
    # the FIFOs a watch event named are counted as skipped, with their reason, and logged with their paths
    src = daemon.wait_for(lambda: next((s for s in daemon.call("status")["sources"]
                                        if s["path"] == str(notes) and s["skipped"].get("fifo")), None), timeout=60)
    assert set(src["skipped"]) <= {"fifo"}, src
    for _ in range(3):  # the same FIFOs made again (a tool re-creating its pipes): each counted and logged once
        for i in range(3):
            (notes / f"pipe-{i}.txt").unlink()
            os.mkfifo(notes / f"pipe-{i}.txt")
    (notes / "c.md").write_text("# gamma\n\nThe gamma note about the amber failover drill.\n")
    daemon.wait_for(lambda: daemon.call("search", {"query": "amber failover drill"})["hits"], timeout=60)
    src = next(s for s in daemon.call("status")["sources"] if s["path"] == str(notes))
    assert src["skipped"] == {"fifo": 3}, src
    skipped = [ln for ln in daemon.logs().splitlines() if '"file_skipped"' in ln and "pipe-" in ln
               and '"component": "ingest"' in ln]
    assert len(skipped) == 3 and all('"fifo"' in ln for ln in skipped), skipped
    assert not [ln for ln in daemon.logs().splitlines() if '"ingest_failed"' in ln and "pipe-" in ln]


@pytest.mark.timeout(300)
def test_a_link_out_of_a_watched_folder_is_not_read_unless_its_target_is_watched(daemon: Daemon, home: Path,
                                                                                tmp_path: Path) -> None:
    """Issue #41 section 7: a ``.jsonl`` link in a watched conversation folder to a transcript elsewhere was
    followed and stored, while a code project refuses the same link. Now both skip it and count it (``status``:
    ``link_outside``), found by the scan at start and by the event of a link made while running (the reconcile
    scan runs every 300 s: only the event can see that one); a link within the watched tree is read; once the
    user watches the target, it is read."""
    proj = home / ".claude" / "projects" / "-home-u-links"
    elsewhere = tmp_path / "elsewhere"
    other = "a0722000-0000-4000-8000-0000000000f2"
    write(elsewhere / f"{other}.jsonl", other, range(2), tag="out")
    write(proj / f"{SID}.jsonl", SID, range(1))
    (proj / "linked.jsonl").symlink_to(elsewhere / f"{other}.jsonl")  # there at start: the scan
    (proj / "alias.jsonl").symlink_to(proj / f"{SID}.jsonl")  # within the watched tree: read (the same drawers)
    daemon.start(extra_env=ENV)
    wait_keys(daemon, {"x-u0"})
    (proj / "live.jsonl").symlink_to(elsewhere / f"{other}.jsonl")  # made while running: its event
    write(proj / f"{SID}.jsonl", SID, range(1, 2))
    wait_keys(daemon, {"x-u0", "x-u1"})
    src = daemon.wait_for(lambda: next((s for s in daemon.call("status")["sources"] if s["path"] == str(proj.parent)
                                        and len(s["refused_paths"]) == 2), None), timeout=30)
    assert src["refused"] == {"link_outside": 2}, src
    assert set(src["refused_paths"]) == {str(proj / "linked.jsonl"), str(proj / "live.jsonl")}
    skipped = [ln for ln in daemon.logs().splitlines() if '"file_skipped"' in ln and "link_outside" in ln]
    assert len(skipped) == 2 and str(elsewhere) in skipped[0], skipped
    assert "Question out" not in json.dumps(daemon.call("search", {"query": "how does the out pipeline handle"}))

    daemon.call("watch_add", {"path": str(elsewhere)})  # the user watches the target: it is read
    wait_keys(daemon, {"x-u0", "x-u1", "out-u0", "out-u1"})
    healthy(daemon)
    print("RELIABILITY links_outside_refused=2 read_once_watched=2")
