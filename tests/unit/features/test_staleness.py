"""A memory checked against the files it wrote, on real files: current while one of its lines is there, out of
date when they are all gone or the file is, unknown (nothing said) for another machine's paths, FIFOs and files
over the size cap; digests cached by the file's identity, size and mtime."""

from __future__ import annotations

import os
from pathlib import Path

from mempald.features import staleness
from mempald.normalize import quotes


def memory(did: str, path: Path, written: str, cwd: Path, text: str = "> change it\nDone.") -> dict[str, object]:
    return {"drawer_id": did, "cwd": str(cwd), "timestamp": "2026-10-02T10:00:00Z", "text": text,
            "quotes": quotes.encode({str(path): quotes.telling(written.splitlines())})}


def test_current_changed_gone_and_unknown(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    f = src / "x.py"
    f.write_text("import os\n\ndef answer() -> int:\n    return compute_the_answer(41) + 1\n")
    files = staleness.FileLines()
    m = memory("m1", f, "    return compute_the_answer(41) + 1", tmp_path)
    assert staleness.out_of_date(m, files) is None
    f.write_text("import os\n\ndef answer() -> int:\n    return 42\n")
    assert staleness.out_of_date(m, files) == "may be out of date: src/x.py changed since 2026-10-02"
    f.unlink()
    assert staleness.out_of_date(m, files) == "may be out of date: src/x.py is gone since 2026-10-02"
    elsewhere = memory("m2", Path("/Users/someone/else/app.py"), "value = compute_the_answer(41)", tmp_path)
    assert staleness.out_of_date(elsewhere, files) is None  # not on this machine: nothing to say


def test_fenced_code_under_a_file_name_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("settings = load_settings_from_env()\n")
    text = "> how do we load settings?\nLike this:\n```python app.py\nsettings = load_settings_from_env()\n```"
    m = {"drawer_id": "m", "cwd": str(tmp_path), "timestamp": "2026-10-02", "text": text}
    files = staleness.FileLines()
    assert staleness.out_of_date(m, files) is None
    (tmp_path / "app.py").write_text("settings = Settings.parse_file('app.toml')\n")
    assert staleness.out_of_date(m, files) == "may be out of date: app.py changed since 2026-10-02"


def test_special_and_large_files_are_never_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    big = tmp_path / "big.py"
    big.write_text("x" * 100 + "\n")
    files = staleness.FileLines(max_bytes=50)
    assert files.digests(str(fifo)) is None  # would block forever if opened for reading
    assert files.digests(str(big)) is None


def test_mark_puts_current_memories_first(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("first_line_of_module_a = True\n")
    b.write_text("something else entirely now\n")
    ms = [memory("old", b, "second_line_of_module_b = True", tmp_path),
          memory("cur", a, "first_line_of_module_a = True", tmp_path)]
    marked = staleness.mark(ms, {}, staleness.FileLines())
    assert [m["drawer_id"] for m in marked] == ["cur", "old"]
    assert "stale" not in marked[0] and marked[1]["stale"] == "may be out of date: b.py changed since 2026-10-02"


def test_digests_are_cached_until_the_file_changes(tmp_path: Path) -> None:
    f = tmp_path / "c.py"
    f.write_text("alpha_beta_gamma = 1\n")
    files = staleness.FileLines()
    first = files.digests(str(f))
    assert first is not None and files.digests(str(f)) is first
    f.write_text("alpha_beta_gamma = 2222\n")
    assert files.digests(str(f)) != first
