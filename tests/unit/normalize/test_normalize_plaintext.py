"""The plain-text fallback: quoted turns, paragraph notes, and never an error."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, Exchange
from mempald.normalize.plaintext import NOTE_CHARS, SOURCE_KIND, chunk_paragraphs, parse_document


def test_quoted_turns_with_a_preamble() -> None:
    doc = (
        "# Caching notes\n\nSome intro.\n\n"
        "> How do I clear the cache?\n>\n> It is stale.\n\n"
        "Run `make clean`.\n\nThen restart.\n"
        f"> {INJECT_OPEN}>memory{INJECT_CLOSE}Second question\n"
        "Answer two.\n"
        ">> nested quotes are answer text\n"
    ).encode()
    ex = parse_document(doc, "notes.md")
    assert [(e.kind, e.key, e.user, e.assistant) for e in ex] == [
        ("note", "note:0", "", "# Caching notes\n\nSome intro."),
        ("exchange", "turn:1", "How do I clear the cache?\n\nIt is stale.", "Run `make clean`.\n\nThen restart."),
        ("exchange", "turn:2", "Second question", "Answer two.\n>> nested quotes are answer text"),
    ]
    assert all(e.source_kind == SOURCE_KIND == "text" and e.session_id == "notes.md" for e in ex)
    assert all(e.title == "Caching notes" and e.offset is None for e in ex)
    assert [e.position for e in ex] == [0, 1, 2]


def test_rendered_exchanges_read_back() -> None:
    originals = [Exchange("x", "s", "k1", "first line\n\nthird line", "reply\nmore"),
                 Exchange("x", "s", "k2", "second prompt", "")]
    doc = "\n\n".join(e.render() for e in originals).encode()
    back = parse_document(doc)
    assert [(e.user, e.assistant) for e in back] == [(e.user, e.assistant) for e in originals]


def test_paragraph_notes() -> None:
    paras = [f"Paragraph {i} " + "word " * 40 for i in range(10)]
    ex = parse_document("\n\n".join(paras).encode(), "plain.txt")
    assert all(e.kind == "note" and e.user == "" for e in ex)
    assert all(len(e.assistant) <= NOTE_CHARS for e in ex)
    assert "\n\n".join(e.assistant for e in ex).replace("\n\n", " ").split() == " ".join(paras).split()
    assert [e.key for e in ex] == [f"note:{i}" for i in range(len(ex))]
    assert ex[0].title == "plain.txt"


def test_long_lines_and_paragraphs_are_split() -> None:
    assert chunk_paragraphs("x" * 2000) == ["x" * 800, "x" * 800, "x" * 400]
    lines = "\n".join(["y" * 300] * 5)
    assert [len(c) for c in chunk_paragraphs(lines)] == [601, 601, 300]
    assert chunk_paragraphs("\n\n \n\n") == []


def test_never_an_error() -> None:
    assert parse_document(b"") == []
    ex = parse_document(b"\xff\xfe\x00 bad bytes \x80")
    assert len(ex) == 1 and "\ufffd" in ex[0].assistant
    assert parse_document(b"\xef\xbb\xbfhello\r\nworld")[0].assistant == "hello\nworld"
    assert parse_document(f"{INJECT_OPEN}>only{INJECT_CLOSE}".encode()) == []


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab >\n#\t")), max_size=400))
def test_notes_and_turns_lose_no_words(text: str) -> None:
    ex = parse_document(text.encode())
    words = [w for e in ex for part in (e.user, e.assistant) for w in part.split()]
    lines = text.split("\n")
    if any(ln.startswith("> ") for ln in lines):  # a conversation: quote markers go, everything else stays
        lines = [ln[2:] if ln.startswith("> ") else "" if ln.rstrip() == ">" else ln for ln in lines]
    assert sorted(words) == sorted(w for ln in lines for w in ln.split())
