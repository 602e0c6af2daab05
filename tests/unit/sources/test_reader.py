from __future__ import annotations

import os
from pathlib import Path

import pytest

from mempald.sources.reader import LINK_OUTSIDE, Refused, link_refusal, prefix_hash, read_capped, read_head, read_lines


def test_partial_last_line_waits(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    r = read_lines(p, 0, None, None, budget=1 << 20, max_line=1 << 20)
    assert [ln.raw for ln in r.lines] == [b'{"a":1}', b'{"b":2}']
    assert r.end == 16 and [ln.offset for ln in r.lines] == [0, 8]
    with p.open("ab") as fh:
        fh.write(b"3}\n")
    r2 = read_lines(p, r.end, r.inode, prefix_hash(p, r.end), budget=1 << 20, max_line=1 << 20)
    assert [ln.raw for ln in r2.lines] == [b'{"c":3}'] and not r2.restarted


def test_truncation_and_replacement_restart(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"one\ntwo\nthree\n")
    r = read_lines(p, 0, None, None, budget=1 << 20, max_line=1 << 20)
    h = prefix_hash(p, r.end)
    p.write_bytes(b"x\n")  # truncated
    assert read_lines(p, r.end, r.inode, h, budget=1 << 20, max_line=1 << 20).restarted
    q = tmp_path / "new"
    q.write_bytes(b"one\ntwo\nthree\nfour\n")
    os.replace(q, p)  # replaced by rename: new inode
    r3 = read_lines(p, r.end, r.inode, h, budget=1 << 20, max_line=1 << 20)
    assert r3.restarted and len(r3.lines) == 4
    # same inode, same size, but rewritten bytes before the offset
    p.write_bytes(b"ONE\ntwo\nthree\nfour\n")
    st = p.stat()
    r4 = read_lines(p, 14, st.st_ino, prefix_hash(tmp_path / "missing", 0) if False else h, budget=1 << 20,
                    max_line=1 << 20)
    assert r4.restarted


def test_oversized_line_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    with p.open("wb") as fh:
        fh.write(b'{"a":1}\n')
        fh.write(b"x" * (5 << 20) + b"\n")
        fh.write(b'{"b":2}\n')
    r = read_lines(p, 0, None, None, budget=64 << 20, max_line=1 << 20)
    assert [ln.raw for ln in r.lines] == [b'{"a":1}', b'{"b":2}']
    assert r.skipped_long == 1 and r.end == p.stat().st_size


def test_budget_stops_early(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(b"line %d\n" % i for i in range(200_000)))
    r = read_lines(p, 0, None, None, budget=1 << 20, max_line=1 << 20)
    assert r.more and 0 < r.end < p.stat().st_size
    assert r.lines[-1].offset + len(r.lines[-1].raw) + 1 == r.end


def test_link_refusal_refuses_only_links_out_of_every_watched_folder(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "watched", tmp_path / "elsewhere"
    (root / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (root / "a.jsonl").write_text("{}\n")
    (elsewhere / "b.jsonl").write_text("{}\n")
    (root / "in.jsonl").symlink_to(root / "a.jsonl")
    (root / "sub" / "up.jsonl").symlink_to("../a.jsonl")
    (root / "out.jsonl").symlink_to(elsewhere / "b.jsonl")
    (root / "dangling.jsonl").symlink_to(tmp_path / "nothing.jsonl")
    assert link_refusal(root / "a.jsonl", root) is None  # not a link
    assert link_refusal(root / "in.jsonl", root) is None and link_refusal(root / "sub" / "up.jsonl", root) is None
    reason, detail = link_refusal(root / "out.jsonl", root) or ("", "")
    assert reason == LINK_OUTSIDE and str(elsewhere / "b.jsonl") in detail and str(root) in detail
    assert link_refusal(root / "out.jsonl", root, [elsewhere]) is None  # the user watches its target
    assert link_refusal(root / "dangling.jsonl", root) is None  # refused when opened, as before


def test_read_head_and_read_capped_refuse_what_is_not_a_regular_file_without_waiting(tmp_path: Path) -> None:
    """Issue 47: the one way a user's file is opened (pack, ignore files, peek...)."""
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "zero").symlink_to("/dev/zero")
    for name, reason in (("pipe", "fifo"), ("zero", "device")):
        for read in (lambda p: read_head(p, 10), lambda p: read_capped(p, 10)):
            with pytest.raises(Refused) as exc:
                read(tmp_path / name)
            assert exc.value.reason == reason and "not read" in str(exc.value)
    f = tmp_path / "notes.md"
    f.write_bytes(b"0123456789" * 3)
    assert read_head(f, 12) == b"012345678901"
    with pytest.raises(Refused) as too:
        read_capped(f, 20, limit="the pack's file limit")
    assert too.value.reason == "too_large" and too.value.detail == "30 bytes, over the pack's file limit (20)"
    with pytest.raises(Refused) as ingest:
        read_capped(f, 20)
    assert ingest.value.detail.endswith("over ingest.max_file_bytes (20); raise it to read this file")
