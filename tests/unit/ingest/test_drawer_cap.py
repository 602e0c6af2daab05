"""Issue 47 M2: an exchange makes at most ``max_drawers`` drawers; a capped one says so and is never split
whole (a 10 MB prompt made 26,012 drawers)."""

from __future__ import annotations

from mempald.ingest.drawers import CAP_CHARS_PER_TOKEN, SourceInfo, build_drawers, capped_pieces
from mempald.normalize.model import Exchange


def words(text: str) -> int:
    return len(text.split())


def _lines(n: int) -> str:
    return "\n".join(f"line {i} of the pasted log has these words" for i in range(n))


def test_under_the_cap_nothing_changes() -> None:
    text = _lines(20)
    assert capped_pieces(text, 50, words, 0) == capped_pieces(text, 50, words, 100)
    pieces, capped = capped_pieces(text, 50, words, 100)
    assert not capped and " ".join(pieces).split() == text.split()


def test_over_the_cap_the_first_pieces_are_kept_and_the_text_is_split_only_so_far() -> None:
    text = _lines(200_000)  # ~9 MB
    seen: list[int] = []

    def counting(t: str) -> int:
        seen.append(len(t))
        return words(t)

    pieces, capped = capped_pieces(text, 50, counting, 8)
    assert capped and len(pieces) == 8
    assert text.startswith(pieces[0]) and all(p in text for p in pieces)
    assert max(seen) <= 8 * 50 * CAP_CHARS_PER_TOKEN


def test_capped_drawers_record_the_whole_length_and_what_they_hold() -> None:
    ex = Exchange(source_kind="claude_code", session_id="s1", key="k1", user=_lines(5000), assistant="the answer")
    src = SourceInfo(kind="claude_code", path="/t/s1.jsonl", source_key="k", machine="m", user="u", redact=False,
                     max_drawers=4)
    drawers = build_drawers([ex], src, words, 50)
    assert len(drawers) == 4 and [d.payload["chunk_index"] for d in drawers] == [0, 1, 2, 3]
    p = drawers[0].payload
    assert p["capped"] is True and p["chunk_count"] == 4 and p["source_path"] == "/t/s1.jsonl"
    assert p["text_chars"] > p["stored_chars"] == sum(len(d.text) for d in drawers)
    whole = build_drawers([ex], SourceInfo(kind="claude_code", path="/t/s1.jsonl", source_key="k", machine="m",
                                           user="u", redact=False), words, 50)
    assert len(whole) > 4 and "capped" not in whole[0].payload
    assert [d.id for d in whole[:4]] == [d.id for d in drawers]  # the same drawers, only fewer
