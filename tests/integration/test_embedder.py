"""The packaged embedding model, for real: assembled offline from PyPI packages into a temp data dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mempald.embed.embedder import DEFAULT_DIM, Embedder


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def embedder(models_dir: Path) -> Embedder:
    return Embedder(models_dir=models_dir, threads=2)


def test_vectors_are_unit_length_and_stable(embedder: Embedder) -> None:
    a = embedder.embed(["the deploy failed because the staging quota ran out", "we chose postgres"])
    assert a.shape == (2, DEFAULT_DIM)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-3)
    again = embedder.embed_query("the deploy failed because the staging quota ran out")
    assert np.allclose(a[0], again, atol=1e-5)


_RELEASE_SCRIPT = """
import json, random, sys
from pathlib import Path
import numpy as np
from mempald.embed.embedder import Embedder

def rss_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS")

embedder = Embedder(models_dir=Path(sys.argv[1]), threads=2)
rnd = random.Random(1)
words = ["deploy", "cache", "database", "migration", "timeout", "retry", "service", "error", "token", "config",
         "build"]
texts = [" ".join(rnd.choice(words) for _ in range(230)) for _ in range(32)]
before_vecs = embedder.embed(texts[:8], batch_size=8)
for i in range(0, len(texts), 8):
    embedder.embed(texts[i : i + 8], batch_size=8)
grown = rss_mb()
released_ok = embedder.release_memory()
released = rss_mb()
same = bool(np.allclose(embedder.embed(texts[:8], batch_size=8), before_vecs, atol=1e-5))
print(json.dumps({"grown": grown, "released": released, "released_ok": released_ok, "same": same}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RSS is read from /proc (Linux)")
def test_release_memory_gives_back_the_batch_arena(embedder: Embedder, models_dir: Path) -> None:
    # In a process of its own: what malloc hands back depends on everything the process did before, so in the
    # test process the figure would depend on which tests ran first. The module's model folder (assembled and
    # fused by ``embedder``) is reused.
    out = subprocess.run([sys.executable, "-c", _RELEASE_SCRIPT, str(models_dir)], capture_output=True,
                         text=True, timeout=300, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["released_ok"]
    assert got["released"] < got["grown"] - 50, got  # measured: about 280 MB back after batches of 8 x 256
    assert got["same"]  # the same model after the release
