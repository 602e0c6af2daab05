"""Boundaries that keep the design honest: pure layers import nothing impure; clients import nothing heavy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PURE = ["mempald/normalize", "mempald/text", "mempald/features/aaak", "mempald/search/fusion.py",
        "mempald/search/speakers.py", "mempald/search/temporal.py"]
ALLOWED_INSIDE = ("mempald.normalize", "mempald.text", "mempald.features.aaak", "mempald.search.fusion",
                  "mempald.search.speakers", "mempald.search.temporal")
HEAVY = ("fastembed", "qdrant_edge", "qdrant_client", "numpy", "watchdog", "onnxruntime", "tokenizers", "sklearn")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def _files(spec: str) -> list[Path]:
    p = REPO / spec
    assert p.exists(), f"{spec} is listed as a boundary but does not exist (moved? update the list)"
    if p.is_dir():
        return sorted(p.rglob("*.py"))
    return [p]


def test_pure_layers_import_only_the_stdlib_and_each_other() -> None:
    stdlib = sys.stdlib_module_names
    bad = []
    for spec in PURE:
        for f in _files(spec):
            for mod in _imports(f):
                top = mod.split(".")[0]
                if top in stdlib or top == "__future__":
                    continue
                if mod.startswith(ALLOWED_INSIDE):
                    continue
                bad.append(f"{f.relative_to(REPO)} imports {mod}")
    assert not bad, "\n".join(bad)


def test_clients_never_import_heavy_modules() -> None:
    code = (
        "import sys, mempal.cli.main, mempal.connection, mempal.protocol, mempal.paths\n"
        "import mempal.hook\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


MODULE_LINES = 420  # "no module over about 400 lines"
GENERATED = {"client/mempal/api_methods.py"}  # written by `python -m mempal.methods.codegen`


def _package_files(*roots: str) -> list[Path]:
    return [f for root in roots for f in sorted((REPO / root).rglob("*.py"))]


def test_the_client_package_imports_nothing_of_the_daemon_but_its_settings() -> None:
    """The client never opens the store or loads the model: of ``mempald`` it may read only the config."""
    bad = [f"{f.relative_to(REPO)} imports {mod}" for f in _package_files("client/mempal") for mod in _imports(f)
           if mod.startswith("mempald") and mod not in {"mempald.config", "mempald"}]
    assert not bad, "\n".join(bad)


def test_the_store_package_imports_no_search_code() -> None:
    bad = [f"{f.relative_to(REPO)} imports {mod}" for f in _package_files("mempald/store") for mod in _imports(f)
           if mod.startswith(("mempald.search", "mempald.rpc", "mempald.runtime", "mempald.features"))]
    assert not bad, "\n".join(bad)


def test_handlers_get_services_not_the_daemon() -> None:
    """``mempald.rpc`` handlers are built over the services they need; none reaches for the composition root."""
    bad = [f"{f.relative_to(REPO)} imports {mod}" for f in _package_files("mempald/rpc") for mod in _imports(f)
           if mod.startswith(("mempald.runtime.root", "mempald.runtime.app"))]
    assert not bad, "\n".join(bad)


def test_domain_code_raises_domain_errors_not_wire_errors() -> None:
    """Only the rpc layer (and the server's own replies) speak wire codes; mapping happens in rpc/errors.py."""
    allowed = ("mempald/rpc/", "mempald/runtime/server.py")
    bad = [f"{f.relative_to(REPO)} imports {mod}" for f in _package_files("mempald") for mod in _imports(f)
           if mod == "mempal.protocol" and not str(f.relative_to(REPO)).startswith(allowed)]
    assert not bad, "\n".join(bad)


def test_no_module_is_much_over_400_lines() -> None:
    big = [f"{f.relative_to(REPO)}: {n} lines" for f in _package_files("mempald", "client/mempal")
           if str(f.relative_to(REPO)) not in GENERATED and (n := len(f.read_text().splitlines())) > MODULE_LINES]
    assert not big, "\n".join(big)


def test_unit_tests_mirror_the_packages() -> None:
    """tests/unit/<package>/ holds the tests of mempald.<package> (``client``: the mempal package); only tests
    of the whole (this file) and of top-level modules stay at tests/unit."""
    packages = {p.name for p in (REPO / "mempald").iterdir() if (p / "__init__.py").is_file()} | {"client"}
    folders = {p.name for p in (REPO / "tests" / "unit").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders <= packages, folders - packages
    for folder in folders:
        assert (REPO / "tests" / "unit" / folder / "__init__.py").is_file(), folder
    top = {p.stem.removeprefix("test_") for p in (REPO / "tests" / "unit").glob("test_*.py")}
    modules = {p.stem for p in (REPO / "mempald").glob("*.py")}
    assert top - {"architecture"} <= modules, top - modules


def test_the_wheel_installs_exactly_two_import_packages(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0 and "hatchling" in out.stderr:
        out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                              str(REPO)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    import zipfile

    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith((".dist-info", ".data"))}
    assert tops == {"mempal", "mempald"}, tops
    assert "mempal/hooks/settings.json" in names


def test_hooks_fail_open_beside_packages_named_client_and_hooks(tmp_path: Path) -> None:
    """Generic names on the path (another project's ``client`` or ``hooks`` package) cannot break the hook."""
    for name in ("client", "hooks"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise RuntimeError('not mempal')\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path), "MEMPAL_RUNTIME_DIR": str(tmp_path / "run")}
    out = subprocess.run([sys.executable, "-m", "mempal.hook", "prompt"], input=b'{"prompt": "hello there"}',
                         capture_output=True, env=env, cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and out.stdout == b"" and out.stderr == b""
