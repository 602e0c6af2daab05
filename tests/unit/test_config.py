from __future__ import annotations

from pathlib import Path

import pytest

from mempald.config import ConfigError, load_settings, parse_settings, write_raw


def test_defaults() -> None:
    s = parse_settings({}, env={})
    assert s.embed.max_tokens == 250 and s.sources.claude_projects == "~/.claude/projects"
    assert s.origin("embed.max_tokens") == "default"


def test_unknown_key_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"embed\.modle: unknown key"):
        parse_settings({"embed": {"modle": "x"}}, env={})
    with pytest.raises(ConfigError, match="nope: unknown section"):
        parse_settings({"nope": {}}, env={})


def test_wrong_type_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"embed\.batch_size: expected an integer"):
        parse_settings({"embed": {"batch_size": "many"}}, env={})
    with pytest.raises(ConfigError, match=r"hooks\.stop_mode: must be one of"):
        parse_settings({"hooks": {"stop_mode": "loud"}}, env={})


def test_env_overrides_and_origin() -> None:
    s = parse_settings({"embed": {"threads": 2}}, env={"MEMPAL_EMBED_THREADS": "1"})
    assert s.embed.threads == 1 and s.origin("embed.threads") == "env:MEMPAL_EMBED_THREADS"
    s = parse_settings({"embed": {"threads": 2}}, env={})
    assert s.origin("embed.threads") == "file"


def test_watch_sources_validated() -> None:
    s = parse_settings({"sources": {"watch": [{"path": "/x", "mode": "projects", "wing": "w"}]}}, env={})
    assert s.sources.watch[0].mode == "projects"
    with pytest.raises(ConfigError, match=r"sources\.watch\[0\]\.mode"):
        parse_settings({"sources": {"watch": [{"path": "/x", "mode": "bogus"}]}}, env={})


def test_write_preserves_other_settings(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[embed]\nthreads = 2\n\n[people]\nAlice = "ALC"\n')
    from mempald.config import read_raw

    raw = read_raw(path)
    raw.setdefault("hooks", {})["stop_every"] = 5
    write_raw(raw, path)
    s = load_settings(path, env={})
    assert s.embed.threads == 2 and s.hooks.stop_every == 5 and dict(s.people) == {"Alice": "ALC"}


def test_bad_toml_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[embed\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(path, env={})
