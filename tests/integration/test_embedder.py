"""The packaged embedding model, for real: assembled offline from PyPI packages into a temp data dir."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from mempald.embed.embedder import DEFAULT_DIM, Embedder


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(models_dir=tmp_path_factory.mktemp("models"), threads=2)


def test_vectors_are_unit_length_and_stable(embedder: Embedder) -> None:
    a = embedder.embed(["the deploy failed because the staging quota ran out", "we chose postgres"])
    assert a.shape == (2, DEFAULT_DIM)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-3)
    again = embedder.embed_query("the deploy failed because the staging quota ran out")
    assert np.allclose(a[0], again, atol=1e-5)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="RSS is read from /proc (Linux)")
def test_release_memory_gives_back_the_batch_arena(embedder: Embedder) -> None:
    rnd = random.Random(1)
    words = ["deploy", "cache", "database", "migration", "timeout", "retry", "service", "error", "token",
             "config", "build"]
    texts = [" ".join(rnd.choice(words) for _ in range(230)) for _ in range(32)]
    before_vecs = embedder.embed(texts[:8], batch_size=8)
    for i in range(0, len(texts), 8):
        embedder.embed(texts[i : i + 8], batch_size=8)
    grown = rss_mb()
    assert embedder.release_memory()
    released = rss_mb()
    assert released < grown - 50, (grown, released)  # measured: about 280 MB back after batches of 8 x 256
    assert np.allclose(embedder.embed(texts[:8], batch_size=8), before_vecs, atol=1e-5)  # same model after
