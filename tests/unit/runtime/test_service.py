"""Service files: rendering, `systemd-analyze verify`, the plist, and install/uninstall with a fake runner."""

from __future__ import annotations

import io
import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mempald.runtime import service, service_files
from mempald.runtime.service import (
    install_service,
    plist_path,
    resolve_executable,
    uninstall_service,
    unit_path,
)
from mempald.runtime.service_files import LAUNCHD_LABEL, UNIT_NAME, render_launchd_plist, render_systemd_unit

REPO = Path(__file__).resolve().parents[3]


class FakeRunner:
    """Records commands; returns the code given for the first matching prefix, else 0."""

    def __init__(self, codes: dict[tuple[str, ...], int] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.codes = codes or {}

    def __call__(self, cmd: list[str]) -> int:
        self.calls.append(list(cmd))
        for prefix, code in self.codes.items():
            if tuple(cmd[: len(prefix)]) == prefix:
                return code
        return 0


def _never_run(cmd: list[str]) -> int:
    raise AssertionError(f"dry run must not run anything, ran {cmd}")


def _parse_unit(text: str) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, _, value = line.partition("=")
        assert key not in current, f"duplicate key {key}"
        current[key] = value
    return sections


def _fake_exe(directory: Path, name: str = "mempald") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and XDG_CONFIG_HOME in tmp_path (deliberately not HOME/.config), nothing else."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    return h


def _files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*")]


# ---------------------------------------------------------------------------------------------
# Templates and rendering


def test_repo_templates_match_the_module() -> None:
    # The wheel does not ship systemd/ and launchd/, so service_files.py carries the templates; the
    # repository copies must not drift from them.
    assert (REPO / "systemd" / "mempald.service").read_text() == service_files.SYSTEMD_TEMPLATE
    plist_file = REPO / "launchd" / f"{LAUNCHD_LABEL}.plist"
    assert plist_file.read_bytes() == service_files.LAUNCHD_TEMPLATE
    assert plistlib.loads(plist_file.read_bytes())["ProgramArguments"] == ["@EXEC@", "run"]


def test_systemd_unit_directives() -> None:
    unit = _parse_unit(render_systemd_unit("/opt/mempal/bin/mempald"))
    svc = unit["Service"]
    assert svc["ExecStart"] == "/opt/mempal/bin/mempald run"
    expected = {
        "Type": "notify",
        "NotifyAccess": "main",
        "ExecReload": "/bin/kill -HUP $MAINPID",
        "Restart": "on-failure",
        "RestartSec": "5",
        "RestartPreventExitStatus": "2 4",
        "WatchdogSec": "60",
        "TimeoutStopSec": "30",
        "Environment": "PYTHONUNBUFFERED=1",
        "NoNewPrivileges": "yes",
        "PrivateTmp": "yes",
        "PrivateUsers": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "read-only",
        "ProtectKernelTunables": "yes",
        "ProtectControlGroups": "yes",
        "LockPersonality": "yes",
        "MemoryDenyWriteExecute": "no",
        "SystemCallArchitectures": "native",
        "RuntimeDirectory": "mempald",
        "ReadWritePaths": "-%h/.local/share/mempald -%h/.config/mempald",
    }
    for key, value in expected.items():
        assert svc[key] == value, key
    assert "AF_UNIX" in svc["RestrictAddressFamilies"].split()
    assert unit["Install"] == {"WantedBy": "default.target"}
    assert "@" not in render_systemd_unit("/x/mempald").replace("@EXEC", "")


def test_systemd_unit_python_module_fallback() -> None:
    svc = _parse_unit(render_systemd_unit(["/usr/bin/python3", "-m", "mempald"]))["Service"]
    assert svc["ExecStart"] == "/usr/bin/python3 -m mempald run"


def test_systemd_unit_quotes_and_escapes() -> None:
    svc = _parse_unit(
        render_systemd_unit(
            ["/opt/my apps/50%/mempald", "--flag=$HOME"],
            data_dir="/data/my memory",
            config_dir="/etc/100%",
        )
    )["Service"]
    # % is a specifier everywhere; $ is expanded only in arguments, not in the executable.
    assert svc["ExecStart"] == '"/opt/my apps/50%%/mempald" --flag=$$HOME run'
    assert svc["ReadWritePaths"] == '"-/data/my memory" -/etc/100%%'


@pytest.mark.parametrize("bad", ["mempald", "bin/mempald", "/opt/it's/mempald", "/opt/a\\b/mempald"])
def test_systemd_unit_rejects_unusable_executables(bad: str) -> None:
    with pytest.raises(ValueError, match="mempald"):
        render_systemd_unit(bad)


def test_systemd_unit_rejects_relative_dirs() -> None:
    with pytest.raises(ValueError, match="absolute"):
        render_systemd_unit("/x/mempald", data_dir="data")


# ---------------------------------------------------------------------------------------------
# systemd-analyze verify

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def _verify(unit: Path, *, user: bool, runtime_dir: Path) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    cmd = [SYSTEMD_ANALYZE, "verify", "--man=no", *(["--user"] if user else []), str(unit)]
    # --user needs a runtime directory; a container without a login session has none.
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir), "SYSTEMD_LOG_COLOR": "0"}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)


@pytest.fixture(scope="module")
def verify_modes(tmp_path_factory: pytest.TempPathFactory) -> list[bool]:
    """The verify modes (system, --user) that work here, checked on a trivial unit first so a
    broken environment skips rather than fails."""
    if SYSTEMD_ANALYZE is None:
        pytest.skip("systemd-analyze not installed (Debian/Ubuntu: apt-get install -y systemd)")
    root = tmp_path_factory.mktemp("sdverify")
    runtime = root / "run"
    runtime.mkdir(mode=0o700)
    control = root / "control.service"
    control.write_text(f"[Service]\nExecStart={_fake_exe(root / 'bin', 'true')}\n")
    modes: list[bool] = []
    failures: list[str] = []
    for user in (False, True):
        res = _verify(control, user=user, runtime_dir=runtime)
        if res.returncode == 0:
            modes.append(user)
        else:
            failures.append(f"{'--user' if user else 'system'}: {res.stderr.strip()[:300]}")
    if not modes:
        pytest.skip("systemd-analyze verify cannot run here even on a trivial unit: " + "; ".join(failures))
    return modes


@pytest.mark.parametrize("layout", ["script", "python-module", "odd-path"])
def test_systemd_analyze_verify(verify_modes: list[bool], tmp_path: Path, layout: str) -> None:
    if layout == "script":
        exec_path: list[str] = [str(_fake_exe(tmp_path / "bin"))]
    elif layout == "python-module":
        exec_path = [sys.executable, "-m", "mempald"]
    else:
        # A path that only survives if spaces, % and $ are escaped correctly: verify checks
        # that the executable exists.
        exec_path = [str(_fake_exe(tmp_path / "my apps" / "50%off" / "a$b"))]
    unit = tmp_path / UNIT_NAME
    unit.write_text(
        render_systemd_unit(exec_path, data_dir=str(tmp_path / "data dir"), config_dir=str(tmp_path / "cfg"))
    )
    for user in verify_modes:
        res = _verify(unit, user=user, runtime_dir=tmp_path)
        mode = "--user" if user else "system"
        assert res.returncode == 0, f"{mode}: {res.stderr}"
        # Unknown keys and bad values are only warnings (exit 0): none may mention our unit.
        complaints = [line for line in res.stderr.splitlines() if UNIT_NAME in line]
        assert complaints == [], f"{mode}: {complaints}"


def test_systemd_analyze_catches_a_broken_unit(verify_modes: list[bool], tmp_path: Path) -> None:
    # The check above is meaningful: a misspelt key in our unit would be reported.
    unit = tmp_path / UNIT_NAME
    unit.write_text(
        render_systemd_unit(str(_fake_exe(tmp_path / "bin"))).replace("WatchdogSec=", "WatchdogSecs=")
    )
    res = _verify(unit, user=verify_modes[0], runtime_dir=tmp_path)
    assert "WatchdogSecs" in res.stderr


# ---------------------------------------------------------------------------------------------
# launchd plist


def test_launchd_plist_keys() -> None:
    data = render_launchd_plist(
        "/Users/me/.local/bin/mempald",
        log_dir="/Users/me/Library/Logs/mempald",
        path_env="/Users/me/.local/bin:/usr/bin:/bin",
    )
    plist = plistlib.loads(data)
    assert plist["Label"] == LAUNCHD_LABEL
    assert plist["ProgramArguments"] == ["/Users/me/.local/bin/mempald", "run"]
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["ProcessType"] == "Background"
    assert plist["StandardOutPath"].startswith("/Users/me/Library/Logs/mempald/")
    assert plist["StandardErrorPath"].startswith("/Users/me/Library/Logs/mempald/")
    assert plist["EnvironmentVariables"]["PATH"] == "/Users/me/.local/bin:/usr/bin:/bin"
    assert all(isinstance(a, str) for a in plist["ProgramArguments"])


def test_launchd_plist_python_module_fallback() -> None:
    plist = plistlib.loads(
        render_launchd_plist(["/usr/bin/python3", "-m", "mempald"], log_dir="/l", path_env="/b")
    )
    assert plist["ProgramArguments"] == ["/usr/bin/python3", "-m", "mempald", "run"]


def test_launchd_plist_rejects_relative() -> None:
    with pytest.raises(ValueError, match="absolute"):
        render_launchd_plist("mempald", log_dir="/l", path_env="/b")


@pytest.mark.skipif(shutil.which("plutil") is None, reason="plutil is macOS-only")
def test_launchd_plist_plutil_lint(tmp_path: Path) -> None:
    f = tmp_path / "x.plist"
    f.write_bytes(render_launchd_plist("/usr/local/bin/mempald", log_dir="/tmp", path_env="/usr/bin"))
    subprocess.run(["plutil", "-lint", str(f)], check=True, capture_output=True)


def test_default_path_env_puts_the_executable_first() -> None:
    path = service.default_path_env(["/opt/venv/bin/mempald"]).split(":")
    assert path[0] == "/opt/venv/bin"
    assert "/usr/bin" in path
    assert len(path) == len(set(path))


# ---------------------------------------------------------------------------------------------
# Paths and the executable


def test_unit_path_honours_xdg(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert unit_path() == tmp_path / "xdg-config" / "systemd" / "user" / UNIT_NAME
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")
    assert unit_path() == home / ".config" / "systemd" / "user" / UNIT_NAME
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert unit_path() == home / ".config" / "systemd" / "user" / UNIT_NAME


def test_plist_path(home: Path) -> None:
    assert plist_path() == home / "Library" / "LaunchAgents" / "com.mempal.mempald.plist"


def test_resolve_executable_prefers_the_running_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = _fake_exe(tmp_path / "venv" / "bin")
    monkeypatch.setattr(sys, "argv", [str(exe), "install-service"])
    monkeypatch.setenv("PATH", str(_fake_exe(tmp_path / "elsewhere").parent))
    assert resolve_executable() == [str(exe)]


def test_resolve_executable_uses_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _fake_exe(tmp_path / "cellar" / "1.0" / "bin")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mempald").symlink_to(real)
    monkeypatch.setattr(sys, "argv", ["pytest"])
    monkeypatch.setenv("PATH", str(bindir))
    # Absolute, but the symlink is kept: resolving it would pin a versioned path an upgrade removes.
    assert resolve_executable() == [str(bindir / "mempald")]


def test_resolve_executable_falls_back_to_python_m(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["pytest"])
    monkeypatch.setenv("PATH", str(tmp_path))
    assert resolve_executable() == [os.path.abspath(sys.executable), "-m", "mempald"]


# ---------------------------------------------------------------------------------------------
# install / uninstall (Linux)

EXE = ["/opt/mempal/bin/mempald"]
RELOAD = ["systemctl", "--user", "daemon-reload"]
ENABLE = ["systemctl", "--user", "enable", "--now", UNIT_NAME]


def test_install_dry_run_prints_and_writes_nothing(home: Path, tmp_path: Path) -> None:
    out = io.StringIO()
    rc = install_service(dry_run=True, out=out, run=_never_run, platform="linux", exec_path=EXE)
    assert rc == 0
    text = out.getvalue()
    assert f"Would write {unit_path()}" in text
    assert render_systemd_unit(EXE, config_dir=str(tmp_path / "xdg-config" / "mempald")) in text
    assert "ExecStart=/opt/mempal/bin/mempald run" in text
    assert "Would run: systemctl --user daemon-reload" in text
    assert "Would run: systemctl --user enable --now mempald.service" in text
    assert _files_under(home, tmp_path / "xdg-config") == []


def test_install_writes_unit_and_starts(home: Path, tmp_path: Path) -> None:
    runner = FakeRunner()
    out = io.StringIO()
    assert install_service(dry_run=False, out=out, run=runner, platform="linux", exec_path=EXE) == 0
    target = tmp_path / "xdg-config" / "systemd" / "user" / UNIT_NAME
    assert target.is_file()
    svc = _parse_unit(target.read_text())["Service"]
    assert svc["ExecStart"] == "/opt/mempal/bin/mempald run"
    # Default data dir keeps the portable %h form; the non-default XDG config dir is spelled out.
    assert svc["ReadWritePaths"] == f"-%h/.local/share/mempald -{tmp_path}/xdg-config/mempald"
    assert runner.calls == [RELOAD, ENABLE]
    # ReadWritePaths must exist or the daemon could not create them under ProtectHome=read-only.
    assert (home / ".local" / "share" / "mempald").is_dir()
    assert (tmp_path / "xdg-config" / "mempald").is_dir()
    assert (home / ".local" / "share" / "mempald").stat().st_mode & 0o777 == 0o700
    text = out.getvalue()
    assert f"Wrote {target}" in text
    assert "Running: systemctl --user daemon-reload" in text
    assert "Running: systemctl --user enable --now mempald.service" in text


def test_output_goes_to_the_current_stdout(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert install_service(dry_run=True, run=_never_run, platform="linux", exec_path=EXE) == 0
    assert "Would run: systemctl --user daemon-reload" in capsys.readouterr().out


def test_install_honours_xdg_data_home(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    assert (
        install_service(dry_run=False, out=io.StringIO(), run=FakeRunner(), platform="linux", exec_path=EXE)
        == 0
    )
    svc = _parse_unit(unit_path().read_text())["Service"]
    assert svc["ReadWritePaths"].split()[0] == f"-{tmp_path}/xdg-data/mempald"
    assert (tmp_path / "xdg-data" / "mempald").is_dir()


def test_reinstall_restarts_only_when_the_unit_changed(home: Path) -> None:
    install_service(dry_run=False, out=io.StringIO(), run=FakeRunner(), platform="linux", exec_path=EXE)
    same = FakeRunner()
    install_service(dry_run=False, out=io.StringIO(), run=same, platform="linux", exec_path=EXE)
    assert same.calls == [RELOAD, ENABLE]
    changed = FakeRunner()
    new_exe = ["/srv/other/mempald"]
    install_service(dry_run=False, out=io.StringIO(), run=changed, platform="linux", exec_path=new_exe)
    assert changed.calls == [RELOAD, ["systemctl", "--user", "try-restart", UNIT_NAME], ENABLE]
    assert "ExecStart=/srv/other/mempald run" in unit_path().read_text()


def test_install_stops_at_a_failing_command(home: Path) -> None:
    runner = FakeRunner({("systemctl", "--user", "daemon-reload"): 1})
    out = io.StringIO()
    assert install_service(dry_run=False, out=out, run=runner, platform="linux", exec_path=EXE) == 1
    assert runner.calls == [RELOAD]
    assert "failed with exit 1" in out.getvalue()
    assert unit_path().is_file()  # written, so the user can start it by hand


def test_install_refuses_an_unstartable_path(home: Path) -> None:
    out = io.StringIO()
    rc = install_service(dry_run=False, out=out, run=_never_run, platform="linux", exec_path=["/o'k/mempald"])
    assert rc == 1
    assert "Cannot install the service" in out.getvalue()
    assert not unit_path().exists()


def test_uninstall_disables_and_removes(home: Path) -> None:
    install_service(dry_run=False, out=io.StringIO(), run=FakeRunner(), platform="linux", exec_path=EXE)
    runner = FakeRunner()
    out = io.StringIO()
    assert uninstall_service(dry_run=False, out=out, run=runner, platform="linux") == 0
    assert not unit_path().exists()
    assert runner.calls == [["systemctl", "--user", "disable", "--now", UNIT_NAME], RELOAD]
    assert f"Removed {unit_path()}" in out.getvalue()
    # The data is the user's: uninstalling the service never deletes it.
    assert (home / ".local" / "share" / "mempald").is_dir()


def test_uninstall_dry_run_keeps_the_file(home: Path) -> None:
    install_service(dry_run=False, out=io.StringIO(), run=FakeRunner(), platform="linux", exec_path=EXE)
    out = io.StringIO()
    assert uninstall_service(dry_run=True, out=out, run=_never_run, platform="linux") == 0
    assert unit_path().is_file()
    text = out.getvalue()
    assert "Would run: systemctl --user disable --now mempald.service" in text
    assert f"Would remove {unit_path()}" in text


def test_uninstall_when_not_installed(home: Path) -> None:
    out = io.StringIO()
    assert uninstall_service(dry_run=False, out=out, run=_never_run, platform="linux") == 0
    assert "Nothing to do" in out.getvalue()


def test_uninstall_reports_a_failing_command_but_removes_the_file(home: Path) -> None:
    install_service(dry_run=False, out=io.StringIO(), run=FakeRunner(), platform="linux", exec_path=EXE)
    runner = FakeRunner({("systemctl", "--user", "disable"): 1})
    assert uninstall_service(dry_run=False, out=io.StringIO(), run=runner, platform="linux") == 1
    assert not unit_path().exists()
    assert runner.calls[-1] == RELOAD


# ---------------------------------------------------------------------------------------------
# install / uninstall (macOS, exercised with the platform override)

MAC_EXE = ["/Users/me/.local/bin/mempald"]


def test_install_launchd(home: Path) -> None:
    runner = FakeRunner()
    out = io.StringIO()
    assert install_service(dry_run=False, out=out, run=runner, platform="darwin", exec_path=MAC_EXE) == 0
    target = home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    plist = plistlib.loads(target.read_bytes())
    assert plist["ProgramArguments"] == [*MAC_EXE, "run"]
    log_dir = home / "Library" / "Logs" / "mempald"
    assert log_dir.is_dir()  # launchd does not create it
    assert plist["StandardErrorPath"].startswith(f"{log_dir}/")
    assert plist["EnvironmentVariables"]["PATH"].startswith("/Users/me/.local/bin:")
    domain = f"gui/{os.getuid()}"
    assert runner.calls == [
        ["launchctl", "enable", f"{domain}/{LAUNCHD_LABEL}"],
        ["launchctl", "bootstrap", domain, str(target)],
    ]
    assert f"Running: launchctl bootstrap {domain} {target}" in out.getvalue()


def test_reinstall_launchd_boots_out_first(home: Path) -> None:
    install_service(dry_run=False, out=io.StringIO(), run=FakeRunner(), platform="darwin", exec_path=MAC_EXE)
    runner = FakeRunner({("launchctl", "bootout"): 3})  # not loaded: ignored
    assert (
        install_service(dry_run=False, out=io.StringIO(), run=runner, platform="darwin", exec_path=MAC_EXE)
        == 0
    )
    assert runner.calls[0] == ["launchctl", "bootout", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"]
    assert runner.calls[-1][:2] == ["launchctl", "bootstrap"]


def test_install_launchd_dry_run(home: Path) -> None:
    out = io.StringIO()
    assert install_service(dry_run=True, out=out, run=_never_run, platform="darwin", exec_path=MAC_EXE) == 0
    text = out.getvalue()
    assert "<key>Label</key>" in text
    assert f"Would run: launchctl bootstrap gui/{os.getuid()} {plist_path()}" in text
    assert _files_under(home) == []


def test_uninstall_launchd(home: Path) -> None:
    install_service(dry_run=False, out=io.StringIO(), run=FakeRunner(), platform="darwin", exec_path=MAC_EXE)
    runner = FakeRunner()
    assert uninstall_service(dry_run=False, out=io.StringIO(), run=runner, platform="darwin") == 0
    assert runner.calls == [["launchctl", "bootout", f"gui/{os.getuid()}/{LAUNCHD_LABEL}"]]
    assert not plist_path().exists()


def test_unsupported_platform(home: Path) -> None:
    out = io.StringIO()
    assert install_service(dry_run=False, out=out, run=_never_run, platform="win32", exec_path=EXE) == 1
    assert "not 'win32'" in out.getvalue()
    assert uninstall_service(dry_run=False, out=io.StringIO(), run=_never_run, platform="win32") == 1
