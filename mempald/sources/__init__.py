"""Watched sources: what a source is (its roots resolved from settings, the catalog), its paths, reading files with
cursors, ignore and exclusion rules."""
