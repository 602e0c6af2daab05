"""``mempal doctor`` checks the hooks of every agent mempal installs hooks for (Gemini CLI, Antigravity CLI,
Cursor, Cline) as it checks Claude Code's: installed with the real ``mempal install-hooks --agent X`` into a temp
HOME, each command run with ``--probe`` as the agent runs it (a Cline script: the file itself), a broken hook path
reported with the fix, and a stale install (an event missing or not this release's) as a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

LABELS = {"gemini": "Gemini CLI hooks", "antigravity": "Antigravity CLI hooks", "cursor": "Cursor hooks",
          "cline": "Cline hooks"}
COUNTS = {"gemini": 5, "antigravity": 2, "cursor": 1, "cline": 6}  # the commands this release installs


@pytest.fixture
def project(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory the CLI runs in (the project scope's files land there): none of the agents' files yet."""
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    proj = tmp_path / "proj"
    proj.mkdir()
    return proj


def mempal(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``mempal`` command line, run in ``cwd`` with this test's environment."""
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=cwd, timeout=180)


def hook_checks(cwd: Path) -> dict[str, dict[str, Any]]:
    out = mempal(cwd, "doctor", "--json")
    checks: list[dict[str, Any]] = json.loads(out.stdout)
    return {c["name"]: c for c in checks if "hooks" in c["name"]}


def install(cwd: Path, agent: str, *extra: str) -> None:
    res = mempal(cwd, "install-hooks", "--agent", agent, *extra)
    assert res.returncode == 0, res.stderr


def hook_files(home: Path, agent: str) -> list[Path]:
    if agent == "cline":
        return sorted((home / "Documents" / "Cline" / "Hooks").iterdir())
    return [{"gemini": home / ".gemini" / "settings.json", "antigravity": home / ".gemini" / "config" / "hooks.json",
             "cursor": home / ".cursor" / "hooks.json"}[agent]]


def break_hook_path(home: Path, agent: str) -> None:
    """``pip install -e`` after ``pip install .``: the package folder the installed commands name is gone."""
    client = str(REPO / "client")
    for path in hook_files(home, agent):
        text = path.read_text()
        assert client in text, (path, text)
        path.write_text(text.replace(client, str(home / "gone" / "site-packages")))


def make_stale(home: Path, agent: str) -> str:
    """Edit the installed hooks as an earlier release's could be: one event missing (Cursor, which installs one
    event: an extra one); the event named in doctor's warning."""
    if agent == "cline":
        (home / "Documents" / "Cline" / "Hooks" / "TaskResume").unlink()
        return "missing TaskResume"
    (path,) = hook_files(home, agent)
    config = json.loads(path.read_text())
    if agent == "gemini":
        del config["hooks"]["PreCompress"]
        said = "missing PreCompress"
    elif agent == "antigravity":
        del config["mempal"]["Stop"]
        said = "missing Stop"
    else:
        config["hooks"]["stop"] = [dict(config["hooks"]["sessionStart"][0])]
        said = "not this release's stop"
    path.write_text(json.dumps(config))
    return said


@pytest.mark.timeout(300)
@pytest.mark.parametrize("agent", ["gemini", "antigravity", "cursor", "cline"])
def test_doctor_probes_each_agents_installed_hooks_and_sees_a_broken_path_and_a_stale_install(
        home: Path, project: Path, agent: str) -> None:
    name = LABELS[agent]
    before = hook_checks(project)
    assert name not in before and before["Claude Code hooks"]["warning"], before  # none installed: no check
    install(project, agent)

    ok = hook_checks(project)[name]
    assert ok["ok"] and not ok["warning"], ok
    assert f"{COUNTS[agent]} hook commands in " in ok["detail"] and "each probed: they run" in ok["detail"], ok
    assert f"{name} (project)" not in hook_checks(project)

    break_hook_path(home, agent)
    broken = hook_checks(project)[name]
    assert not broken["ok"] and not broken["warning"], broken
    assert f"the hook path is broken: {COUNTS[agent]} of {COUNTS[agent]} hook commands" in broken["detail"], broken
    assert "No module named 'mempal'" in broken["detail"], broken
    assert broken["fix"].startswith(f"mempal install-hooks --agent {agent}, run with the Python whose `mempal`")
    text = mempal(project, "doctor")
    assert text.returncode == 1 and f"fix: mempal install-hooks --agent {agent}," in text.stdout, text.stdout

    install(project, agent)  # the fix: this Python's commands again
    assert hook_checks(project)[name]["ok"]
    said = make_stale(home, agent)
    stale = hook_checks(project)[name]
    assert not stale["ok"] and stale["warning"], stale
    assert "run, but differ from this release's" in stale["detail"] and said in stale["detail"], stale
    assert stale["fix"] == f"mempal install-hooks --agent {agent}"
    assert mempal(project, "doctor").returncode == 1  # the daemon is down here; the stale hooks only warn
    install(project, agent)
    assert hook_checks(project)[name]["ok"]


@pytest.mark.timeout(300)
def test_a_cline_script_runs_itself_with_probe_and_one_of_an_earlier_release_is_not_run(
        home: Path, project: Path) -> None:
    install(project, "cline")
    folder = home / "Documents" / "Cline" / "Hooks"
    script = folder / "UserPromptSubmit"
    res = subprocess.run([str(script), "--probe"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         timeout=60)
    assert (res.returncode, res.stdout.strip()) == (0, "mempal-hook ok: prompt"), res  # the file, as Cline runs it

    # an earlier release's script did not pass its arguments on: --probe would run the hook itself; not probed
    text = script.read_text()
    script.write_text(text.replace(' "$@"', ""))
    stale = hook_checks(project)["Cline hooks"]
    assert not stale["ok"] and stale["warning"], stale
    assert stale["detail"].startswith("5 hook commands in "), stale
    assert "written by an earlier release (they cannot be probed) UserPromptSubmit" in stale["detail"], stale

    # without the executable bit Cline skips the file: the probe says so
    install(project, "cline")
    (folder / "TaskStart").chmod(0o644)
    broken = hook_checks(project)["Cline hooks"]
    assert not broken["ok"] and "1 of 6 hook commands" in broken["detail"] and "TaskStart" in broken["detail"]
    assert broken["fix"].startswith("mempal install-hooks --agent cline,")


@pytest.mark.timeout(300)
def test_project_scope_hooks_get_their_own_check_with_the_project_fix(home: Path, project: Path) -> None:
    install(project, "cursor", "--scope", "project")
    install(project, "gemini", "--scope", "project")
    checks = hook_checks(project)
    assert "Cursor hooks" not in checks and "Gemini CLI hooks" not in checks, checks
    for name, n in (("Cursor hooks (project)", 1), ("Gemini CLI hooks (project)", 5)):
        assert checks[name]["ok"] and f"{n} hook commands in {project}" in checks[name]["detail"], checks[name]
    path = project / ".cursor" / "hooks.json"
    path.write_text(path.read_text().replace(str(REPO / "client"), str(home / "gone")))
    broken = hook_checks(project)["Cursor hooks (project)"]
    assert not broken["ok"] and broken["fix"].startswith("mempal install-hooks --agent cursor --scope project,")


@pytest.mark.timeout(300)
def test_an_agents_unreadable_file_fails_only_when_it_holds_mempals_hooks(home: Path, project: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"theme": ')  # the user's file mid-edit, nothing of ours: no check
    assert "Gemini CLI hooks" not in hook_checks(project)
    settings.unlink()
    install(project, "gemini")
    settings.write_text(settings.read_text()[:-20])  # ours in it, cut short
    bad = hook_checks(project)["Gemini CLI hooks"]
    assert not bad["ok"] and not bad["warning"] and "is not valid JSON" in bad["detail"], bad
    assert bad["fix"] == f"fix {settings} by hand, then mempal install-hooks --agent gemini"
