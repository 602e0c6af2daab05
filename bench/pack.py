"""``mempal pack`` on a folder of real markdown: wall time, and the daemon's RSS before, at peak and after.

    python bench/pack.py [--n 40] [--kb 300] [--smoke] [--json PATH] [--keep] [--in-process]

The folder is cut from real markdown (this repository's README, docs and notes, and the shared fixtures'
documents and aider chat logs when ``../shared`` is there): the texts are split at their headings and dealt
into ``--n`` files up to ``--kb`` KB in all. A real daemon is started, its idle RSS taken once it has
settled, then ``pack`` is called over the socket (as ``mempal pack`` does) and timed; RSS is sampled meanwhile
and read again when it returns (after a second, and after ten). ``--in-process`` also times ``run_pack`` in
this process, without the socket.
"""

from __future__ import annotations

import re
import tempfile
import threading
import time
from pathlib import Path

from _harness import REPO, Daemon, bench_env, loadavg, parser, report, size

SHARED = REPO.parent / "shared"


def sources() -> list[Path]:
    found = [p for p in sorted(REPO.rglob("*.md")) if ".git" not in p.parts and "packed" not in p.parts]
    if SHARED.is_dir():
        found += sorted(SHARED.rglob("*.md"))
    return [p for p in found if p.stat().st_size > 500]


def write_folder(folder: Path, n_files: int, kb: int) -> tuple[int, int]:
    sections: list[str] = []
    for p in sources():
        text = p.read_text(encoding="utf-8", errors="replace")
        sections += [s for s in re.split(r"\n(?=#{1,3} )", text) if s.strip()]
    budget = kb * 1024
    files: list[list[str]] = [[] for _ in range(n_files)]
    used = 0
    for i, s in enumerate(sections):
        if used + len(s.encode()) > budget:
            break
        files[i % n_files].append(s)
        used += len(s.encode())
    folder.mkdir(parents=True, exist_ok=True)
    for i, parts in enumerate(files):
        (folder / f"note_{i:02d}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(parts) + "\n", encoding="utf-8")
    return n_files, sum(f.stat().st_size for f in folder.glob("*.md"))


def main() -> None:
    ap = parser(__doc__ or "", 40, 4)
    ap.add_argument("--kb", type=int, default=300)
    ap.add_argument("--in-process", action="store_true")
    args = ap.parse_args()
    n_files = size(args)
    kb = 20 if args.smoke else args.kb
    load_start = loadavg()
    with bench_env(keep=args.keep) as be:
        folder = be.root / "notes"
        files, size_b = write_folder(folder, n_files, kb)
        d = Daemon(be).start()
        try:
            time.sleep(3.0)
            idle_before = d.rss_mb()
            peak = [idle_before]
            done = threading.Event()

            def sample() -> None:
                while not done.wait(0.2):
                    peak[0] = max(peak[0], d.rss_mb())

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            t0 = time.monotonic()
            res = d.call("pack", {"dir": str(folder), "output": str(be.root / "packed")}, timeout=3600)
            pack_s = time.monotonic() - t0
            done.set()
            sampler.join()
            time.sleep(1.0)
            after_1s = d.rss_mb()
            time.sleep(9.0)
            after_10s = d.rss_mb()
        finally:
            d.stop()
        in_process_s = None
        if args.in_process:
            from mempald.embed.embedder import Embedder
            from mempald.features.pack.run import run_pack

            emb = Embedder(models_dir=be.data_dir / "models")
            with tempfile.TemporaryDirectory() as tmp:
                t1 = time.monotonic()
                run_pack(emb, folder, Path(tmp))
                in_process_s = time.monotonic() - t1
    header = res["header"]
    result = {
        "files": files, "bytes": size_b, "pack_s": round(pack_s, 2),
        "in_process_s": None if in_process_s is None else round(in_process_s, 2),
        "rss_idle_before_mb": round(idle_before, 1), "rss_peak_mb": round(peak[0], 1),
        "rss_after_1s_mb": round(after_1s, 1), "rss_after_10s_mb": round(after_10s, 1),
        "header": header, "loadavg_start": load_start,
    }
    report("pack", [
        ("folder", f"{files} files, {size_b / 1024:.0f} KB"),
        ("pack over the socket (s, target < 30)", result["pack_s"]),
        ("in process (s)", result["in_process_s"] if in_process_s is not None else "not run"),
        ("daemon RSS idle before / peak / 1 s after / 10 s after (MB)",
         f"{result['rss_idle_before_mb']} / {result['rss_peak_mb']} / {result['rss_after_1s_mb']} / "
         f"{result['rss_after_10s_mb']}"),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], result, args.json)


if __name__ == "__main__":
    main()
