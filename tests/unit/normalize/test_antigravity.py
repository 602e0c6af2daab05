"""Antigravity CLI transcripts (``brain/<id>/.system_generated/logs/transcript*.jsonl``): the sample written here in
the shape of the real files (tests/fixtures/antigravity), and cases built in the test: a long session, a transcript
grown line by line, one cut back at a checkpoint, a half-written line, and what is read beside the unit."""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any

from mempald.normalize import antigravity, registry
from mempald.normalize.format import Input, Parsed
from mempald.normalize.model import CursorContext, Line
from tests.conftest import REPO, lines_in

ROOT = REPO / "tests" / "fixtures" / "antigravity"
CID = "3f2a9c1e-7b4d-4e8a-9c2f-1d6e5b8a0c47"
SAMPLE = ROOT / "brain" / CID / ".system_generated" / "logs" / "transcript_full.jsonl"


class DirLook:
    """The intake's ``Look`` over real files (the daemon's own checks are the intake's; this reads plainly)."""

    def is_file(self, path: PurePath) -> bool:
        return Path(path).is_file()

    def is_dir(self, path: PurePath) -> bool:
        return Path(path).is_dir()

    def entries(self, folder: PurePath) -> tuple[str, ...]:
        return tuple(sorted(p.name for p in Path(folder).iterdir())) if Path(folder).is_dir() else ()

    def head(self, path: PurePath, size: int) -> bytes:
        return Path(path).read_bytes()[:size] if Path(path).is_file() else b""

    def read(self, path: PurePath, max_bytes: int) -> bytes | None:
        p = Path(path)
        return p.read_bytes() if p.is_file() and p.stat().st_size <= max_bytes else None

    def lines(self, path: PurePath, max_bytes: int) -> list[Line]:
        data = self.read(path, max_bytes)
        return lines_in(data) if data is not None else []

    def rows(self, database: PurePath, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return []


def _parse(data: bytes, name: str = str(SAMPLE), ctx: CursorContext | None = None, start: int = 0) -> Parsed:
    lines = [ln for ln in lines_in(data) if ln.offset >= start]
    return antigravity.parse(Input(name=name, lines=lines, context=ctx or CursorContext(format="antigravity")))


def _step(i: int, kind: str, content: str = "", **kw: Any) -> str:
    source = {"USER_INPUT": "USER_EXPLICIT"}.get(kind, "MODEL")
    rec = {"step_index": i, "source": kw.pop("source", source), "type": kind, "status": kw.pop("status", "DONE"),
           "created_at": f"2026-07-08T10:{i // 60 % 60:02d}:{i % 60:02d}Z", "content": content, **kw}
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"


def _ask(i: int, text: str) -> str:
    return _step(i, "USER_INPUT", f"<USER_REQUEST>\n{text}\n</USER_REQUEST>\n<ADDITIONAL_METADATA>\n"
                                  "The current local time is: 2026-07-08T12:00:00+02:00.\n</ADDITIONAL_METADATA>")


def test_the_sample_is_detected_and_keeps_only_what_the_user_typed() -> None:
    data = SAMPLE.read_bytes()
    assert registry.detect_file(data[: registry.HEAD_BYTES], SAMPLE.name) is antigravity.FORMAT
    parsed = _parse(data)
    users = [e.user for e in parsed.exchanges]
    assert users == ["why does the retry loop in fetch.py drop the last attempt?", "",
                     "напиши тест для трёх попыток и проверь его субагентом"]
    assert {e.session_id for e in parsed.exchanges} == {CID}
    assert {e.agent for e in parsed.exchanges} == {"antigravity"}
    text = "\n".join(e.render() for e in parsed.exchanges)
    for injected in ("ADDITIONAL_METADATA", "USER_SETTINGS_CHANGE", "Comments on artifact URI", "local time",
                     "Look at fetch.py first", "Previous conversations"):
        assert injected not in text  # harness blocks, the plan-approval preface and reasoning are never stored
    first = parsed.exchanges[0]
    assert "[tool: view_file] /home/dev/api/fetch.py" in first.assistant
    assert "[tool: run_command] python -m pytest tests/test_fetch.py -q" in first.assistant
    assert "  -> error: The command failed with exit code 1." in first.assistant
    assert "[error] The model API is currently overloaded." in first.assistant
    assert "Created At" not in first.assistant
    assert first.files == ("/home/dev/api/fetch.py",) and first.tools == ("view_file", "run_command")
    sub = parsed.exchanges[2]
    assert "[tool: invoke_subagent] Write tests/test_fetch.py::test_three_attempts" in sub.assistant
    assert "[subagent] Report back to the parent when done." in sub.assistant  # a sub-agent's input is no prompt
    assert sub.assistant.endswith("Тест добавлен, три попытки проходят.")


def test_every_line_is_accounted_for_once() -> None:
    data = SAMPLE.read_bytes()
    parsed = _parse(data)
    refs = [a.ref for a in parsed.ledger.entries]
    assert sorted(refs) == [ln.offset for ln in lines_in(data)]
    skipped = {a.what for a in parsed.ledger.entries if a.outcome == "skipped"}
    assert skipped == {"context put back by the harness", "no request (an approval, or injected context only)"}


def test_a_long_session_has_one_exchange_per_prompt_and_resumes_at_the_last() -> None:
    text = "".join(_ask(3 * i, f"prompt {i}") + _step(3 * i + 1, "PLANNER_RESPONSE", f"answer {i}")
                   + _step(3 * i + 2, "PLANNER_RESPONSE", "", thinking="hm") for i in range(400))
    parsed = _parse(text.encode())
    assert [e.user for e in parsed.exchanges] == [f"prompt {i}" for i in range(400)]
    assert len({e.key for e in parsed.exchanges}) == 400
    last = parsed.exchanges[-1]
    assert parsed.resume == (last.offset, 399) and last.assistant == "answer 399"


def test_a_grown_transcript_read_from_its_resume_point_gives_the_same_exchanges() -> None:
    data = SAMPLE.read_bytes()
    whole = _parse(data)
    lines = data.splitlines(keepends=True)
    for cut in range(1, len(lines)):
        head = b"".join(lines[:cut])
        first = _parse(head)
        start, position = first.resume if first.resume else (len(head), len(first.exchanges))
        rest = _parse(data, ctx=CursorContext(format="antigravity", position=position), start=start)
        done = [e for e in first.exchanges if e.offset is None or e.offset < start] + rest.exchanges
        assert [(e.key, e.render(), e.position) for e in done] == \
            [(e.key, e.render(), e.position) for e in whole.exchanges], cut


def test_a_transcript_cut_back_at_a_checkpoint_keeps_the_step_keys() -> None:
    full = "".join([_ask(0, "first"), _step(1, "PLANNER_RESPONSE", "one"), _ask(2, "second"),
                    _step(3, "PLANNER_RESPONSE", "two")])
    cut = "".join([_step(0, "CHECKPOINT", "summary of steps 0-1", source="SYSTEM"), _ask(2, "second"),
                   _step(3, "PLANNER_RESPONSE", "two")])
    a, b = _parse(full.encode()), _parse(cut.encode())
    assert [(e.key, e.render()) for e in b.exchanges] == [(e.key, e.render()) for e in a.exchanges[1:]]
    # cut in the middle of an exchange: transcript.jsonl opens with answers whose prompt is gone, which are a
    # fragment of the exchange transcript_full.jsonl holds whole (the same drawer ids from either file)
    mid = "".join([_step(0, "CHECKPOINT", "summary", source="SYSTEM"), _step(1, "PLANNER_RESPONSE", "one"),
                   _ask(2, "second"), _step(3, "PLANNER_RESPONSE", "two")])
    name = str(SAMPLE.with_name("transcript.jsonl"))
    c = _parse(mid.encode(), name=name)
    assert [(e.key, e.render()) for e in c.exchanges] == [(e.key, e.render()) for e in a.exchanges[1:]]
    assert "answer whose prompt was cut back at a checkpoint" in {x.what for x in c.ledger.entries}
    assert [e.user for e in _parse(mid.encode()).exchanges] == ["", "second"]  # the full transcript keeps it


def test_a_half_written_or_unknown_line_is_skipped_and_nothing_earlier_is_lost() -> None:
    text = (_ask(0, "keep me") + _step(1, "PLANNER_RESPONSE", "kept") + _step(2, "BRAND_NEW_STEP", "x", source="ORACLE")
            + '{"step_index":3,"source":"MODEL","type":"PLANNER_RES')
    parsed = _parse(text.encode())
    assert [(e.user, e.assistant) for e in parsed.exchanges] == [("keep me", "kept")]
    outcomes = {a.what for a in parsed.ledger.entries if a.outcome == "skipped"}
    assert outcomes == {"BRAND_NEW_STEP step from ORACLE", "not JSON"}


def test_answers_before_any_prompt_are_kept_without_a_prompt() -> None:
    call = {"name": "list_dir", "args": {"DirectoryPath": '"/home/dev/api"'}}
    parsed = _parse((_step(0, "PLANNER_RESPONSE", "resumed work", tool_calls=[call])
                     + _step(1, "LIST_DIRECTORY", "a.py")).encode())
    [only] = parsed.exchanges
    assert only.user == "" and "[tool: list_dir] /home/dev/api\n  -> a.py" in only.assistant


def test_the_project_comes_from_history(tmp_path: Path) -> None:
    root = tmp_path / ".gemini" / "antigravity-cli"
    logs = root / "brain" / CID / ".system_generated" / "logs"
    logs.mkdir(parents=True)
    full = logs / "transcript_full.jsonl"
    full.write_bytes(SAMPLE.read_bytes())
    look = DirLook()
    ctx = CursorContext(format="antigravity")
    assert antigravity.beside(full, ctx, look) == ctx  # no history.jsonl yet: no project, no error
    (root / "history.jsonl").write_bytes((ROOT / "history.jsonl").read_bytes() + b'{"display":"half')
    found = antigravity.beside(full, ctx, look)
    assert found.cwd == "/home/dev/api"
    parsed = _parse(full.read_bytes(), name=str(full), ctx=found)
    assert {e.project for e in parsed.exchanges} == {"/home/dev/api"}


def test_places_cover_each_platform() -> None:
    fmt = antigravity.FORMAT
    assert fmt.reads == "lines" and fmt.ids == "message" and fmt.unit == "file"
    cli = fmt.places[0]
    assert cli.linux == ("~/.gemini/antigravity-cli",) and cli.macos == cli.linux
    assert cli.windows == ("%USERPROFILE%/.gemini/antigravity-cli",)
    assert all(PurePath("brain/x/.system_generated/logs/transcript_full.jsonl").match(g) or "transcript.jsonl" in g
               for g in cli.globs)


def test_without_a_recorded_workspace_the_first_command_directory_is_the_project() -> None:
    parsed = _parse(SAMPLE.read_bytes())  # no history.jsonl read: the run_command's Cwd names the project
    assert {e.project for e in parsed.exchanges} == {"/home/dev/api"} and parsed.context.cwd == "/home/dev/api"
    call = {"name": "run_command", "args": {"CommandLine": '"dir"', "Cwd": '"C:\\\\work\\\\api"'}}
    win = _parse((_ask(0, "list it") + _step(1, "PLANNER_RESPONSE", "", tool_calls=[call])).encode())
    assert win.exchanges[0].project == "C:\\work\\api"
    ctx = CursorContext(format="antigravity", cwd="/srv/from-history")
    assert {e.project for e in _parse(SAMPLE.read_bytes(), ctx=ctx).exchanges} == {"/srv/from-history"}
