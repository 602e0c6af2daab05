"""Watched sources: discovery, file reading with cursors, the watchdog bridge and ignore rules."""
