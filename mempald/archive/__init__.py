"""The byte-exact transcript archive: what an agent's store deletes (Claude Code after 30 days) is kept here.

Every transcript of a format that declares ``archive`` (Claude Code, Codex), or of a source the settings name, is
copied byte for byte into ``<data dir>/archive`` as the ingest reads it (``keeper.Archive.keep``, called once
by ``mempald.ingest.reading``): a live session's new bytes are appended as a new chunk, a file rewritten in place
or shrunk starts a new version (the old one is kept). Chunks are zstandard-compressed, checksummed (sha256 of
their bytes) and written 0600 (``chunks``); the index is a small SQLite database beside them (``index``).
``restore`` writes a session's files back where the agent expects them.
"""
