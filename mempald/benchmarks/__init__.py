"""Offline retrieval benchmarks run through the daemon's own components (its composition root) on a throw-away
store: ``mempald bench longmemeval`` and the palace the scripts in ``bench/`` open."""
