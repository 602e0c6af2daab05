"""Lengths as Claude Code counts them (UTF-16 code units), and the Stop hook's search for the last answer in a
transcript line as Claude Code writes it."""

from __future__ import annotations

import json
from pathlib import Path

from mempal.hook import MAX_CONTEXT_CHARS, wrap
from mempal.hook_transcript import answer_needle, await_last_answer
from mempal.utf16 import cut, units


def test_units_count_characters_outside_the_bmp_twice() -> None:
    assert units("abc") == 3 and units("é") == 1 and units("🧠") == 2 and units("a🧠b") == 4
    assert units("🧠" * 1900) == 3800


def test_cut_never_splits_a_character_and_keeps_to_the_limit() -> None:
    text = "a" + "🧠" * 10
    assert cut(text, 4) == "a🧠"  # 3 units: a fourth would be half an emoji
    assert cut(text, 5) == "a🧠🧠"
    assert cut(text, 100) == text and cut("", 0) == ""
    for limit in range(0, 22):
        assert units(cut(text, limit)) <= limit


def test_wrap_keeps_the_whole_context_within_the_hosts_count() -> None:
    wrapped = wrap("🧠" * 8000)  # 8,000 code points, 16,000 units
    assert units(wrapped) <= MAX_CONTEXT_CHARS and wrapped.count("🧠") < 4500
    assert wrapped.endswith("…\n</mempal-context>")


def test_the_last_answer_is_found_as_claude_code_writes_it(tmp_path: Path) -> None:
    answer = 'First line.\nIt said "use the käse cache" \\ then stopped 🧠.'
    line = json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": answer}]}},
                      ensure_ascii=False, separators=(",", ":"))  # JSON.stringify: non-ASCII as is
    needle = answer_needle(answer)
    assert needle is not None and needle in line.encode()
    path = tmp_path / "t.jsonl"
    path.write_text(line + "\n")
    assert await_last_answer(str(path), answer)
    assert answer_needle("ok") is None  # too short to tell: nothing is waited for
    assert not await_last_answer(str(tmp_path / "missing.jsonl"), answer)
