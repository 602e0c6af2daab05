"""What pack reads (issue 47 C1): regular markdown files within the caps; every other one named with the
ingest's reason, never waited on."""

from __future__ import annotations

import os
from pathlib import Path

from mempald.features.pack.chunking import read_sources


def test_fifos_devices_and_files_over_the_caps_are_skipped_with_their_reason(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nalpha " * 10)
    (tmp_path / "b.md").write_text("# B\n\nbeta " * 10)
    (tmp_path / "c.md").write_text("# C\n\ngamma " * 10)
    (tmp_path / "big.md").write_bytes(b"x" * 5000)
    os.mkfifo(tmp_path / "pipe.md")
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere.md")
    sources, skipped = read_sources(tmp_path, max_file_bytes=1000, max_total_bytes=250)
    why = {s.file: s.reason for s in skipped}
    assert why == {"big.md": "too_large", "pipe.md": "fifo", "zero.md": "device", "gone.md": "unreadable",
                   "c.md": "too_large"}, skipped
    assert [s.path for s in sources] == ["a.md", "b.md"]  # c.md: past the folder's 250 bytes
    assert "5,000 bytes, over the pack's file limit (1,000)" in next(s.detail for s in skipped if s.file == "big.md")
    assert "250" in next(s.detail for s in skipped if s.file == "c.md")


def test_a_folder_within_the_caps_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("\ufeff# A\r\n\r\nalpha\r\n")
    sources, skipped = read_sources(tmp_path)
    assert skipped == [] and sources[0].text == "# A\n\nalpha\n"
