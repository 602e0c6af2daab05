"""Cline, Roo Code and Kilo Code task folders (``mempald.normalize.cline``): what is the user's, what is folded,
what is skipped; ids that survive rewrites; the unit, its files read through a ``Look``; bad input.

The samples under ``tests/fixtures/cline`` are written here in the shape the extensions write (a Cline task in
VS Code with tool calls, a command, a question, an error and an image; a Roo Code task in Russian handing a
sub-task to another mode, and that sub-task's own folder)."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path, PurePath
from typing import Any

import pytest

from mempald.normalize import cline
from mempald.normalize.format import Input, Parsed, Probe
from mempald.normalize.model import CursorContext, Line, NormalizeError
from mempald.sources.places import expand
from tests.conftest import REPO

SAMPLES = REPO / "tests" / "fixtures" / "cline"
CLINE_TASK = SAMPLES / "cline_vscode_task" / "1773478931000"
ROO_TASK = SAMPLES / "roo_parent_task" / "0195f3a0-1c2d-7e3f-8a9b-0c1d2e3f4a5b"
ROO_SUBTASK = SAMPLES / "roo_subtask" / "0195f3c2-7b1e-7a41-9c2e-5d8f6e2a1b07"
API_ONLY = SAMPLES / "cline_api_only" / "1741500000000"
SDK = SAMPLES / "cline_sdk_session" / "1781203311842_k3f9q"
ALL = (CLINE_TASK, ROO_TASK, ROO_SUBTASK, API_ONLY, SDK)


class DirLook:
    """The reads a format may make beside its unit, over real files (the intake hands in its own)."""

    def is_file(self, path: PurePath) -> bool:
        return Path(path).is_file()

    def is_dir(self, path: PurePath) -> bool:
        return Path(path).is_dir()

    def entries(self, folder: PurePath) -> tuple[str, ...]:
        try:
            return tuple(sorted(p.name for p in Path(folder).iterdir()))
        except OSError:
            return ()

    def head(self, path: PurePath, size: int) -> bytes:
        try:
            with Path(path).open("rb") as fh:
                return fh.read(size)
        except OSError:
            return b""

    def read(self, path: PurePath, max_bytes: int) -> bytes | None:
        try:
            data = Path(path).read_bytes()
        except OSError:
            return None
        return data if len(data) <= max_bytes else None

    def lines(self, path: PurePath, max_bytes: int) -> list[Line]:
        return []

    def rows(self, database: PurePath, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return []


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _parse(folder: Path, files: dict[str, bytes] | None = None) -> Parsed:
    return cline.parse(Input(name=str(folder), files=_files(folder) if files is None else files,
                             context=CursorContext(format="cline")))


def _ui(folder: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((folder / "ui_messages.json").read_text())
    return data


def _laid_out(tmp_path: Path, sample: Path, ext: str, editor: str = "Code") -> Path:
    """``sample`` copied where ``editor`` keeps the extension ``ext``'s tasks on Linux."""
    target = tmp_path / ".config" / editor / "User" / "globalStorage" / ext / "tasks" / sample.name
    shutil.copytree(sample, target)
    return target


def test_the_task_and_the_follow_ups_are_the_prompts_and_nothing_else_is() -> None:
    parsed = _parse(CLINE_TASK)
    ui = _ui(CLINE_TASK)
    prompts = [e.user for e in parsed.exchanges]
    assert prompts == [ui[0]["text"], "Only the total, the accountants reconcile per invoice.",
                       "The PDF preview still shows 1.01, see the screenshot.\n[image]"]
    for e in parsed.exchanges:
        assert "<environment_details>" not in e.render() and "<task>" not in e.render()
        assert "base64" not in e.render(), "an image is marked, never stored"
    keys = [e.key for e in parsed.exchanges]
    assert keys == [str(ui[0]["ts"]), str(ui[14]["ts"]), str(ui[18]["ts"])], "a prompt's ts is its exchange id"
    assert [e.session_id for e in parsed.exchanges] == ["1773478931000"] * 3


def test_tool_calls_are_summarised_with_their_results_folded_and_reasoning_is_dropped() -> None:
    first, second, third = _parse(CLINE_TASK).exchanges
    assert first.tools == ("readFile", "editedExistingFile", "execute_command")
    answer = first.assistant
    assert "[tool: readFile] src/billing/invoice.py" in answer
    assert "[tool: execute_command] python -m pytest -q tests/test_invoice.py" in answer
    assert "  -> ..F FAILED tests/test_invoice.py::test_bulk_rounding" in answer, "the command's output is folded"
    assert "[error] Cline tried to use write_to_file" in answer
    assert "Should bulk orders round per line or only on the invoice total?" in answer
    assert "[options: Per line | Only the total]" in answer
    assert first.files == ("/home/dev/projects/ledgerly/src/billing/invoice.py",)
    assert "ROUND_HALF_EVEN" in second.assistant and second.assistant.count("1.00 EUR") == 1
    assert "The user wants Decimal arithmetic" not in " ".join(e.render() for e in (first, second, third))
    assert "<thinking>" not in third.assistant and "The template formats the float copy" not in third.assistant
    assert third.assistant.startswith("The PDF template formats a float copy")


def test_the_wing_is_the_workspace_and_the_agent_follows_the_extension(tmp_path: Path) -> None:
    parsed = _parse(CLINE_TASK)
    assert {e.project for e in parsed.exchanges} == {"/home/dev/projects/ledgerly"}
    assert parsed.context.cwd == "/home/dev/projects/ledgerly"
    assert parsed.context.title.startswith("Invoices rounded to the cent")
    roo = _laid_out(tmp_path, ROO_TASK, "rooveterinaryinc.roo-cline")
    kilo = _laid_out(tmp_path, CLINE_TASK, "kilocode.kilo-code", editor="Cursor")
    ours = _laid_out(tmp_path, CLINE_TASK, "saoudrizwan.claude-dev", editor="VSCodium")
    assert {e.agent for e in _parse(roo).exchanges} == {"roo"}
    assert {e.agent for e in _parse(kilo).exchanges} == {"kilo"}
    assert {e.agent for e in _parse(ours).exchanges} == {"cline"}
    assert cline.agent_of("C:\\Users\\a\\AppData\\Roaming\\Code\\User\\globalStorage\\RooVeterinaryInc.roo-cline"
                          "\\tasks\\x") == "roo"
    assert cline.agent_of("/home/a/.cline/data/tasks/1761234567890") == "cline"
    # Roo Code's history item names the workspace (a Windows one here)
    assert {e.project for e in _parse(roo).exchanges} == {"c:/Users/anya/src/shop-frontend"}


def test_the_workspace_comes_from_the_environment_details_when_nothing_else_names_it() -> None:
    files = _files(CLINE_TASK)
    ui = [m for m in _ui(CLINE_TASK) if m.get("say") != "api_req_started"]
    files["ui_messages.json"] = json.dumps(ui).encode()
    parsed = _parse(CLINE_TASK, files)
    assert parsed.context.cwd == "/home/dev/projects/ledgerly", "read from api_conversation_history.json"
    # its head cut anywhere: the complete strings before the cut are read
    api = files["api_conversation_history.json"]
    cut = api.index(b"# Current Working Directory") + 200
    assert cline.api_cwd(api[:cut]) == "/home/dev/projects/ledgerly"
    assert cline.api_cwd(api[:40]) == ""
    workspaces = ('<environment_details>\n# Workspace Configuration\n{\n  "workspaces": {\n    '
                  '"/srv/app\\\\one": {\n      "hint": "one"\n    }\n  }\n}\n</environment_details>')
    assert cline.env_cwd(workspaces) == "/srv/app\\one"
    assert cline.env_cwd("# Current Workspace Directory (d:/work/crm) Files\nREADME.md") == "d:/work/crm"


def test_a_non_english_task_is_kept_verbatim_and_a_sub_task_is_never_a_prompt() -> None:
    (parent,) = _parse(ROO_TASK).exchanges
    assert parent.user.startswith("Переведи все строки корзины на русский")
    assert "[tool: newTask] Update src/i18n/ru.json" in parent.assistant
    assert "  -> [sub-task result] Added 14 cart.* keys" in parent.assistant
    assert "[tool: playwright/browser_snapshot]" in parent.assistant and "Итого: 12 450 ₽" in parent.assistant
    assert parent.kind == "exchange" and "«12 450 ₽»" in parent.assistant
    assert parent.files == ("c:/Users/anya/src/shop-frontend/src/format/price.ts",), "the absolute path read"
    (child,) = _parse(ROO_SUBTASK).exchanges
    assert child.user == "", "the sub-task's opening was written by its parent's model"
    assert child.kind == "subagent" and child.agent == "cline/subagent"
    assert child.assistant.startswith("[sub-task] Update src/i18n/ru.json")


def test_a_sub_task_is_in_its_root_tasks_session_linked_to_the_exchange_that_started_it(tmp_path: Path) -> None:
    parent = _laid_out(tmp_path, ROO_TASK, "rooveterinaryinc.roo-cline")
    child = _laid_out(tmp_path, ROO_SUBTASK, "rooveterinaryinc.roo-cline")
    (started,) = _parse(parent).exchanges
    ctx = cline.beside(child, CursorContext(format="cline"), DirLook())
    assert ctx.parent == started.key == "1774001112000"
    assert cline.beside(parent, CursorContext(format="cline"), DirLook()).parent == "", "no sub-task: no parent"
    (work,) = cline.parse(cline.gather(child, ctx, DirLook())).exchanges
    assert (work.session_id, work.parent, work.agent) == (parent.name, started.key, "roo/subagent")
    assert work.key == f"{child.name}:1774001116000", "its keys never meet its root task's"
    # once found it is kept: the parent is not read again; without the parent's folder there is no link
    assert cline.beside(child, ctx, DirLook()) is ctx
    shutil.rmtree(parent)
    assert cline.beside(child, CursorContext(format="cline"), DirLook()).parent == ""
    (alone,) = _parse(child).exchanges
    assert (alone.session_id, alone.parent) == (parent.name, "")


@pytest.mark.parametrize("folder", ALL, ids=lambda p: p.parent.name)
def test_every_message_and_file_is_accounted_for_once(folder: Path) -> None:
    parsed = _parse(folder)
    refs = [a.ref for a in parsed.ledger.entries]
    read = next(n for n in ("ui_messages.json", f"{folder.name}.messages.json", "api_conversation_history.json")
                if (folder / n).exists())
    root = json.loads((folder / read).read_text())
    expected = [f"{read}#{i}" for i in range(len(root["messages"] if isinstance(root, dict) else root))]
    expected += [n for n in _files(folder) if n != read]
    assert sorted(refs, key=str) == sorted(expected)
    assert all(a.what for a in parsed.ledger.entries if a.outcome != "stored")
    keys = {e.key for e in parsed.exchanges}
    assert {a.exchange for a in parsed.ledger.entries if a.outcome != "skipped"} <= keys


def test_a_folder_without_its_ui_messages_is_read_from_the_models_copy(tmp_path: Path) -> None:
    parsed = _parse(API_ONLY)
    assert [e.user for e in parsed.exchanges] == [
        "タイルマップのチャンク読み込みが遅い。プロファイルを見て、必要ならキャッシュを入れて。",
        "設定可能にして、デフォルトは64で。", "the minimap still stutters, screenshot attached\n[image]"]
    first, second, third = parsed.exchanges
    assert first.assistant.splitlines()[:3] == [
        "Let me look at the chunk loader first.", "[tool: read_file] src/chunks/loader.ts",
        "  -> export function loadChunk(x: number, y: number) { return parse(readFileSync(path(x, y))) }"]
    assert first.assistant.endswith("Is a 64-chunk LRU cache enough, or should it be configurable?")
    assert "re-parses every chunk" not in first.assistant, "the model's <thinking> is dropped"
    assert first.files == ("/Users/kenji/work/tilemap/src/chunks/loader.ts",)
    assert second.assistant.endswith("a warm reload of the map no longer re-parses them.")
    assert "The user has provided feedback" not in third.render() and third.tools == ("search_files",)
    for e in parsed.exchanges:
        assert "<environment_details>" not in e.render() and "Current Working Directory" not in e.render()
    assert {e.project for e in parsed.exchanges} == {"/Users/kenji/work/tilemap"}
    task = _laid_out(tmp_path, API_ONLY, "saoudrizwan.claude-dev")
    inp = cline.gather(task, CursorContext(format="cline"), DirLook())
    assert inp.files == {"api_conversation_history.json": (task / "api_conversation_history.json").read_bytes()}
    assert cline.parse(inp).exchanges == parsed.exchanges


def test_a_cline_4_sdk_session_folder_is_read_from_its_messages_and_manifest(tmp_path: Path) -> None:
    parsed = _parse(SDK)
    assert [e.user for e in parsed.exchanges] == [
        "Die Warteschlange verliert Tickets beim Neustart: finde heraus warum und schreib einen Test.",
        "What about tickets that arrive during the flush?"], "<user_input> unwrapped, <mode_notice> is not theirs"
    first, second = parsed.exchanges
    assert first.tools == ("read_files", "run_commands")
    assert "[tool: read_files] src/queue/store.ts" in first.assistant
    assert "  -> export class Store { flush() { /* never called on SIGTERM */ } }" in first.assistant
    assert "[tool: run_commands] npm test -- queue" in first.assistant and "  -> PASS test/queue" in first.assistant
    assert "check persistence" not in first.assistant, "thinking dropped"
    assert second.assistant.startswith("They are accepted into a second buffer")
    assert {(e.session_id, e.agent, e.project) for e in parsed.exchanges} == {
        (SDK.name, "cline", "/home/dev/work/ticketing")}
    assert parsed.context.title == "Warteschlange verliert Tickets beim Neustart"
    # the messages' own ids are their keys when they have them; a grown file keeps the earlier ones
    root = json.loads((SDK / f"{SDK.name}.messages.json").read_text())
    for i, msg in enumerate(root["messages"]):
        msg["id"] = f"msg_{i:03d}"
    files = _files(SDK)
    files[f"{SDK.name}.messages.json"] = json.dumps(root).encode()
    assert [e.key for e in _parse(SDK, files).exchanges] == ["msg_000", "msg_006"]
    root["messages"] = root["messages"][:4]
    files[f"{SDK.name}.messages.json"] = json.dumps(root).encode()
    assert [e.key for e in _parse(SDK, files).exchanges] == ["msg_000"]
    # found as a folder unit where Cline keeps its sessions, its files read through the Look
    session = tmp_path / ".cline" / "data" / "sessions" / SDK.name
    shutil.copytree(SDK, session)
    look = DirLook()
    assert cline.detect(Probe(entries=tuple(look.entries(session))))
    assert cline.unit_of(session / f"{SDK.name}.messages.json", look) == session
    assert cline.unit_of(session / f"{SDK.name}.json", look) == session
    assert cline.unit_of(session.parent, look) is None
    inp = cline.gather(session, CursorContext(format="cline"), look)
    assert set(inp.files) == {f"{SDK.name}.messages.json", f"{SDK.name}.json"}
    assert cline.parse(inp).exchanges == parsed.exchanges
    # a sub-agent's own messages beside the session's: sub-agent work in the lead's session, never a prompt
    task = "List every caller of Store.flush in src/ and report them."
    (session / "agent_7.messages.json").write_text(json.dumps({"version": 1, "agent": "subagent",
                                                               "sessionId": SDK.name, "messages": [
        {"role": "user", "content": [{"type": "text", "text": task}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Two callers: src/queue/worker.ts, src/admin.ts."}]},
    ]}))
    (session / "agent_8.messages.json").write_text('{"version": 1, "messages": [{"ro')  # being written
    grown = cline.parse(cline.gather(session, CursorContext(format="cline"), look))
    assert grown.exchanges[:2] == parsed.exchanges
    (work,) = grown.exchanges[2:]
    assert (work.kind, work.user, work.session_id, work.agent) == ("subagent", "", SDK.name, "cline/subagent")
    assert work.assistant == f"[sub-task] {task}\nTwo callers: src/queue/worker.ts, src/admin.ts."
    assert work.key == "agent_7:agent_7.messages.json#0" and work.position == 2
    assert grown.ledger.counts()["skipped: sub-agent messages not readable (half-written?)"] == 1
    with pytest.raises(NormalizeError, match="half-written"):
        _parse(SDK, {f"{SDK.name}.messages.json": b'{"version": 1, "messages": [{"role": "us'})


def test_ids_survive_rewrites_and_a_grown_task_only_adds_exchanges() -> None:
    ui = _ui(CLINE_TASK)
    files = _files(CLINE_TASK)
    whole = {e.key: e for e in _parse(CLINE_TASK).exchanges}
    files["ui_messages.json"] = json.dumps(ui, indent=4, ensure_ascii=True).encode()
    assert {e.key: e for e in _parse(CLINE_TASK, files).exchanges} == whole, "re-serialised: same exchanges"
    seen: set[str] = set()
    for n in range(1, len(ui) + 1):  # the extension rewrites the file after every message
        files["ui_messages.json"] = json.dumps(ui[:n]).encode()
        seen |= {e.key for e in _parse(CLINE_TASK, files).exchanges}
    assert seen == set(whole), "no exchange id appears that the whole task does not have"


def test_a_long_task_rewritten_a_hundred_times_never_yields_a_new_id_for_an_old_prompt() -> None:
    ui = _ui(CLINE_TASK)[:3]
    t = ui[-1]["ts"]
    keys_by_round: list[list[str]] = []
    for i in range(100):
        t += 1000
        ui.append({"ts": t, "type": "say", "say": "user_feedback", "text": f"Schritt {i}: prüfe Rechnung Nr. {i}",
                   "images": [], "files": []})
        ui.append({"ts": t + 500, "type": "say", "say": "completion_result", "text": f"Rechnung {i} geprüft."})
        parsed = _parse(CLINE_TASK, {"ui_messages.json": json.dumps(ui).encode()})
        keys_by_round.append([e.key for e in parsed.exchanges])
    for before, after in itertools.pairwise(keys_by_round):
        assert after[: len(before)] == before and len(after) == len(before) + 1
    assert len(set(keys_by_round[-1])) == 101
    last = _parse(CLINE_TASK, {"ui_messages.json": json.dumps(ui).encode()}).exchanges[-1]
    assert last.user == "Schritt 99: prüfe Rechnung Nr. 99" and last.assistant == "Rechnung 99 geprüft."


def test_bad_input_is_a_clear_error_or_a_counted_skip_never_a_crash() -> None:
    raw = (CLINE_TASK / "ui_messages.json").read_bytes()
    with pytest.raises(NormalizeError, match="half-written"):
        _parse(CLINE_TASK, {"ui_messages.json": raw[: len(raw) // 2]})
    with pytest.raises(NormalizeError, match=r"ui_messages\.json missing"):
        _parse(CLINE_TASK, {"task_metadata.json": b"{}"})
    with pytest.raises(NormalizeError, match=r"api_conversation_history\.json not a JSON array"):
        _parse(API_ONLY, {"api_conversation_history.json": b'[{"role":"user","content":[{"type":"te'})
    odd = [_ui(CLINE_TASK)[0], "not an object", {"ts": 5, "type": "say", "say": "hologram", "text": "?"},
           {"ts": 6, "type": "whisper", "text": "?"}, {"ts": 7, "type": "say", "say": "text", "text": 42},
           {"ts": 8, "type": "say", "say": "user_feedback", "text": "", "images": []}]
    parsed = _parse(CLINE_TASK, {"ui_messages.json": json.dumps(odd).encode()})
    counts = parsed.ledger.counts()
    assert counts["skipped: not an object"] == 1 and counts["skipped: unknown say: hologram"] == 1
    assert counts["skipped: unknown message type whisper"] == 1 and counts["skipped: empty prompt"] == 1
    assert [e.user for e in parsed.exchanges] == [odd[0]["text"]]  # type: ignore[index]


def test_the_folder_is_the_unit_and_its_files_are_read_through_the_look(tmp_path: Path) -> None:
    task = _laid_out(tmp_path, CLINE_TASK, "saoudrizwan.claude-dev")
    look = DirLook()
    assert cline.unit_of(task / "ui_messages.json", look) == task
    assert cline.unit_of(task / "task_metadata.json", look) == task
    assert cline.unit_of(task, look) == task
    (task / "checkpoints" / ".git").mkdir(parents=True)
    (task / "checkpoints" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert cline.unit_of(task / "checkpoints" / ".git" / "HEAD", look) is None
    assert cline.unit_of(task.parent, look) is None
    inp = cline.gather(task, CursorContext(format="cline"), look)
    assert set(inp.files) == {"ui_messages.json", "task_metadata.json", "api_conversation_history.json"}
    assert inp.files["ui_messages.json"] == (task / "ui_messages.json").read_bytes()
    assert cline.parse(inp).exchanges == _parse(CLINE_TASK).exchanges
    # once the workspace is known, the model's copy is not read again
    known = cline.gather(task, CursorContext(format="cline", cwd="/home/dev/projects/ledgerly"), look)
    assert "api_conversation_history.json" not in known.files
    # a folder deleted while read: nothing to gather, a clear error, no crash
    shutil.rmtree(task)
    with pytest.raises(NormalizeError):
        cline.parse(cline.gather(task, CursorContext(format="cline"), look))


def test_it_is_declared_where_each_editor_keeps_it() -> None:
    assert cline.FORMAT.reads == "folder" and cline.FORMAT.unit == "folder" and cline.FORMAT.ids == "message"
    assert cline.detect(Probe(entries=("ui_messages.json", "api_conversation_history.json", "task_metadata.json")))
    assert not cline.detect(Probe(entries=("users.json", "channels.json")))
    agents = {p.agent for p in cline.FORMAT.places}
    assert agents == {"Cline", "Roo Code", "Kilo Code", "Cline CLI"}
    home = {"HOME": "/h", "USERPROFILE": "C:/Users/h"}
    assert any(expand(p.linux[0], home) == Path("/h/.cline/data/sessions") for p in cline.FORMAT.places), \
        "Cline 4's session store"
    for place in cline.FORMAT.places:
        assert place.linux and place.macos and place.windows and place.globs == ("*",)
    vscode = next(p for p in cline.FORMAT.places if p.agent == "Roo Code")
    for editor in ("Code", "Code - Insiders", "Cursor", "Windsurf", "VSCodium"):
        assert f"$XDG_CONFIG_HOME/{editor}/User/globalStorage/rooveterinaryinc.roo-cline/tasks" in vscode.linux
        assert f"~/Library/Application Support/{editor}/User/globalStorage/rooveterinaryinc.roo-cline/tasks" \
            in vscode.macos
        assert f"%APPDATA%/{editor}/User/globalStorage/rooveterinaryinc.roo-cline/tasks" in vscode.windows
    assert "~/.vscode-server/data/User/globalStorage/rooveterinaryinc.roo-cline/tasks" in vscode.linux
    cli = next(p for p in cline.FORMAT.places if p.agent == "Cline CLI")
    assert cli.linux == cli.macos and expand(cli.linux[0], home) == Path("/h/.cline/data/tasks")
    assert expand(cli.windows[0], home) == Path("C:/Users/h/.cline/data/tasks")
