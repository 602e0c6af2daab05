"""Where the agents keep their sessions: the formats' declared places, resolved per platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from mempald.config import parse_settings
from mempald.normalize import registry
from mempald.normalize.format import Place
from mempald.sources.places import default_roots, expand, templates
from mempald.sources.roots import Source, resolve_sources, waiting_roots

PLACE = Place("Editor", linux=("$XDG_CONFIG_HOME/Ed/tasks",), macos=("~/Library/Application Support/Ed/tasks",),
              windows=("%APPDATA%/Ed/tasks",))


def test_templates_expand_with_the_usual_defaults_and_the_users_variables(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert expand("$XDG_CONFIG_HOME/Ed/tasks", env) == tmp_path / ".config/Ed/tasks"
    assert expand("$XDG_DATA_HOME/opencode", env) == tmp_path / ".local/share/opencode"
    assert expand("%APPDATA%/Ed/tasks", env) == tmp_path / "AppData/Roaming/Ed/tasks"
    assert expand("%LOCALAPPDATA%/x", env) == tmp_path / "AppData/Local/x"
    assert expand("~/.claude/projects", env) == tmp_path / ".claude/projects"
    moved = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": "/srv/cfg", "APPDATA": "D:/Roaming"}
    assert expand("$XDG_CONFIG_HOME/Ed", moved) == Path("/srv/cfg/Ed")
    assert expand("%APPDATA%/Ed", moved) == Path("D:/Roaming/Ed")
    assert templates(PLACE, "linux") == PLACE.linux
    assert templates(PLACE, "darwin") == PLACE.macos
    assert templates(PLACE, "win32") == PLACE.windows


def test_every_agents_default_root_is_a_source_where_it_exists_and_waited_for_where_not(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    settings = parse_settings({}, env={})
    found = default_roots(settings, "linux", env)
    by_format = {f.fmt.name: f for f in found}
    assert by_format["claude_code"].root == tmp_path / ".claude/projects"
    assert by_format["codex"].root == tmp_path / ".codex/sessions"
    assert all(f.place.agent for f in found)
    # every declared place is somewhere on every platform the format names one for
    for fmt in registry.FORMATS:
        for place in fmt.places:
            assert place.linux or place.macos or place.windows, fmt.name


def test_a_root_that_exists_is_watched_in_its_format_and_one_that_does_not_is_waited_for(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".claude/projects").mkdir(parents=True)
    settings = parse_settings({}, env={})
    sources = resolve_sources(settings)
    claude = next(s for s in sources if s.fmt == "claude_code")
    assert claude.root == (tmp_path / ".claude/projects").resolve() and claude.agent == "Claude Code"
    assert claude.wants(claude.root / "-home-u-proj" / "s.jsonl")
    assert not claude.wants(claude.root / "-home-u-proj" / "notes.md")
    assert tmp_path / ".codex/sessions" in waiting_roots(settings)
    assert not any(s.fmt == "codex" for s in sources)
    # a setting moves a place or turns it off; sources.skip turns off a format's places by name
    off = parse_settings({"sources": {"claude_projects": "", "skip": ["codex"]}}, env={})
    assert not any(s.fmt in ("claude_code", "codex") for s in resolve_sources(off))
    assert tmp_path / ".codex/sessions" not in waiting_roots(off)  # (~/.codex itself: the agents' memories)
    assert all(f.fmt.name != "codex" for f in default_roots(off))


def test_a_database_units_side_files_belong_to_it(tmp_path: Path) -> None:
    """A database format's unit is the database: its -wal and -journal changes are changes of the database."""
    src = Source("convos:x", tmp_path, "convos", "auto")
    assert src.unit_of(tmp_path / "notes.md") is None  # a file is its own unit
    for fmt in registry.unit_formats():
        if fmt.unit == "database" and fmt.names:
            db = tmp_path / fmt.names[0]
            unit = src.unit_of(Path(f"{db}-wal"))
            assert unit is not None and unit.path == db and unit.fmt is fmt


def test_every_places_setting_is_a_sources_setting() -> None:
    """A place's ``setting`` names the ``[sources]`` key that moves it: one that does not exist would be ignored."""
    from dataclasses import fields

    from mempald.config import SourcesSettings

    keys = {f.name for f in fields(SourcesSettings)}
    for fmt in registry.FORMATS:
        for place in fmt.places:
            assert not place.setting or place.setting in keys, (fmt.name, place.setting)


def test_an_agents_own_override_moves_its_place_and_falls_back_when_unset(tmp_path: Path) -> None:
    """``${NAME:-fallback}``, nested: Gemini CLI's GEMINI_CLI_HOME (the folder holding .gemini), the Cline CLI's
    CLINE_DIR, CLINE_DATA_DIR and CLINE_SESSION_DATA_DIR, as the CLIs resolve them."""
    home = {"HOME": str(tmp_path)}
    by_agent = {(f.fmt.name, f.place.agent, f.root.name): f.place for f in default_roots(parse_settings({}, env={}),
                                                                                          "linux", home)}
    gemini = next(p for (name, _a, _r), p in by_agent.items() if name == "gemini")
    sessions = next(p for (name, agent, root), p in by_agent.items() if name == "cline" and root == "sessions")
    tasks = next(p for (name, agent, root), p in by_agent.items() if agent == "Cline CLI")
    assert expand(gemini.linux[0], home) == tmp_path / ".gemini/tmp"
    assert expand(gemini.linux[0], {**home, "GEMINI_CLI_HOME": "/srv/g"}) == Path("/srv/g/.gemini/tmp")
    assert expand(gemini.windows[0], home) == tmp_path / ".gemini/tmp"  # %USERPROFILE%'s default
    assert expand(sessions.linux[0], home) == tmp_path / ".cline/data/sessions"
    assert expand(sessions.linux[0], {**home, "CLINE_DIR": "/c"}) == Path("/c/data/sessions")
    assert expand(sessions.linux[0], {**home, "CLINE_DIR": "/c", "CLINE_DATA_DIR": "/d"}) == Path("/d/sessions")
    assert expand(sessions.linux[0], {**home, "CLINE_SESSION_DATA_DIR": "/s", "CLINE_DIR": "/c"}) == Path("/s")
    assert expand(tasks.linux[0], {**home, "CLINE_DIR": "~/alt"}) == tmp_path / "alt/data/tasks"
    assert expand("${UNSET_NAME:-$XDG_CONFIG_HOME}/x", home) == tmp_path / ".config/x"  # a fallback is a template
    found = {f.root for f in default_roots(parse_settings({}, env={}), "linux", {**home, "GEMINI_CLI_HOME": "/g"})}
    assert Path("/g/.gemini/tmp") in found and tmp_path / ".gemini/tmp" not in found
