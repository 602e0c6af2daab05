"""Claude Code cases of issue #17, each on a real transcript of ../shared/fixtures/formats/claude_code/real2
(PROVENANCE.md there lists what each line holds and the prompts counted by hand)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from mempald.ingest.drawers import SourceInfo, build_drawers
from mempald.normalize import claude_code
from mempald.normalize.claude_code_beside import subagent_context
from mempald.normalize.format import Input
from mempald.normalize.model import CursorContext, Exchange, Line
from mempald.sources.look import LOOK
from tests.conftest import lines_of

P = "claude_code/real2/projects"
BYTE = f"{P}/-Users-cedricmukolonga-00-vibe-projects-byte-bridges/f156e813-a767-437a-898c-1110895e08b2.jsonl"
PLAN = f"{P}/-home-yingbohao/302863af-e0a0-4488-8928-7f132c701fae.jsonl"
POMPEII = f"{P}/-Users-agents-conductor-acp-python--conductor-pompeii/b6a167ee-d73d-4170-a2ae-1de13be39207.jsonl"
HANGZHOU = (f"{P}/-Users-agents-Desktop-claude-20x-agents-a2a--conductor-hangzhou/"
            "40121ba8-11a2-422b-b4f3-930c8e21ae51.jsonl")
THANOS = f"{P}/-Users-jeremy-Projects-Thanos"
IDE = f"{P}/D--ClaudeWorkspace/2089a09c-2a76-4c4f-beab-7b0448d03c39.jsonl"
BASH = f"{P}/-Users-liuhanwen-Desktop-project-webtech-monorepo/b00e3a6d-0c94-4670-932c-6ccd373aa93e.jsonl"
VW = f"{P}/-home-vwestberg-Claude/8c880a68-969b-4b92-8733-a4927179d072"


def parse(path: Path, ctx: CursorContext | None = None) -> tuple[list[Exchange], dict[int | None, int]]:
    lines = lines_of(path)
    parsed = claude_code.parse(Input(lines=lines, context=ctx or CursorContext()))
    num: dict[int | None, int] = {ln.offset: i + 1 for i, ln in enumerate(lines)}
    return parsed.exchanges, num


def prompts(ex: list[Exchange], num: dict[int | None, int]) -> list[int]:
    return [num[e.offset] for e in ex if e.kind == "exchange" and e.user and e.offset is not None]


def test_slash_commands_are_prompts_and_their_turns_are_kept(formats_dir: Path) -> None:
    ex, num = parse(formats_dir / BYTE)
    # PROVENANCE: 14 typed prompts, 5 of them slash commands (11, 79, 84, 167, 174)
    assert prompts(ex, num) == [11, 23, 36, 46, 56, 66, 79, 84, 142, 164, 167, 174, 197, 212]
    by_line = {num[e.offset]: e for e in ex if e.offset is not None}
    assert [by_line[n].user for n in (11, 79, 84, 167, 174)] == [
        "/speckit.clarify", "/speckit.implement", "/speckit.plan", "/speckit.implement", "/speckit.tasks"]
    clarify = by_line[11]  # its answers (13...21) are kept; the isMeta expansion (12) is not the prompt
    assert clarify.assistant.startswith("I'll help you clarify the feature specification.")
    assert "You **MUST** consider the user input" not in clarify.render()
    assert "<command-" not in "".join(e.render() for e in ex)
    assert by_line[79].assistant.endswith("[interrupted by user]")  # 81 answered, 82 interrupted
    assert [e.kind for e in ex].count("summary") == 1  # the compact summary at 238
    assert ex[0].title == "Web Platform Development: Core Built, Features Pending"  # the summary record, line 1


def test_plan_text_and_question_answers_are_kept_whole(formats_dir: Path) -> None:
    ex, num = parse(formats_dir / PLAN)
    assert prompts(ex, num) == [2, 79, 82, 177, 196, 203, 206]
    last = ex[-1]
    plan = last.assistant[last.assistant.index("[plan]\n"):]
    assert len(plan) > 4000 and "mxfp8_fake_quant" in plan  # input.plan of ExitPlanMode (4,453 chars)
    answer = next(ln for ln in last.assistant.splitlines() if ln.startswith("  -> answered:"))
    # both answers of AskUserQuestion (line 301), not cut: the human's decisions
    assert '"全量化，同时区分一个模式是w4a8和之前的w4a4区分开";' in answer
    assert answer.endswith('"纯 PyTorch 实现 (推荐)"')


def test_inline_sidechain_is_sub_agent_work_not_a_prompt(formats_dir: Path) -> None:
    ex, num = parse(formats_dir / POMPEII)
    assert prompts(ex, num) == [2, 13]
    assert ex[0].user == "do que se trata esse projeto?"  # the Conductor <system_instruction> blocks are cut
    sub = next(e for e in ex if e.kind == "subagent")
    parent = next(e for e in ex if num[e.offset] == 13)
    assert sub.user == "" and sub.agent == "claude/subagent" and sub.parent == parent.key
    assert ("subagent_type", "general-purpose") in sub.extra
    assert sub.assistant.startswith("[sub-agent general-purpose task] Analise os arquivos de exemplo")
    assert "Resumo Estruturado do SDK ACP Python" in sub.assistant  # its final text (line 50)
    assert [e.position for e in ex] == [0, 1, 2] and num[sub.offset] == 18 and parent.position < sub.position
    # the parent keeps the call and a one-line result; TodoWrite reads as its step, not its boilerplate
    assert "[tool: Task] Analisar exemplos do SDK" in parent.assistant
    assert "Todos have been modified successfully" not in parent.assistant
    assert "[tool: TodoWrite] 4 todos; doing: Criar guia de integração do ACP SDK" in parent.assistant


def test_subagent_files_are_linked_to_the_exchange_that_started_them(formats_dir: Path) -> None:
    for session, agent, kind in ((f"{VW}.jsonl", f"{VW}/subagents/agent-a2df51c9276581f81.jsonl", "claude-code-guide"),
                                 (f"{THANOS}/d4983b3a-ddde-4a22-9bff-98a04c19bfe7.jsonl",
                                  f"{THANOS}/agent-a58cb7d.jsonl", "claude-code-guide")):
        parent_ex, _ = parse(formats_dir / session)
        ctx = subagent_context(formats_dir / agent, CursorContext(format="claude_code"), LOOK)
        assert ctx.agent_type == kind
        call = next(e for e in parent_ex if e.key == ctx.parent)
        assert any(t in ("Task", "Agent") for t in call.tools)
        (sub,), _ = parse(formats_dir / agent, ctx)
        assert sub.kind == "subagent" and sub.user == "" and sub.parent == call.key
        assert (sub.agent or "").startswith("claude/subagent:") and sub.session_id == call.session_id
        assert sub.assistant.startswith(f"[sub-agent {kind} task]")


def test_warmup_sidechains_are_skipped(formats_dir: Path) -> None:
    for name in ("agent-ae96867.jsonl", "agent-a7cbd0e.jsonl"):
        ex, _ = parse(formats_dir / THANOS / name)
        assert ex == []


def test_ide_blocks_and_bash_mode(formats_dir: Path) -> None:
    ex, num = parse(formats_dir / IDE)
    assert prompts(ex, num) == [3, 32, 38]
    assert ex[0].user == ("我之前用的是DeepSeekv3的api需要介入DeepSeekv4-pro的api，"
                          "可不可以继续小满CRM的任务有没有坏的影响")
    assert all("ide_opened_file" not in e.user for e in ex)
    assert ex[0].title == "切换至deepseekv4-pro api对crm任务的影响"  # the later ai-title wins over the first
    ex, num = parse(formats_dir / BASH)
    assert [e.user for e in ex] == ["在開啟一個 worktree 是叫做修復 user-access-device 英文",
                                    "! git remove worktree -fix-role-page-total"]
    assert "git: 'remove' is not a git command" in ex[1].assistant  # its <bash-stderr> (line 17)
    assert "<bash-" not in "".join(e.render() for e in ex)


def test_one_session_one_wing(formats_dir: Path) -> None:
    lines = lines_of(formats_dir / HANGZHOU)
    records = [json.loads(ln.raw) for ln in lines]
    marvin = records[24]["cwd"]  # line 25: the session has moved into .../hangzhou/marvin
    assert marvin.endswith("/marvin")
    # the second prompt (line 19) as Claude Code writes it once the session has moved into the subfolder
    records[18]["cwd"] = marvin
    moved = [Line(i, json.dumps(r).encode()) for i, r in enumerate(records)]
    ex = claude_code.parse(Input(lines=moved)).exchanges
    assert [e.cwd for e in ex] == ["/Users/agents/Desktop/claude-20x/agents-a2a/.conductor/hangzhou", marvin]
    info = SourceInfo(kind="claude_code", path="/x.jsonl", source_key="k", machine="m", user="u")
    drawers = build_drawers(ex, info, lambda t: len(t.split()), 10_000)
    assert {d.payload["wing"] for d in drawers} == {"hangzhou"}  # the launch folder, not marvin
    # a later read of the same file keeps the project it started in (the cursor's context)
    later = claude_code.parse(Input(lines=moved[18:], context=CursorContext(cwd=ex[0].cwd or ""))).exchanges
    assert {d.payload["wing"] for d in build_drawers(later, info, lambda t: len(t.split()), 10_000)} == {"hangzhou"}


def test_exit_command_is_a_prompt_and_local_command_records_are_not(formats_dir: Path) -> None:
    ex, num = parse(formats_dir / THANOS / "d4983b3a-ddde-4a22-9bff-98a04c19bfe7.jsonl")
    assert prompts(ex, num) == [5, 48, 53]
    assert ex[-1].user == "/exit" and ex[-1].assistant == "-> See ya!"


@pytest.mark.parametrize("rel", [BYTE, PLAN, POMPEII, IDE, BASH, f"{VW}.jsonl"])
def test_reading_from_the_resume_point_rebuilds_the_same_exchanges(formats_dir: Path, rel: str) -> None:
    """The ingest re-reads a growing file from ``Parsed.resume``: what it rebuilds there is what a full read
    gives (same keys, positions and text)."""
    lines = lines_of(formats_dir / rel)
    full = claude_code.parse(Input(lines=lines))
    assert full.resume is not None
    at, pos = full.resume
    # the cursor keeps the context (session, project, title) and the position of the exchange at ``at``
    tail = claude_code.parse(Input(lines=[ln for ln in lines if ln.offset >= at],
                                   context=replace(full.context, position=pos)))
    assert tail.exchanges == [e for e in full.exchanges if e.offset is not None and e.offset >= at]
