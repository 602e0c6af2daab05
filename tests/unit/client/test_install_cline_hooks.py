"""install-hooks / uninstall-hooks --agent cline on a temp home: one executable script per Cline event in
~/Documents/Cline/Hooks/ (or ./.clinerules/hooks/), the user's other hooks kept, a file of ours' name that is not
ours left alone and named, idempotent, reversible, --dry-run writes nothing; the scripts run as Cline runs them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from mempal.install_cline import CLINE_HOOKS, MARKER
from tests.unit.client.test_install import mempal

EVENTS = {"TaskStart": "session-start", "TaskResume": "session-start", "UserPromptSubmit": "prompt",
          "PreCompact": "precompact", "TaskComplete": "session-end", "TaskCancel": "session-end"}


def _their_hook(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(body)
    path.chmod(0o755)
    return path


def test_user_scope_writes_one_executable_script_per_event_and_comes_out_exactly(home: Path) -> None:
    assert CLINE_HOOKS == EVENTS
    folder = home / "Documents" / "Cline" / "Hooks"
    theirs = _their_hook(folder, "PreToolUse", "#!/bin/sh\necho '{\"cancel\": false}'\n")
    dry = mempal("install-hooks", "--agent", "cline", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["PreToolUse"]  # --dry-run writes nothing
    assert dry.stdout.count(MARKER) == len(EVENTS)
    res = mempal("install-hooks", "--agent", "cline")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in folder.iterdir()) == sorted([*EVENTS, "PreToolUse"])
    for event, verb in EVENTS.items():
        path = folder / event
        text = path.read_text()
        assert text.startswith("#!/bin/sh\n") and MARKER in text, text
        assert text.rstrip("\n").endswith(f' {verb} --agent cline "$@"'), text  # doctor probes through it
        assert path.stat().st_mode & stat.S_IXUSR  # Cline skips a file that is not executable
    assert theirs.read_text() == "#!/bin/sh\necho '{\"cancel\": false}'\n"
    before = {p.name: (p.read_text(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    again = mempal("install-hooks", "--agent", "cline")
    assert again.returncode == 0 and again.stderr.count("unchanged") == len(EVENTS), again.stderr
    assert {p.name: (p.read_text(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before
    dry_gone = mempal("uninstall-hooks", "--agent", "cline", "--dry-run")
    assert dry_gone.returncode == 0 and sorted(p.name for p in folder.iterdir()) == sorted(before)
    gone = mempal("uninstall-hooks", "--agent", "cline")
    assert gone.returncode == 0, gone.stderr
    assert [p.name for p in folder.iterdir()] == ["PreToolUse"]  # exactly ours removed
    nothing = mempal("uninstall-hooks", "--agent", "cline")
    assert nothing.returncode == 0 and "nothing installed here" in nothing.stderr


def test_a_stale_script_of_ours_is_replaced_and_a_foreign_one_is_never_touched(home: Path) -> None:
    folder = home / "Documents" / "Cline" / "Hooks"
    foreign = _their_hook(folder, "UserPromptSubmit", "#!/bin/sh\n./my-linter\n")
    stale = _their_hook(folder, "TaskStart", f"#!/bin/sh\n{MARKER}\nexec /old/venv/bin/python3 x session-start\n")
    stale.chmod(0o644)
    res = mempal("install-hooks", "--agent", "cline")
    assert res.returncode == 0, res.stderr
    assert f"{foreign} is not mempal's" in res.stderr
    assert foreign.read_text() == "#!/bin/sh\n./my-linter\n"
    assert "/old/venv" not in stale.read_text() and stale.stat().st_mode & stat.S_IXUSR
    gone = mempal("uninstall-hooks", "--agent", "cline")
    assert gone.returncode == 0 and f"{foreign} is not mempal's" in gone.stderr
    assert [p.name for p in folder.iterdir()] == ["UserPromptSubmit"]


def test_project_scope_writes_the_workspace_clinerules_hooks(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "acme"
    project.mkdir()
    res = mempal("install-hooks", "--agent", "cline", "--scope", "project", cwd=project)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (project / ".clinerules" / "hooks").iterdir()) == sorted(EVENTS)
    assert not (home / "Documents").exists()
    gone = mempal("uninstall-hooks", "--agent", "cline", "--scope", "project", cwd=project)
    assert gone.returncode == 0 and not list((project / ".clinerules" / "hooks").iterdir())


def test_the_installed_scripts_fail_open_as_cline_runs_them(home: Path) -> None:
    """Cline spawns the file through a shell with the event's JSON on stdin and reads the last JSON of stdout:
    with no daemon running, and with garbage on stdin, each script exits 0 with Cline's no-op answer, quickly."""
    assert mempal("install-hooks", "--agent", "cline").returncode == 0
    folder = home / "Documents" / "Cline" / "Hooks"
    payload = {"clineVersion": "3.38.1", "hookName": "UserPromptSubmit", "timestamp": "1765000000000",
               "taskId": "1765000000000", "workspaceRoots": [str(home / "proj")], "userId": "u-1",
               "userPromptSubmit": {"prompt": "why does the build fail?", "attachments": []}}
    for event in EVENTS:
        for stdin in (json.dumps({**payload, "hookName": event}), "{not json", ""):
            res = subprocess.run([str(folder / event)], input=stdin, capture_output=True, text=True,
                                 env=dict(os.environ), timeout=30)
            assert (res.returncode, json.loads(res.stdout)) == (0, {"cancel": False}), (event, stdin, res.stderr)
