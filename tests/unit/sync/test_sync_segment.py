"""Segments: whole or reported, sealed or plain, named so a sync tool's conflicted copy is read too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mempald.sync import records as rec
from mempald.sync.folder import SyncFolder, folder_name
from mempald.sync.seal import Sealer, WrongKey, new_key, read_key, write_key
from mempald.sync.segment import SegmentDamaged, decode, drop_unfinished, encode, name_of, seq_of, write_whole

RECORDS = [rec.drawer_record("a", {"text": "we chose postgres", "ts": 1.0}, [0.5, -0.25, 1.0], "m1"),
           rec.tomb_record("b", {"op": "purge", "at": 2.0, "by": "user"})]


def test_plain_segment_round_trips_and_keeps_text_readable() -> None:
    data = encode("laptop", 7, RECORDS, None)
    assert b"we chose postgres" in data
    seg = decode(data, None)
    assert (seg.machine, seg.seq, seg.records) == ("laptop", 7, RECORDS)
    assert rec.unpack_vector(seg.records[0]["dense"], 3) == [0.5, -0.25, 1.0]
    assert rec.unpack_vector(seg.records[0]["dense"], 384) is None  # another model's size: embedded here


@pytest.mark.parametrize("cut", [1, 10, 200])
def test_truncated_segment_is_reported_not_read(cut: int) -> None:
    data = encode("laptop", 1, RECORDS, None)
    with pytest.raises(SegmentDamaged, match=r"truncated|header"):
        decode(data[:-cut], None)


def test_changed_byte_is_reported() -> None:
    data = bytearray(encode("laptop", 1, RECORDS, None))
    data[-5] ^= 0x20
    with pytest.raises(SegmentDamaged, match="checksum"):
        decode(bytes(data), None)
    with pytest.raises(SegmentDamaged):
        decode(b"", None)
    with pytest.raises(SegmentDamaged, match="not a mempal segment"):
        decode(b"hello world\n", None)


def test_sealed_segment_hides_text_and_refuses_a_wrong_key() -> None:
    sealer = Sealer(new_key())
    data = encode("laptop", 3, RECORDS, sealer)
    assert b"postgres" not in data
    assert decode(data, sealer).records == RECORDS
    with pytest.raises(WrongKey):
        decode(data, Sealer(new_key()))
    with pytest.raises(WrongKey, match="no sync key"):
        decode(data, None)
    with pytest.raises(SegmentDamaged, match="not encrypted"):  # a plain segment in an encrypted folder
        decode(encode("laptop", 4, RECORDS, None), sealer)
    assert "key" not in repr(sealer).replace("<key>", "")


def test_key_file_is_owner_only_and_checked(tmp_path: Path) -> None:
    key = new_key()
    path = write_key(key, tmp_path / "cfg" / "sync.key")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_key(path) == key
    (tmp_path / "bad.key").write_text("not a key\n")
    with pytest.raises(WrongKey, match="does not hold a sync key"):
        read_key(tmp_path / "bad.key")
    with pytest.raises(WrongKey, match="no key"):
        read_key(tmp_path / "missing.key")
    token = Sealer(key).check_token()
    Sealer(key).verify(token)
    with pytest.raises(WrongKey):
        Sealer(new_key()).verify(token)


def test_names_conflicted_copies_and_unfinished_files(tmp_path: Path) -> None:
    assert seq_of(name_of(12)) == 12
    assert seq_of("seg-0000000012 (conflicted copy 2026-12-05).mps") == 12
    assert seq_of("seg-0000000012.sync-conflict-20261205-101010-ABCDEF.mps") == 12
    assert seq_of(".seg-0000000012.mps.tmp-99") is None
    assert seq_of("seg-0000000012.mps.part") is None
    assert seq_of("seg-0000000012 copy.mps") is None
    folder = SyncFolder(tmp_path, "desk top/1")
    assert folder.own.name == folder_name("desk top/1") == "desk_top_1"
    write_whole(folder.own, name_of(1), encode("desk top/1", 1, RECORDS, None))
    (folder.own / ".seg-0000000002.mps.tmp-123").write_bytes(b"half")
    (folder.own / "seg-0000000001 (conflicted copy).mps").write_bytes(b"x")
    listed = folder.segments(folder.own.name)
    assert [(s.seq, s.name) for s in listed] == [(1, "seg-0000000001 (conflicted copy).mps"),
                                                 (1, "seg-0000000001.mps")]
    assert folder.last_seq() == 1
    assert drop_unfinished(folder.own) == 1
    assert not any(n.startswith(".") for n in os.listdir(folder.own))


def test_duplicates_collapse_by_id() -> None:
    twice = [*RECORDS, rec.drawer_record("a", {"text": "newer"}, None, "")]
    out = rec.collapsed(twice)
    assert [r["id"] for r in out] == ["b", "a"]
    assert out[1]["payload"]["text"] == "newer"


def test_a_segment_is_never_overwritten(tmp_path: Path) -> None:
    from mempald.sync.exporter import _write_new

    folder = SyncFolder(tmp_path, "laptop")
    first = write_whole(folder.own, name_of(1), encode("laptop", 1, RECORDS, None))
    before = first.read_bytes()
    with pytest.raises(FileExistsError):
        write_whole(folder.own, name_of(1), b"other", replace=False)
    seq, data = _write_new(folder, 1, [rec.tomb_record("c", {"op": "delete"})], None)
    assert seq == 2 and first.read_bytes() == before
    assert decode((folder.own / name_of(2)).read_bytes(), None).records[0]["id"] == "c" and data
    assert not [p for p in folder.own.iterdir() if p.name.startswith(".")]
