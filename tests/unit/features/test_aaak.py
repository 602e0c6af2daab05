"""AAAK dialect: data model checks, exact text format, parse errors, and the (lossy) compressor."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mempald.features import aaak
from mempald.features.aaak import (
    EMOTION_CODES,
    EMOTIONS,
    FLAGS,
    AAAKError,
    Document,
    Header,
    Tunnel,
    Zettel,
    compress,
    compress_many,
    detect_emotions,
    detect_flags,
    encode,
    entity_code,
    parse,
)

SEED_DOC = Document(
    header=Header("my_app", "auth", "2026-03-15", "Auth migration decision", (("ALC", "Alice"), ("BOB", "Bob"))),
    zettels=(
        Zettel(1, ("ALC", "BOB"), ("auth", "postgres", "migration"),
               "switched to Postgres because Redis sessions weren't ACID", 8, ("trust", "relief"),
               ("DECISION", "PIVOT"), "drawer-1"),
        Zettel(2, ("ALC",), ("testing", "integration"), "wrote the migration test suite overnight", 6,
               ("determ", "satis"), ("MILESTONE",)),
    ),
    tunnels=(Tunnel(1, 2, "caused_by"),),
    arc=("doubt", "determ", "relief"),
)

SEED_TEXT = (
    "H:my_app|auth|2026-03-15|Auth migration decision\n"
    "E:ALC=Alice,BOB=Bob\n"
    'Z1:ALC,BOB|auth,postgres,migration|"switched to Postgres because Redis sessions weren\'t ACID"'
    "|W8|trust,relief|DECISION,PIVOT|@drawer-1\n"
    'Z2:ALC|testing,integration|"wrote the migration test suite overnight"|W6|determ,satis|MILESTONE\n'
    "T:Z1<->Z2|caused_by\n"
    "ARC:doubt->determ->relief\n"
)


# ---------------------------------------------------------------------------------------------- format


def test_encode_seed_example_exactly() -> None:
    assert encode(SEED_DOC) == SEED_TEXT


def test_parse_seed_example() -> None:
    assert parse(SEED_TEXT) == SEED_DOC


def test_parse_accepts_crlf_blank_lines_and_any_order_after_header() -> None:
    text = (
        "\r\nH:w|r|d|t\r\n\r\nARC:joy\r\n"
        'T:Z2<->Z1|x\r\nZ1:||""|W1||\r\nZ2:|a|"q"|W10|joy|CORE\r\n'
    )
    doc = parse(text)
    assert doc.arc == ("joy",)
    assert [z.id for z in doc.zettels] == [1, 2]
    assert doc.tunnels == (Tunnel(2, 1, "x"),)
    assert doc.zettels[0] == Zettel(1, (), (), "", 1)


def test_escaping_of_delimiters() -> None:
    doc = Document(
        header=Header("w|x", "r\\oom", "2026", "line1\nline2\r", (("AL2", "Smith, Al=Jr|"),)),
        zettels=(Zettel(1, ("AL2",), ("c,d", "e|f", "\\"), 'he said "hi" | then, left\n', 5, source="@id|1"),),
        tunnels=(),
    )
    text = encode(doc)
    assert text.count("\n") == 3  # header, entity map, one zettel: no raw newline leaked
    assert "e\\|f" in text and "c\\,d" in text and "Smith\\, Al=Jr\\|" in text
    assert parse(text) == doc


def test_empty_document_round_trip() -> None:
    doc = Document(Header())
    assert encode(doc) == "H:|||\n"
    assert parse(encode(doc)) == doc


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 1),
        ("Z1:||\"\"|W1||\n", 1),
        ("H:a|b|c\n", 1),
        ("H:a|b|c|d\nH:a|b|c|d\n", 2),
        ("H:a|b|c|d\n\nZ1:||\"q\"|W11||\n", 3),
        ("H:a|b|c|d\nZ1:||q|W1||\n", 2),
        ("H:a|b|c|d\nZ1:ali||\"q\"|W1||\n", 2),
        ("H:a|b|c|d\nZ1:||\"q\"|W1|happy|\n", 2),
        ("H:a|b|c|d\nZ1:||\"q\"|W1||URGENT\n", 2),
        ("H:a|b|c|d\nZ1:||\"q\"|W1||\nZ1:||\"q\"|W1||\n", 3),
        ("H:a|b|c|d\nZ1:||\"q\"|W1||\nT:Z1<->Z9|x\n", 3),
        ("H:a|b|c|d\nZ1:||\"q\"|W1||\nT:Z1<->Z1|x\n", 3),
        ("H:a|b|c|d\nZ1:|a,,b|\"q\"|W1||\n", 2),
        ("H:a|b|c|d\nZ1:||\"q\\t\"|W1||\n", 2),
        ("H:a|b|c|d\nZ1:||\"q\"|W1||\\\n", 2),
        ("H:a|b|c|d\nZ1:||\"q\"|W1|||src\n", 2),
        ("H:a|b|c|d\nZ1:||\"q\"|W1\n", 2),
        ("H:a|b|c|d\nE:ALC=\n", 2),
        ("H:a|b|c|d\nE:ALC=A,ALC=B\n", 2),
        ("H:a|b|c|d\nE:AL=A\n", 2),
        ("H:a|b|c|d\nARC:joy->meh\n", 2),
        ("H:a|b|c|d\nARC:joy\nARC:joy\n", 3),
        ("H:a|b|c|d\nhello\n", 2),
        ("H:a|b|c\\x|d\n", 1),
    ],
)
def test_parse_errors_carry_line_numbers(text: str, line: int) -> None:
    with pytest.raises(AAAKError) as info:
        parse(text)
    assert info.value.line == line
    assert str(info.value).startswith(f"line {line}:")
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Zettel(0, (), (), "", 1),
        lambda: Zettel(1, (), (), "", 0),
        lambda: Zettel(1, (), (), "", 11),
        lambda: Zettel(1, ("alice",), (), "", 1),
        lambda: Zettel(1, (), ("",), "", 1),
        lambda: Zettel(1, (), (), "", 1, ("happy",)),
        lambda: Zettel(1, (), (), "", 1, (), ("IMPORTANT",)),
        lambda: Zettel(1, (), (), "", 1, source=""),
        lambda: Tunnel(1, 1),
        lambda: Header(entity_map=(("ALC", "A"), ("ALC", "B"))),
        lambda: Document(Header(), (Zettel(1, (), (), "", 1),), (Tunnel(1, 2),)),
        lambda: Document(Header(), (Zettel(1, (), (), "", 1), Zettel(1, (), (), "", 1))),
        lambda: Document(Header(), arc=("meh",)),
    ],
)
def test_invalid_values_are_refused(make: object) -> None:
    assert callable(make)
    with pytest.raises(AAAKError):
        make()


# ------------------------------------------------------------------------------------ round-trip property

_TRICKY = st.sampled_from([*'|,\\\n\r"=-><@:Z \t\u2028é字', "\\n", "->", "<->", "W1", "\\|"])
_TEXT = st.lists(st.one_of(st.text(max_size=3), _TRICKY), max_size=8).map("".join)
_ITEM = _TEXT.filter(bool)
_CODE = st.from_regex(r"[A-Z][A-Z0-9]{2}", fullmatch=True)
_EMO = st.sampled_from(sorted(EMOTION_CODES))


@st.composite
def documents(draw: st.DrawFn) -> Document:
    entity_map = draw(st.lists(st.tuples(_CODE, _ITEM), unique_by=lambda p: p[0], max_size=4))
    header = Header(draw(_TEXT), draw(_TEXT), draw(_TEXT), draw(_TEXT), tuple(entity_map))
    ids = draw(st.lists(st.integers(1, 10**9), unique=True, max_size=5))
    zettels = tuple(
        Zettel(
            id=zid,
            entities=tuple(draw(st.lists(_CODE, max_size=3))),
            topics=tuple(draw(st.lists(_ITEM, max_size=3))),
            quote=draw(_TEXT),
            weight=draw(st.integers(1, 10)),
            emotions=tuple(draw(st.lists(_EMO, max_size=3))),
            flags=tuple(draw(st.lists(st.sampled_from(FLAGS), max_size=3))),
            source=draw(st.none() | _ITEM),
        )
        for zid in ids
    )
    tunnels: tuple[Tunnel, ...] = ()
    if len(ids) >= 2:
        pairs = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=4))
        tunnels = tuple(Tunnel(a, b, draw(_TEXT)) for a, b in pairs if a != b)
    arc = tuple(draw(st.lists(_EMO, max_size=5)))
    return Document(header, zettels, tunnels, arc)


@settings(max_examples=300, deadline=None)
@given(documents())
def test_round_trip_property(doc: Document) -> None:
    text = encode(doc)
    assert parse(text) == doc
    # Every record is exactly one line: raw newlines never leak out of fields.
    expected_lines = 1 + bool(doc.header.entity_map) + len(doc.zettels) + len(doc.tunnels) + bool(doc.arc)
    assert text.count("\n") == expected_lines


_PIECES = st.sampled_from(
    ["H:", "H:a|b|c|d\n", "E:", "ALC=", "Z1:", "Z2:", "T:Z1<->Z2|", "ARC:", "|", ",", "\\", '"', "W5", "W10",
     "joy", "->", "ALC", "DECISION", "@", "\n", "\r\n", " "]
)


_JUNK = st.lists(st.one_of(_PIECES, st.text(max_size=2)), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_JUNK, _JUNK.map(lambda t: "H:w|r|d|t\n" + t)))
def test_parse_fails_only_with_aaak_error(text: str) -> None:
    try:
        doc = parse(text)
    except AAAKError as exc:
        assert exc.line is not None and exc.line >= 1
        return
    assert parse(encode(doc)) == doc  # whatever parses has a canonical form


# ------------------------------------------------------------------------------------ vocabulary


def test_emotion_table() -> None:
    assert len(EMOTIONS) == 29
    assert len(EMOTION_CODES) == 29  # codes are unique
    assert set(aaak.EMOTION_TRIGGERS) == EMOTION_CODES
    assert EMOTIONS["vulnerability"] == "vul" and EMOTIONS["determination"] == "determ"
    assert all(code.isascii() and code.isalpha() and code.islower() for code in EMOTION_CODES)


def test_entity_codes() -> None:
    assert entity_code("Alice") == "ALI"
    assert entity_code("Alice", {"ALI"}) == "ALC"
    assert entity_code("Alice", {"ALI", "ALC"}) == "ALE"
    assert entity_code("Zoë") == "ZOE"
    assert entity_code("Al") == "ALX"
    assert entity_code("Bob", {"BOB"}) == "BO2"
    assert aaak.is_entity_code(entity_code("Ann", {"ANN", "AN2", "AN3"}))


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        ("We decided to use Postgres.", "DECISION"),
        ("The company was founded in 2019.", "ORIGIN"),
        ("Tests always run before merge.", "CORE"),
        ("We changed direction after the demo.", "PIVOT"),
        ("Rename the helper in `store/edge.py`.", "TECHNICAL"),
        ("We shipped 1.0 today.", "MILESTONE"),
        ("There is a bug in the parser.", "PROBLEM"),
    ],
)
def test_flag_markers(text: str, flag: str) -> None:
    assert flag in detect_flags(text)


def test_no_flags_or_emotions_in_plain_text() -> None:
    assert detect_flags("The cat sat on the mat.") == ()
    assert detect_emotions("The cat sat on the mat.") == ()


def test_emotions_in_order_of_appearance_and_capped() -> None:
    text = "I was worried, then relieved, then proud, and honestly grateful and happy."
    assert detect_emotions(text) == ("anx", "relief", "pride")
    assert detect_emotions(text, limit=5) == ("anx", "relief", "pride", "grat", "joy")
    assert detect_emotions("I can\u2019t wait!") == ("excite",)


# ------------------------------------------------------------------------------------ compressor

STORY = (
    "Bob was pushing to keep Redis for sessions, but Alice said the sessions were not ACID and we had two "
    "incidents where session data got corrupted. In the end we decided to switch to Postgres. Alice was "
    "relieved.\n"
    "\n"
    "Alice wrote the migration test suite overnight. We shipped the migration on Friday and Bob was proud."
)


def test_compress_story() -> None:
    doc = compress(STORY, wing="my_app", room="auth", people={"Alice": "ALC", "Bob": "BOB"},
                   source="drawer-9", date="2026-03-15")
    assert doc.header.wing == "my_app" and doc.header.room == "auth" and doc.header.date == "2026-03-15"
    assert len(doc.zettels) == 2
    z1, z2 = doc.zettels
    assert z1.entities[0] == "BOB" and "ALC" in z1.entities
    assert {"DECISION", "PROBLEM"} <= set(z1.flags)
    assert "MILESTONE" in z2.flags
    assert "relief" in z1.emotions and "pride" in z2.emotions
    assert z1.quote == "In the end we decided to switch to Postgres."
    assert "session" in z1.topics and "migration" in z2.topics
    assert all(z.source == "drawer-9" for z in doc.zettels)
    assert z1.weight > z2.weight >= 1
    assert doc.arc == (z1.emotions[0], z2.emotions[0])
    assert doc.tunnels and doc.tunnels[0].a == 1 and doc.tunnels[0].b == 2
    assert "ALC" in doc.tunnels[0].label.split("+") and "BOB" in doc.tunnels[0].label.split("+")
    names = doc.header.names()
    assert names["ALC"] == "Alice" and names["BOB"] == "Bob"
    assert parse(encode(doc)) == doc


def test_compress_is_deterministic_and_detects_names() -> None:
    a = compress(STORY)
    b = compress(STORY)
    assert a == b and encode(a) == encode(b)
    names = a.header.names()
    assert names["ALI"] == "Alice" and names["BOB"] == "Bob"
    assert "In" not in names.values() and "We" not in names.values()


def test_detected_names_avoid_people_codes_and_each_other() -> None:
    text = "Then Alicia met Alice and Alina at the office. Later Alicia left."
    doc = compress(text, people={"Alice": "ALI"})
    codes = dict((name, code) for code, name in doc.header.entity_map)
    assert codes["Alice"] == "ALI"
    assert len(set(codes.values())) == len(codes) == 3
    assert all(aaak.is_entity_code(c) for c in codes.values())


def test_quote_is_verbatim_prefix_and_truncated() -> None:
    long = "We decided " + " ".join(f"word{i}" for i in range(60)) + "."
    (z,) = compress(long).zettels
    assert z.quote.endswith("\u2026")
    assert len(z.quote) <= aaak.QUOTE_MAX + 1
    assert long.startswith(z.quote[:-1])
    assert not z.quote[:-1].endswith(" ")


def test_compress_many_keeps_drawer_ids_and_links_across_drawers() -> None:
    doc = compress_many(
        [("Carol fixed the flaky parser bug.", "d1"), ("Unrelated gardening notes about tomatoes.", None),
         ("Later Carol rewrote the parser tests.", "d3")],
        people={"Carol": "CAR"},
        title="week 12",
    )
    assert [z.source for z in doc.zettels] == ["d1", None, "d3"]
    assert doc.header.title == "week 12"
    assert Tunnel(1, 3, "CAR+parser") in doc.tunnels
    assert all(2 not in (t.a, t.b) for t in doc.tunnels)
    assert parse(encode(doc)) == doc


def test_compress_empty_and_whitespace() -> None:
    doc = compress("  \n\n \n")
    assert doc.zettels == () and doc.tunnels == () and doc.arc == ()
    assert parse(encode(doc)) == doc


def test_compress_rejects_bad_people_codes() -> None:
    with pytest.raises(AAAKError):
        compress("Alice", people={"Alice": "A1"})
    with pytest.raises(AAAKError):
        compress("Alice and Alan", people={"Alice": "ALX", "Alan": "alx"})


def test_long_paragraph_is_split_into_zettels_of_five_sentences() -> None:
    text = " ".join(f"Sentence number {i} talks about databases." for i in range(12))
    doc = compress(text)
    assert len(doc.zettels) == 3


def test_compressed_output_round_trips_on_odd_input() -> None:
    text = 'Dana | said "x, y" \\ then\r\nleft.\n\nDana came back; Dana\'s code `a_b()` broke.'
    doc = compress(text, wing="w|1", source="src|x")
    assert parse(encode(doc)) == doc


def test_module_is_pure() -> None:
    """Every module of the package imports only the standard library (no I/O) and the package itself."""
    modules = sorted(Path(aaak.__file__).parent.glob("*.py"))
    assert len(modules) > 1
    for module in modules:
        tree = ast.parse(module.read_text(encoding="utf-8"))
        roots: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                assert node.level == 0
                if node.module.startswith("mempald.features.aaak."):
                    continue
                roots.add(node.module.split(".")[0])
        assert roots <= set(sys.stdlib_module_names), (module.name, roots)
        assert "os" not in roots and "io" not in roots and "pathlib" not in roots
