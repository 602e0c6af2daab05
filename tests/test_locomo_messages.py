"""``bench/locomo.py --messages``: the LoCoMo layout cut as people message (one drawer per sentence), scored per turn.

bench/ is not a package: the module is imported from its folder, as the benchmark scripts import each other. The
conversation here is written for this test in the LoCoMo layout (the real file is read by path, never copied).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import locomo

CONVERSATION = [{
    "sample_id": "tiny-m",
    "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hey Ben! I adopted a grey cat. She is called Pixel."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! Is Pixel settling in? Cats take a while.",
             "blip_caption": "a grey cat on a laptop"},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "yes. she sleeps on my keyboard, e.g. all day"},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "I ran the Berlin marathon in 4 hours."}],
    },
    "qa": [{"question": "What is Ana's cat called?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
           {"question": "How did Ben do?", "answer": "4 hours", "evidence": ["D2:1", "D9:9"], "category": 1}],
}]


def _messages(tmp_path: Path) -> list[locomo.Sample]:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(CONVERSATION))
    return locomo.as_messages(locomo.load(data))


def test_each_sentence_is_a_message_of_its_speaker_in_order(tmp_path: Path) -> None:
    [sample] = _messages(tmp_path)
    got = [(e.key, e.session_id, e.position, e.assistant) for e in sample.exchanges]
    assert got == [
        ("D1:1#0", "tiny-m/session_1", 0, "Ana: Hey Ben!"),
        ("D1:1#1", "tiny-m/session_1", 1, "Ana: I adopted a grey cat."),
        ("D1:1#2", "tiny-m/session_1", 2, "Ana: She is called Pixel."),
        ("D1:2#0", "tiny-m/session_1", 3, "Ben: Lovely!"),
        ("D1:2#1", "tiny-m/session_1", 4, "Ben: Is Pixel settling in?"),
        ("D1:2#2", "tiny-m/session_1", 5, "Ben: Cats take a while. [image: a grey cat on a laptop]"),
        # a sentence starting in lower case, and an abbreviation, do not start a message
        ("D1:3#0", "tiny-m/session_1", 6, "Ana: yes. she sleeps on my keyboard, e.g. all day"),
        ("D2:1#0", "tiny-m/session_2", 0, "Ben: I ran the Berlin marathon in 4 hours."),
    ]
    # every word of every turn is kept, in order (the caption once, after the turn's last sentence)
    [turns] = locomo.load(tmp_path / "tiny.json")
    for turn in turns.exchanges:
        parts = [e.assistant for e in sample.exchanges if locomo.turn_of(e.key) == turn.key]
        speaker = turn.assistant.split(": ", 1)[0] + ": "
        assert speaker + " ".join(p.removeprefix(speaker) for p in parts) == turn.assistant
        assert all(e.timestamp == turn.timestamp for e in sample.exchanges if locomo.turn_of(e.key) == turn.key)


def test_gold_turns_are_found_through_any_of_their_messages(tmp_path: Path) -> None:
    samples = _messages(tmp_path)
    [asked] = locomo.questions(samples, None)
    assert [gold for _, gold in asked] == [["D1:1"], ["D2:1"]]  # evidence that is no turn (D9:9) is dropped
    ranked = [locomo.turn_of(k) for k in ("D1:2#1", "D1:1#2", "D1:1#0", "D2:1#0")]
    scores = locomo.score_question(ranked, ["D1:1"])
    assert scores["turn_recall@5"] == 1.0 and scores["mrr"] == 0.5  # the turn's first message is at rank 2
    assert scores["ndcg@10"] == locomo.score_question(["D1:2", "D1:1"], ["D1:1"])["ndcg@10"]  # credited once
    assert locomo.turn_of("D1:1") == "D1:1"  # the turns' own keys are unchanged


def test_a_messages_store_is_not_taken_for_a_turns_store() -> None:
    assert locomo.ingest_tag(False) == ""  # the turns' store keeps the marker it always had
    assert {locomo.ingest_tag(True), locomo.ingest_tag(False, True), locomo.ingest_tag(True, True)} == {
        "messages", "context-off", "messages+context-off"}
