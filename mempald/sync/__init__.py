"""One memory across machines: each machine writes segments of what it stored, forgot and learned into its own
folder of a folder the user already syncs, and imports every other machine's (docs/SYNC.md)."""
