"""Break-it, round two (issue 47): data control and protocol edges, each attack made again on a real daemon with
real files. M3: a restore that trusted what its manifest did not list (a planted link to a credentials file
became the identity); M6: look-alike wing names that ``forget --wing`` missed; L1: an integer beyond a float's
range lost the request id; L2, L3: export following planted links out of its target; L4: ``mempald doctor``
failing whenever the daemon is stopped. (M7, the full disk, is in ``test_disk_full.py``.)"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempal.protocol import INVALID_PARAMS, PARSE_ERROR
from tests.conftest import Daemon
from tests.integration.test_skeleton import assistant_line, user_line
from tests.integration.test_socket_abuse import read_line, sock_path

ENV = {"MEMPAL_INGEST_DEBOUNCE_MS": "50"}


def session(sid: str, cwd: str, tag: str, n: int) -> str:
    out = []
    for i in range(n):
        ts = f"2026-09-02T09:{i:02d}:00.000Z"
        out.append(user_line(sid, cwd, f"Question {tag}{i}: how does the {tag} cache expire entry {i}?",
                             f"{tag}-u{i}", ts))
        out.append(assistant_line(sid, cwd, f"Entry {i} of the {tag} cache expires after the {tag} lease.",
                                  f"{tag}-a{i}", f"{tag}-u{i}", ts))
    return "\n".join(out) + "\n"


def put(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def cli(env: dict[str, str], module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env, timeout=600)


def live_wings(d: Daemon) -> dict[str, int]:
    wings: dict[str, int] = d.call("list_wings")["wings"]
    return wings


@pytest.fixture
def palaces(tmp_path: Path) -> Iterator[Any]:
    """Environments of further palaces (own data, config and runtime folders; the same HOME)."""
    runtimes: list[str] = []

    def make(name: str) -> dict[str, str]:
        runtimes.append(tempfile.mkdtemp(prefix="mp-"))
        env = dict(os.environ)
        env.update({"MEMPAL_DATA_DIR": str(tmp_path / name / "data"),
                    "MEMPAL_CONFIG_DIR": str(tmp_path / name / "config"), "MEMPAL_RUNTIME_DIR": runtimes[-1] + "/run"})
        return env

    yield make
    for r in runtimes:
        shutil.rmtree(r, ignore_errors=True)


# M3 -----------------------------------------------------------------------------------------------------------
@pytest.mark.timeout(600)
def test_restore_refuses_files_its_manifest_does_not_vouch_for(daemon: Daemon, home: Path, tmp_path: Path,
                                                               palaces: Any) -> None:
    sid = "e4700000-0000-4000-8000-000000000001"
    put(home / ".claude" / "projects" / "-home-u-vault" / f"{sid}.jsonl", session(sid, "/home/u/vault", "vault", 6))
    daemon.start(extra_env=ENV)
    daemon.idle()
    bk = tmp_path / "bk"
    r = cli(daemon.env, "mempal.cli.main", "backup", str(bk), "--json")
    assert r.returncode == 0, r.stderr
    daemon.stop()
    # The manifest is complete: every file of the backup, with its size and SHA-256.
    manifest = json.loads((bk / "MANIFEST.json").read_text())
    on_disk = {p.relative_to(bk).as_posix() for p in bk.rglob("*") if p.is_file()} - {"MANIFEST.json"}
    assert set(manifest["files"]) == on_disk and "state.sqlite3" in on_disk
    assert all(len(v["sha256"]) == 64 and v["size"] >= 0 for v in manifest["files"].values())
    assert not (bk / "config" / "identity.md").exists()  # this palace had no identity file

    secret = put(tmp_path / "aws" / "credentials", "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG\n")

    def attacked(name: str) -> Path:
        copy = tmp_path / "attacks" / name
        shutil.copytree(bk, copy, symlinks=True)
        return copy

    def rewrite(copy: Path, change: Any) -> None:
        m = json.loads((copy / "MANIFEST.json").read_text())
        change(m)
        (copy / "MANIFEST.json").write_text(json.dumps(m))

    cases: list[tuple[str, Path, str]] = []
    a = attacked("identity-link")  # the finding: an unlisted config link to a credentials file
    (a / "config" / "identity.md").symlink_to(secret)
    cases.append(("unlisted config link", a, "symbolic link"))
    a = attacked("unlisted-file")
    put(a / "config" / "taxonomy.toml", "[rooms]\nsecrets = ['aws']\n")
    cases.append(("unlisted file", a, "does not list"))
    a = attacked("swapped")  # a listed file moved aside and an unlisted one put in the store
    shutil.copyfile(a / "state.sqlite3", a / "store" / "state-copy")
    cases.append(("unlisted file in the store", a, "does not list"))
    a = attacked("empty-manifest")
    rewrite(a, lambda m: m.update(files={}))
    cases.append(("empty manifest", a, "lists no files"))
    a = attacked("no-state-listed")
    (a / "state.sqlite3").unlink()
    rewrite(a, lambda m: m["files"].pop("state.sqlite3"))
    cases.append(("no state database listed", a, "no state database"))
    a = attacked("outside")
    rewrite(a, lambda m: m["files"].update({"../../aws/credentials": {"size": 1, "sha256": "0" * 64}}))
    cases.append(("a path outside", a, "not a file inside"))
    a = attacked("no-hash")
    rewrite(a, lambda m: m["files"]["state.sqlite3"].update(sha256="x"))
    cases.append(("an entry without its hash", a, "no size and SHA-256"))
    a = attacked("listed-link")  # a listed file replaced by a link to an identical copy (same size and hash)
    twin = shutil.copyfile(a / "state.sqlite3", tmp_path / "twin.sqlite3")
    (a / "state.sqlite3").unlink()
    (a / "state.sqlite3").symlink_to(twin)
    cases.append(("a listed file as a link", a, "symbolic link"))
    a = attacked("manifest-link")
    shutil.move(a / "MANIFEST.json", tmp_path / "manifest-elsewhere.json")
    (a / "MANIFEST.json").symlink_to(tmp_path / "manifest-elsewhere.json")
    cases.append(("the manifest as a link", a, "cannot be read as a file"))
    a = attacked("fifo")
    os.mkfifo(a / "config" / "pipe")
    cases.append(("a FIFO", a, "not a regular file"))

    for what, copy, needle in cases:
        env = palaces(f"into-{copy.name}")
        res = cli(env, "mempald", "restore", str(copy))
        assert res.returncode == 2 and needle in res.stderr, (what, res.returncode, res.stderr)
        assert not (Path(env["MEMPAL_DATA_DIR"]) / "store").exists(), what
        assert not (Path(env["MEMPAL_CONFIG_DIR"]) / "identity.md").exists(), what
    # The backup as written still restores.
    env = palaces("good")
    ok = cli(env, "mempald", "restore", str(bk), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["drawers"] == manifest["drawers"]
    print(f"RELIABILITY restore refused={len(cases)} (unlisted, empty, implausible, links, special files) "
          f"good_backup_restored=1")


# M6 -----------------------------------------------------------------------------------------------------------
NFC = unicodedata.normalize("NFC", "café")
LOOK_ALIKES = {  # cwd folder names that are all the wing "café"
    "nfc": NFC,
    "nfd": unicodedata.normalize("NFD", "café"),
    "fullwidth": "\uff43\uff41\uff46é",
    "zero-width": "ca\u200bf\u200dé",
    "bidi": "\u202ecafé\u202c\u200e",
}


@pytest.mark.timeout(600)
def test_look_alike_wing_names_are_one_wing_that_forget_finds(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    projects = home / ".claude" / "projects"
    for k, (name, folder) in enumerate(LOOK_ALIKES.items()):
        sid = f"e4760000-0000-4000-8000-00000000000{k}"
        put(projects / f"-home-u-{name}" / f"{sid}.jsonl", session(sid, f"/home/u/{folder}", f"w{k}x", 3))
    watched = put(tmp_path / "watched" / "e4761111-0000-4000-8000-000000000001.jsonl",
                  session("e4761111-0000-4000-8000-000000000001", "/home/u/elsewhere", "watch", 2))
    project = tmp_path / "proj"
    put(project / "mempal.toml", 'wing = "\uff43\uff41\uff46e\u0301\u200b"\n')
    put(project / "NOTES.md", "# Cache notes\n\nThe café cache lease is renewed by the lease keeper every minute.\n")
    daemon.start(extra_env=ENV)
    daemon.call("watch_add", {"path": str(watched.parent), "wing": "\u2067cafe\u0301\u2069"})
    daemon.call("watch_add", {"path": str(project), "mode": "projects"})
    saved = daemon.call("ingest", {"text": "The café cache keeps leases for ten minutes.", "wing": "ｃａｆé\u200b"})
    assert saved["wing"] == NFC
    daemon.idle()
    wings = daemon.wait_for(lambda: (w := live_wings(daemon)) and set(w) == {NFC} and w, timeout=60)
    total = wings[NFC]
    assert total >= 5 * 3 + 2 + 1 + 1, wings  # five sessions, the watched folder, the project, the save
    # Every filter form finds them all: search, export, forget (dry run first).
    for form in LOOK_ALIKES.values():
        hits = daemon.call("search", {"query": "how does the cache expire", "wing": form, "limit": 50})["hits"]
        assert hits and {h["wing"] for h in hits} == {NFC}, form
    dry = daemon.call("forget", {"wing": LOOK_ALIKES["bidi"], "dry_run": True})
    assert dry["drawers"] == total, dry
    refused = subprocess.run([sys.executable, "-m", "mempal.cli.main", "forget", "--wing", "\u200b\u200e"],
                             capture_output=True, text=True, env=daemon.env, timeout=120)
    assert refused.returncode != 0 and "no visible characters" in refused.stderr, refused.stderr
    daemon.stop()

    # Wings stored before names were normalised (written into the store as an older daemon did): renamed once at
    # start, so the normal name finds them.
    from mempald.store.base import Filters
    from mempald.store.edge import EdgeStore

    store = EdgeStore(home / ".local/share/mempald/store", 384)
    try:
        page, _ = store.scroll(Filters(wing=(NFC,)), 1000)
        ids = [p.id for p in page]
        store.set_payload(ids[: len(ids) // 2], {"wing": LOOK_ALIKES["nfd"]})
        store.set_payload(ids[len(ids) // 2 :], {"wing": LOOK_ALIKES["zero-width"]})
        assert set(store.facet("wing", Filters())) == {LOOK_ALIKES["nfd"], LOOK_ALIKES["zero-width"]}
        store.flush()
    finally:
        store.close()
    daemon.start(extra_env=ENV)
    daemon.wait_for(lambda: live_wings(daemon) == {NFC: total}, timeout=60)
    assert '"wing_renamed"' in daemon.logs()
    gone = subprocess.run([sys.executable, "-m", "mempal.cli.main", "forget", "--wing", NFC, "--yes", "--json"],
                          capture_output=True, text=True, env=daemon.env, timeout=300)
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)["drawers"] == total
    assert live_wings(daemon) == {}
    print(f"RELIABILITY wings look_alikes={len(LOOK_ALIKES) + 3} one_wing=1 forgotten={total} renamed_at_start=2")


# L1, L2, L3, L4 -----------------------------------------------------------------------------------------------
def ask(d: Daemon, line: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(sock_path(d)))
        s.sendall(line + b"\n")
        reply: dict[str, Any] = json.loads(read_line(s))
    return reply


@pytest.mark.timeout(600)
def test_huge_numbers_planted_links_and_an_offline_doctor(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    projects = home / ".claude" / "projects"
    for k, wing in enumerate(("alpha", "beta")):
        sid = f"e4710000-0000-4000-8000-00000000000{k}"
        put(projects / f"-home-u-{wing}" / f"{sid}.jsonl", session(sid, f"/home/u/{wing}", wing, 3))
    daemon.start(extra_env=ENV)
    daemon.idle()
    drawers = daemon.call("status")["drawers"]

    # L1: integers past a float's range (JSON integers have no size limit) -> -32602 with the id kept.
    huge = "9" * 400
    lines = [
        f'{{"jsonrpc":"2.0","id":7,"method":"search","params":{{"query":"x","limit":{huge}}}}}',
        f'{{"jsonrpc":"2.0","id":"s","method":"search","params":{{"query":"x","since":{huge}}}}}',
        f'{{"jsonrpc":"2.0","id":8,"method":"drawers","params":{{"until":-{huge}}}}}',
        f'{{"jsonrpc":"2.0","id":9,"method":"kg","params":{{"id":{huge}}}}}',
        f'{{"jsonrpc":"2.0","id":10,"method":"search","params":{{"query":"x","min_score":{huge}}}}}',
        f'{{"jsonrpc":"2.0","id":{huge},"method":"search","params":{{"query":"x","limit":{huge}}}}}',
    ]
    for line in lines:
        reply = ask(daemon, line.encode())
        sent = json.loads(line)
        assert reply["error"]["code"] == INVALID_PARAMS and reply["id"] == sent["id"], (line[:80], reply)
    too_long = ask(daemon, f'{{"jsonrpc":"2.0","id":11,"method":"ping","params":{{"n":{"9" * 5000}}}}}'.encode())
    assert too_long["error"]["code"] == PARSE_ERROR  # past Python's digit limit: not JSON it reads
    assert daemon.call("ping") == {"pong": True}

    outside = tmp_path / "outside"
    outside.mkdir()
    victim = put(tmp_path / "victim.txt", "not to be touched\n")

    # L2: a wing folder of a Markdown export replaced by a link out of it, then exported again with --force.
    notes = tmp_path / "notes"
    first = cli(daemon.env, "mempal.cli.main", "export", "-o", str(notes), "--format", "md", "--json")
    assert first.returncode == 0, first.stderr
    shutil.rmtree(notes / "alpha")
    (notes / "alpha").symlink_to(outside, target_is_directory=True)
    (notes / "index.md").unlink()
    (notes / "index.md").symlink_to(victim)
    again = cli(daemon.env, "mempal.cli.main", "export", "-o", str(notes), "--format", "md", "--force", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["links_replaced"] >= 1
    assert list(outside.iterdir()) == [] and victim.read_text() == "not to be touched\n"
    assert not (notes / "alpha").is_symlink() and list((notes / "alpha").glob("*.md"))
    assert not (notes / "index.md").is_symlink() and "[[alpha/" in (notes / "index.md").read_text()

    # L3: links at the jsonl export's temp name (as it was: .NAME.PID.tmp) and at the target itself.
    out = tmp_path / "exp" / "palace.jsonl"
    out.parent.mkdir()
    assert daemon.proc is not None
    (out.parent / f".palace.jsonl.{daemon.proc.pid}.tmp").symlink_to(victim)
    out.symlink_to(victim)
    done = cli(daemon.env, "mempal.cli.main", "export", "-o", str(out), "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "not to be touched\n"
    assert not out.is_symlink() and len(out.read_text().splitlines()) == drawers + 1
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]
    assert "handler_crashed" not in daemon.logs()
    daemon.stop()

    # L4: with the daemon stopped, `mempald doctor` is an offline health check: 0 when all it can check is
    # healthy, 1 naming the damage when not.
    healthy = cli(daemon.env, "mempald", "doctor")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "[warn] daemon: stopped" in healthy.stdout and "[FAIL]" not in healthy.stdout
    state = home / ".local/share/mempald/state.sqlite3"
    data = bytearray(state.read_bytes())
    data[0:16] = bytes(b ^ 0xFF for b in data[0:16])
    state.write_bytes(bytes(data))
    sick = cli(daemon.env, "mempald", "doctor")
    assert sick.returncode == 1 and "[FAIL] state database" in sick.stdout and "state.sqlite3" in sick.stdout, (
        sick.stdout)
    print(f"RELIABILITY protocol_and_export huge_number_probes={len(lines) + 1} links_planted=4 followed=0 "
          f"doctor_offline_exit={healthy.returncode}/{sick.returncode}")
