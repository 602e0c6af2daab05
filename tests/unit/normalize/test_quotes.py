"""What an exchange wrote into files, as line digests: Claude Code's Edit / Write / MultiEdit and Codex's
apply_patch (as a custom tool and as a shell heredoc), and code blocks that open under a file's name."""

from __future__ import annotations

import json

from mempald.normalize import claude_code, codex, quotes
from mempald.normalize.format import Input
from mempald.normalize.model import CursorContext
from tests.conftest import lines_in

CWD = "/home/dana/projects/chartkit"


def test_telling_lines_skip_short_and_wordless_ones_and_ignore_indentation() -> None:
    code = "}\n    return x\n\n    const easing = d3.easeElasticOut.period(0.4);\n// ------------------------\n"
    digs = quotes.telling(code.splitlines())
    assert digs == [quotes.digest("const easing = d3.easeElasticOut.period(0.4);")]
    assert quotes.digest("  a  b   c ") == quotes.digest("a b c")
    assert len(quotes.telling([f"line number {i} of the file" for i in range(20)])) == quotes.MAX_LINES


def test_patch_and_fenced_blocks() -> None:
    patch = ("*** Begin Patch\n*** Update File: src/app.py\n@@\n-old_value = 1\n+new_value = compute_the_answer()\n"
             "*** Add File: docs/notes.md\n+# Notes about the release\n*** Delete File: gone.txt\n*** End Patch")
    assert quotes.patch_added(patch) == {"src/app.py": "new_value = compute_the_answer()",
                                          "docs/notes.md": "# Notes about the release"}
    text = "We changed it:\n```python src/app.py\nnew_value = compute_the_answer()\n```\n```\nno name here\n```"
    assert quotes.fenced(text) == {"src/app.py": "new_value = compute_the_answer()"}
    assert quotes.decode(quotes.encode({"a": ["x"]})) == {"a": ["x"]}
    assert quotes.decode("not json") == {} and quotes.decode(None) == {} and quotes.encode({}) == ""


def _rec(kind: str, content: object, uuid: str, **kw: object) -> bytes:
    rec = {"type": kind, "uuid": uuid, "sessionId": "s1", "cwd": CWD, "timestamp": "2026-10-02T10:00:00Z",
           "message": {"role": "user" if kind == "user" else "assistant", "content": content}, **kw}
    return json.dumps(rec).encode() + b"\n"


def test_claude_code_edit_write_and_multiedit_are_noted_per_file() -> None:
    data = (_rec("user", "make the bars bounce", "u1")
            + _rec("assistant", [{"type": "tool_use", "id": "t1", "name": "Edit", "input": {
                "file_path": "src/charts/bounce.js", "old_string": "d3.easeElastic.out",
                "new_string": "  .ease(d3.easeElasticOut.period(0.4))"}}], "a1")
            + _rec("assistant", [{"type": "tool_use", "id": "t2", "name": "MultiEdit", "input": {
                "file_path": f"{CWD}/src/charts/bars.js", "edits": [
                    {"old_string": "a", "new_string": "const barEase = d3.easeBackOut;"}]}}], "a2")
            + _rec("assistant", [{"type": "text", "text": "Done: both charts use the v7 easing names."}], "a3"))
    parsed = claude_code.FORMAT.parse(Input(name="x.jsonl", lines=lines_in(data), context=CursorContext()))
    (ex,) = parsed.exchanges
    got = quotes.decode(dict(ex.extra)["quotes"])
    assert got == {f"{CWD}/src/charts/bounce.js": [quotes.digest(".ease(d3.easeElasticOut.period(0.4))")],
                   f"{CWD}/src/charts/bars.js": [quotes.digest("const barEase = d3.easeBackOut;")]}


def test_codex_apply_patch_is_noted() -> None:
    patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n+new_value = compute_the_answer()\n*** End Patch"
    recs = [
        {"type": "session_meta", "payload": {"id": "s2", "cwd": CWD, "timestamp": "2026-10-02T10:00:00Z"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "fix the value"}]}},
        {"type": "response_item", "payload": {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c1",
                                              "input": patch}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "Patched."}]}},
    ]
    data = b"".join(json.dumps({"timestamp": "2026-10-02T10:00:00Z", **r}).encode() + b"\n" for r in recs)
    parsed = codex.FORMAT.parse(Input(name="rollout.jsonl", lines=lines_in(data), context=CursorContext()))
    (ex,) = [e for e in parsed.exchanges if e.user]
    assert quotes.decode(dict(ex.extra)["quotes"]) == {f"{CWD}/src/app.py": [
        quotes.digest("new_value = compute_the_answer()")]}
