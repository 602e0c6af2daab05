"""``Exchange.files``: the paths an exchange's tool calls touched, on real transcripts (../shared) and on the
shell/patch shapes the adapters read (the file gate of issue #19 filters drawers on them)."""

from __future__ import annotations

from pathlib import Path

from mempald.ingest.drawers import SourceInfo, build_drawers
from mempald.normalize import claude_code, codex
from mempald.normalize.common import touched_path
from mempald.normalize.model import Exchange
from mempald.normalize.shell import command_files, patch_files
from mempald.store.base import KEYWORD_FIELDS
from tests.conftest import lines_of

CC = "claude_code/real2/projects"
BYTE = f"{CC}/-Users-cedricmukolonga-00-vibe-projects-byte-bridges/f156e813-a767-437a-898c-1110895e08b2.jsonl"
POMPEII = f"{CC}/-Users-agents-conductor-acp-python--conductor-pompeii/b6a167ee-d73d-4170-a2ae-1de13be39207.jsonl"
ECE = "codex/real2/rollout-2026-03-09T16-29-31-019cd4b8-43b8-78a3-9985-04f6307807de.jsonl"


def test_claude_code_read_edit_write_paths(formats_dir: Path) -> None:
    ex = claude_code.parse_lines(lines_of(formats_dir / BYTE))
    spec = "/Users/cedricmukolonga/00 vibe_projects/byte_bridges/specs/001-byte-bridges-enterprise/spec.md"
    answers = [e for e in ex if e.user == "B"]  # line 23: Read then Edit of spec.md (lines 25, 27)
    assert answers and answers[0].files == (spec,)
    pompeii = claude_code.parse_lines(lines_of(formats_dir / POMPEII))
    every = {f for e in pompeii for f in e.files}
    # Read of README.md (line 4), Write of the guide (line 52); Glob/Bash/TodoWrite name no file
    assert "/Users/agents/conductor/acp-python/.conductor/pompeii/README.md" in every
    assert "/Users/agents/conductor/acp-python/.conductor/pompeii/GUIA_INTEGRACAO_ACP.md" in every
    assert not any("*" in f for f in every)


def test_codex_apply_patch_and_reading_commands(formats_dir: Path) -> None:
    ex = codex.parse_lines(lines_of(formats_dir / ECE))
    first = ex[0]
    root = "/home/thaia/ECE493Group19"
    # sed -n of the spec template, cat of the use case files, then an apply_patch of the new spec
    assert f"{root}/Use Cases/UC-15.md" in first.files
    assert f"{root}/specs/002-uc-15-drop-deadline/spec.md" in first.files
    assert all(f.startswith(root) for e in ex for f in e.files)
    assert sum(len(e.files) for e in ex) >= 30


def test_shell_and_patch_shapes() -> None:
    cwd = "/repo"
    assert command_files(["bash", "-lc", "sed -n '1,200p' src/app.py"], cwd) == ["/repo/src/app.py"]
    assert command_files("cat a.md b.md", cwd) == ["/repo/a.md", "/repo/b.md"]
    assert command_files("head -n 40 /etc/hosts", cwd) == ["/etc/hosts"]
    assert command_files("nl -ba ../x.py", "/repo/sub") == ["/repo/x.py"]
    for unclear in ("cat a.md | grep x", "rg foo src", "cat $(ls)", "ls -la", "cat *.md", "echo hi > f.txt", ""):
        assert command_files(unclear, cwd) == [], unclear
    patch = ("*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: /abs/new.md\n+hi\n"
             "*** Delete File: old.txt\n*** Update File: b.py\n*** Move to: c.py\n*** End Patch")
    assert patch_files(patch, cwd) == ["/repo/src/a.py", "/abs/new.md", "/repo/old.txt", "/repo/b.py", "/repo/c.py"]
    assert command_files(f"apply_patch <<'EOF'\n{patch}\nEOF", cwd)[0] == "/repo/src/a.py"
    assert touched_path("d:\\ws\\a.md", "/x") == "d:\\ws\\a.md"
    assert touched_path("https://example.com/a", cwd) is None


def test_files_reach_the_drawer_payload_as_an_indexed_list() -> None:
    ex = Exchange(source_kind="claude_code", session_id="s", key="k", user="fix it", assistant="done",
                  files=("/repo/a.py", "/repo/b.py"))
    info = SourceInfo(kind="claude_code", path="/t.jsonl", source_key="k", machine="m", user="u")
    (drawer,) = build_drawers([ex], info, lambda t: len(t.split()), 256)
    assert drawer.payload["files"] == ["/repo/a.py", "/repo/b.py"]
    assert "files" in KEYWORD_FIELDS
    bare = build_drawers([Exchange(source_kind="x", session_id="s", key="k2", user="q", assistant="a")], info,
                         lambda t: len(t.split()), 256)
    assert "files" not in bare[0].payload
