from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mempald.text.codechunk import Chunk, chunk_text, is_probably_binary


def numbered_lines(n: int, width: int = 39) -> str:
    """n lines of exactly ``width`` characters (plus the newline): line i starts with its number."""
    return "".join(f"{i:04d} " + "x" * (width - 5) + "\n" for i in range(1, n + 1))


def test_chunk_is_frozen() -> None:
    c = Chunk(0, "text", 1, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.text = "other"  # type: ignore[misc]


def test_short_text_is_one_chunk() -> None:
    text = "def hello():\n    return 'a greeting that is long enough to keep'\n"
    chunks = chunk_text(text)
    assert chunks == [Chunk(0, text.rstrip(), 1, 2)]


def test_empty_and_tiny_texts() -> None:
    assert chunk_text("") == []
    assert chunk_text("\n\n   \n") == []
    assert chunk_text("x = 1\n") == []  # under min_chars
    assert chunk_text("x = 1\n", min_chars=0) == [Chunk(0, "x = 1", 1, 1)]


def test_sizes_and_whole_line_overlap() -> None:
    # 40-char lines, size 200, overlap 80: 5 lines per chunk, the last 2 lines repeated in the next one.
    text = numbered_lines(20)
    chunks = chunk_text(text, size=200, overlap=80, min_chars=10)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 5), (4, 8), (7, 11), (10, 14), (13, 17), (16, 20)]
    assert all(len(c.text) <= 200 for c in chunks)
    for a, b in itertools.pairwise(chunks):
        shared = a.text.splitlines()[-2:]
        assert b.text.splitlines()[:2] == shared
    assert [c.index for c in chunks] == list(range(len(chunks)))


def test_no_overlap() -> None:
    chunks = chunk_text(numbered_lines(10), size=200, overlap=0, min_chars=10)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 5), (6, 10)]


def test_default_sizes() -> None:
    text = numbered_lines(100)  # 4000 characters
    chunks = chunk_text(text)
    assert all(len(c.text) <= 800 for c in chunks)
    assert all(len(c.text) >= 700 for c in chunks[:-1])
    # every line is somewhere
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert covered == set(range(1, 101))


def test_prefers_paragraph_breaks() -> None:
    para = "A sentence of prose that goes on for a while.\n" * 6  # 6 lines of 46 chars = 276
    text = para + "\n" + para + "\n" + para
    chunks = chunk_text(text, size=500, overlap=0, min_chars=10)
    # A 500-character window holds paragraph 1, the blank line and 4 lines of paragraph 2; the cut falls
    # on the blank line instead (it is past the middle of the window).
    assert chunks[0].text == para.rstrip()
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 6)
    assert chunks[1].start_line == 8


def test_paragraph_cut_only_in_second_half() -> None:
    short = "tiny paragraph here.\n\n"
    body = "line of code that is fairly long and keeps going on\n" * 20
    chunks = chunk_text(short + body, size=400, overlap=0, min_chars=10)
    # The blank line after 21 characters is too early to cut on: the first chunk runs to the size limit.
    assert len(chunks[0].text) > 300


def test_long_line_is_hard_split_with_overlap() -> None:
    chunks = chunk_text("x" * 2000, size=800, overlap=100)
    assert [len(c.text) for c in chunks] == [700, 800, 700]
    assert all(c.start_line == c.end_line == 1 for c in chunks)
    assert sum(len(c.text) for c in chunks) - 2 * 100 == 2000


def test_long_line_splits_on_whitespace_when_it_can() -> None:
    text = " ".join(["word"] * 400)  # 1999 characters, one line
    chunks = chunk_text(text, size=800, overlap=100)
    assert all(len(c.text) <= 800 for c in chunks)
    assert all(not c.text.startswith("ord") and not c.text.endswith("wor") for c in chunks)


def test_overlap_from_a_long_last_line_takes_its_tail() -> None:
    text = "short first line here\n" + "y" * 150 + "\n" + "z" * 150 + "\n"
    chunks = chunk_text(text, size=200, overlap=50, min_chars=10)
    assert len(chunks) == 2
    # The tail of the long y line (about 50 characters, trimmed to leave room for the z line).
    assert chunks[1].text.startswith("y" * 45) and chunks[1].text.endswith("z" * 150)
    assert len(chunks[1].text) <= 200
    assert chunks[1].start_line == 2


def test_line_numbers_count_newlines_only() -> None:
    text = "first line is long enough\r\nsecond\x0cline with a form feed\n\nfourth line at the end"
    (chunk,) = chunk_text(text, min_chars=10)
    assert (chunk.start_line, chunk.end_line) == (1, 4)


def test_leading_blank_lines_are_not_counted_and_indentation_kept() -> None:
    text = "\n\n\n    indented_code_line = compute_something(argument_one, argument_two)\n\n"
    (chunk,) = chunk_text(text)
    assert chunk.start_line == chunk.end_line == 4
    assert chunk.text.startswith("    indented_code_line")


def test_min_chars_drops_small_chunks() -> None:
    text = numbered_lines(5, width=39) + "tail\n"
    chunks = chunk_text(text, size=200, overlap=0, min_chars=10)
    assert [c.end_line for c in chunks] == [5]  # "tail" (4 chars) is dropped


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (-5, 0), (100, 100), (100, -1), (100, 150)])
def test_bad_parameters(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="must"):
        chunk_text("text", size=size, overlap=overlap)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3000), st.integers(min_value=20, max_value=400), st.data())
def test_chunking_properties(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    chunks = chunk_text(text, size=size, overlap=overlap, min_chars=0)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    lines = text.split("\n")
    for c in chunks:
        assert c.text.strip()
        assert len(c.text) <= size
        assert 1 <= c.start_line <= c.end_line <= len(lines)
    starts = [c.start_line for c in chunks]
    assert starts == sorted(starts)
    # Nothing is lost: every non-blank line is in some chunk.
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert {i for i, ln in enumerate(lines, start=1) if ln.strip()} <= covered


@given(st.text(max_size=2000))
def test_chunk_text_never_raises_with_defaults(text: str) -> None:
    for c in chunk_text(text):
        assert len(c.text.strip()) >= 50


# --- binary sniffing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "binary"),
    [
        (b"", False),
        (b"print('hello')\n", False),
        ("h\u00e9llo w\u00f6rld, \u65e5\u672c\u8a9e\n".encode(), False),
        ("caf\u00e9".encode()[:-1], False),  # a UTF-8 character cut by the read
        ("na\u00efve caf\u00e9 text in latin-1\n".encode("latin-1"), False),
        (b"\x1b[31mred\x1b[0m terminal output\n", False),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", True),
        (b"PK\x03\x04\x14\x00\x00\x00", True),
        ("utf-16 text".encode("utf-16"), True),
        (bytes(range(128, 256)), True),
        (bytes([1, 2, 3, 4, 5, 6]) * 20 + b"some text", True),
    ],
)
def test_is_probably_binary(head: bytes, binary: bool) -> None:
    assert is_probably_binary(head) is binary


def test_a_long_line_ending_in_whitespace_makes_no_empty_chunk() -> None:
    """Found by hypothesis: a line one character over the window whose last character is a carriage return."""
    chunks = chunk_text("0" * 20 + "\r", size=20, overlap=0, min_chars=0)
    assert [c.text for c in chunks] == ["0" * 20]
