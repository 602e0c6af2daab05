"""The ChatGPT export normalizer on the real 2023 export subset in ../shared (six conversations; counts and
texts verified by walking each mapping from current_node) and on small synthetic exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.chatgpt import SOURCE_KIND, parse_document
from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, Exchange, NormalizeError

FORMATS = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "formats"


@pytest.fixture
def export() -> list[Exchange]:
    path = FORMATS / "chatgpt" / "conversations.subset.json"
    if not path.is_file():
        pytest.skip(f"the shared ChatGPT fixture is not at {path} (it lives beside the repo, not in it)")
    return parse_document(path.read_bytes(), path.name)


def by_session(ex: list[Exchange], sid: str) -> list[Exchange]:
    return [e for e in ex if e.session_id == sid]


def test_counts_per_conversation(export: list[Exchange]) -> None:
    assert len(export) == 20
    counts: dict[str | None, int] = {}
    for e in export:
        counts[e.title] = counts.get(e.title, 0) + 1
    assert counts == {
        "Offerte software project": 1, "New chat": 1, "GitHub Wikis & Source Code": 2,
        "Improve Website Recommendations.": 2, "Intro to Multivariate Stats.": 7,
        "Logo design for Pieterkuppens.net.": 7,
    }
    assert all(e.source_kind == SOURCE_KIND == "chatgpt" and e.agent == "chatgpt" for e in export)
    assert all(e.offset is None and e.kind == "exchange" for e in export)


def test_first_conversation(export: list[Exchange]) -> None:
    e = export[0]
    assert e.session_id == "afc2ca17-1d04-40bd-a700-3f321a25f49b"
    assert e.key == "aaa2e05e-01c4-4d03-8a6b-9949a7524617" and e.position == 0
    assert e.user == "Wat kan ik het beste opnemen in een offerte voor een software project?"
    assert e.assistant.startswith("Bij het opstellen van een offerte voor een softwareproject is het belangrijk")
    assert e.timestamp == "2023-06-09T08:10:04.433981+00:00"
    assert e.extra == (("model", "gpt-4"),)


def test_new_chat_without_reply_is_kept(export: list[Exchange]) -> None:
    (e,) = by_session(export, "f66fc4ef-7895-4b72-bdc7-337d5e49a35e")
    assert e.user.startswith("I will give you part of my CV, please respond with 2-3 suggestions")
    assert e.assistant == ""


def test_only_the_visible_branch(export: list[Exchange]) -> None:
    stats = by_session(export, "3af5baaa-e3c9-4fec-928d-0007faaa9430")
    assert [e.position for e in stats] == list(range(7))
    assert stats[1].user == ("Can you create 5 multiple choice questions that test a student's understanding "
                             "of the text.")
    assert stats[1].assistant.startswith("1. What are the main aims of the text on multivariate statistics")
    text = "\n".join(e.render() for e in stats)
    assert "1) Which of the following is NOT one of the unique elements of Big Data?" not in text  # other branch
    assert stats[-1].user == "Please restrict the questions to the provided texts."
    logo = by_session(export, "e96087ed-b714-4a54-a06a-e425db1680bd")
    assert logo[3].assistant.startswith("We could consider adding a third color")
    # current_node goes through the older regeneration: the newer one is an alternate and is dropped
    assert all("I suggest using a light gray (such as #D3D3D3)" not in e.render() for e in logo)


def test_plugin_call_is_a_tool_summary(export: list[Exchange]) -> None:
    first, second = by_session(export, "c21a4db5-68eb-471a-b590-bb6ef7b81b42")
    assert first.tools == () and first.user.startswith("In GitHub, is there some way to fill the Wiki")
    assert second.tools == ("show_me.get_MermaidRoute",)
    assert second.user == "show me the data science unicorn venn diagram, including its markdown notation"
    lines = second.assistant.splitlines()
    assert lines[0].startswith('[tool: show_me.get_MermaidRoute] { "mermaid": "graph TB')
    assert lines[1].startswith('  -> show_me.get_MermaidRoute: {"results":[{"errorMessage":"We are experiencing')
    assert lines[2].startswith("I apologize for the inconvenience")


def test_browsing_traffic(export: list[Exchange]) -> None:
    first, second = by_session(export, "902d8aca-bcd3-477a-a348-d46448b6cd06")
    assert first.tools == ("browser",) and second.tools == ("browser", "browser")
    assert first.assistant.startswith('[tool: browser] open_url("www.pieterkuppens.net")\n'
                                      "  -> error: tool_error: Error when executing command")
    assert "I'm sorry, but I'm currently unable to access your website directly." in first.assistant
    assert second.user == "https://www.pieterkuppens.nl/"
    assert '[tool: browser] quote("freelance software en data science"' in second.assistant
    assert "  -> browser: URL: https://www.pieterkuppens.nl/" in second.assistant
    assert "Based on the information available from the main page of your website" in second.assistant
    # tool-call comments are not the argument
    assert "I'll use the 'open_url' function" not in first.assistant


def _node(nid: str, parent: str | None, children: list[str], msg: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": nid, "parent": parent, "children": children, "message": msg}


def _msg(mid: str, role: str, content: dict[str, Any], t: float | None, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"id": mid, "author": {"role": role, "name": None, "metadata": {}}, "create_time": t,
            "content": content, "status": "finished_successfully", "weight": 1.0, "metadata": {},
            "recipient": "all"}
    base.update(kw)
    return base


def _text(*parts: Any) -> dict[str, Any]:
    return {"content_type": "text", "parts": list(parts)}


def test_synthetic_newer_content_types_and_missing_current_node() -> None:
    mapping = {
        "root": _node("root", None, ["ctx"], None),
        "ctx": _node("ctx", "root", ["u1"], _msg("ctx", "user", {"content_type": "user_editable_context",
                                                                  "user_profile": "I am Ana"}, None)),
        "u1": _node("u1", "ctx", ["th"], _msg("u1", "user", {"content_type": "multimodal_text", "parts": [
            {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-1"}, "What is this?"]},
            1700000000.5)),
        "th": _node("th", "u1", ["a1"], _msg("th", "assistant", {"content_type": "thoughts", "thoughts": [
            {"summary": "hmm", "content": "private"}]}, 1700000001.0)),
        "a1": _node("a1", "th", ["h", "u2"], _msg("a1", "assistant", _text("A cat."), 1700000002.0,
                                                  metadata={"model_slug": "gpt-4o"})),
        "h": _node("h", "a1", [], _msg("h", "user", _text("hidden"), 1700000003.0,
                                       metadata={"is_visually_hidden_from_conversation": True})),
        "u2": _node("u2", "a1", ["a2"], _msg("u2", "user", _text(f"{INJECT_OPEN}>x{INJECT_CLOSE}"), 1700000004.0)),
        "a2": _node("a2", "u2", ["u3"], _msg("a2", "assistant", _text("echo of memory"), 1700000005.0)),
        "u3": _node("u3", "a2", ["a3"], _msg("u3", "user", _text(f"{INJECT_OPEN} id='m'>y{INJECT_CLOSE}Is it cute?"),
                                             None)),
        "a3": _node("a3", "u3", [], _msg("a3", "assistant", _text("Very."), 1700000007.0)),
    }
    conv = {"id": "c1", "title": "Cat", "create_time": 1699999999.0, "mapping": mapping, "current_node": "gone"}
    ex = parse_document(json.dumps([conv, {"not": "a conversation"}]).encode())
    assert [(e.user, e.assistant) for e in ex] == [("[image]\nWhat is this?", "A cat."), ("Is it cute?", "Very.")]
    assert ex[0].timestamp == "2023-11-14T22:13:20.500000+00:00" and ex[0].extra == (("model", "gpt-4o"),)
    assert ex[1].timestamp == "2023-11-14T22:13:19+00:00"  # no create_time: the conversation's
    assert [e.position for e in ex] == [0, 1] and [e.key for e in ex] == ["u1", "u3"]
    assert all("private" not in e.render() and "I am Ana" not in e.render() for e in ex)


def test_not_a_chatgpt_export() -> None:
    with pytest.raises(NormalizeError):
        parse_document(b"not json")
    with pytest.raises(NormalizeError):
        parse_document(b'"a string"')
    with pytest.raises(NormalizeError):
        parse_document(b'[{"chat_messages": []}]')
    assert parse_document(b"[]") == []
    assert parse_document(b'{"title": "x", "mapping": {}}') == []
