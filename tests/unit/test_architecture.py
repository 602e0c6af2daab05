"""Boundaries that keep the design honest: the packages of mempald form layers (imports point down, no package
cycles); pure layers import nothing impure; clients import nothing heavy."""

from __future__ import annotations

import ast
import graphlib
import itertools
import subprocess
import sys
from collections import defaultdict
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


# The layers of ``mempald``, bottom to top: a module imports only from its own layer or the ones below it. The
# top-level modules are the base (``mempald`` is the package's ``__init__``), ``main`` (the entry point) the top.
LAYERS = (
    "mempald", "config_values", "config", "errors", "logs", "lock",  # the base: settings, errors, logging, the lock
    "normalize", "text",  # pure: transcripts to exchanges, text processing
    # what a source is: its roots, the catalog, paths, reading a user's file safely and incrementally, ignore and
    # exclusion rules (the store reads its API key file through it)
    "sources",
    "state", "store", "embed", "search",  # the state database, the store, the model, ranking
    "archive",  # the byte-exact transcript archive (kept as the ingest reads, restored for resume)
    "ingest",  # from a file to drawers
    "intake",  # what drives ingest: watching, events, the reconcile scan, source administration, the ingest loops
    "features",  # the services the methods call
    "sync",  # one memory across machines: segments in a shared folder, written and imported
    "ops",  # offline commands: migrate, doctor, repair, restore, pack
    "rpc",  # the socket methods' handlers
    "runtime",  # the composition root, the daemon's lifetime, the socket server, the service files
    "benchmarks",  # offline benchmarks through the composition root
    "main", "__main__",  # the entry point
)


def _mempald_imports(path: Path, package: str) -> list[tuple[int, str]]:
    """Every import of ``mempald`` in ``path`` (a module of ``package``) with its line: at module level, inside
    functions and under ``TYPE_CHECKING`` alike (a type is a dependency too). ``from mempald.store import faults``
    is ``mempald.store.faults``; a relative import is resolved against ``package``."""
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = (node.module or "") if not node.level else ".".join(
                [*parts[:len(parts) - node.level + 1], *([node.module] if node.module else [])])
            for a in node.names:
                sub = REPO / Path(*f"{base}.{a.name}".split("."))
                out.append((node.lineno, f"{base}.{a.name}" if sub.is_dir() or sub.with_suffix(".py").is_file()
                            else base))
    return [(line, mod) for line, mod in dict.fromkeys(out) if mod == "mempald" or mod.startswith("mempald.")]


def _module_of(path: Path) -> tuple[str, str]:
    """The dotted name of a file under the repository and the package it is in."""
    parts = path.relative_to(REPO).with_suffix("").parts
    if parts[-1] == "__init__":
        name = ".".join(parts[:-1])
        return name, name
    return ".".join(parts), ".".join(parts[:-1])


def _layer(module: str) -> str:
    """The layer of a ``mempald`` module: its package, or the top-level module it is."""
    parts = module.split(".")
    if len(parts) > 1 and ((REPO / "mempald" / parts[1]).is_dir() or (REPO / "mempald" / parts[1]).with_suffix(
            ".py").is_file()):
        return parts[1]
    return "mempald"  # the package itself, or a name its __init__ defines (``from mempald import __version__``)


def _package(module: str) -> str:
    """The package a ``mempald`` module is in (a top-level module counts as its own), for the cycle check."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        if (REPO / Path(*parts[:end])).is_dir():
            return ".".join(parts[:end])
    return _layer(module) if _layer(module) == "mempald" else f"mempald.{_layer(module)}"


def test_every_package_and_top_level_module_has_a_layer() -> None:
    present = {_layer(_module_of(f)[0]) for f in _package_files("mempald")}
    assert present == set(LAYERS), f"not in LAYERS: {sorted(present - set(LAYERS))}; " \
                                   f"listed but gone: {sorted(set(LAYERS) - present)}"


def test_imports_only_point_down_the_layers() -> None:
    """No upward import anywhere in ``mempald``, a function-level or ``TYPE_CHECKING`` one included."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    bad = []
    for f in _package_files("mempald"):
        module, package = _module_of(f)
        here = _layer(module)
        for line, mod in _mempald_imports(f, package):
            there = _layer(mod)
            if rank.get(there, -1) > rank.get(here, len(LAYERS)):
                bad.append(f"{f.relative_to(REPO)}:{line} imports {mod} ({there} is above {here})")
    assert not bad, "\n".join(bad)


def test_no_package_cycles() -> None:
    """Between the packages of ``mempald`` (subpackages such as ``features.pack`` counted on their own) the imports
    form no cycle; the message names the imports that close it."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for f in _package_files("mempald"):
        module, package = _module_of(f)
        here = _package(module)
        for line, mod in _mempald_imports(f, package):
            there = _package(mod)
            if there != here:
                edges[here, there].append(f"{f.relative_to(REPO)}:{line} imports {mod}")
    graph: dict[str, set[str]] = defaultdict(set)
    for here, there in edges:
        graph[here].add(there)
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        cycle: list[str] = exc.args[1]
        found = [i for a, b in itertools.pairwise(cycle) for i in edges.get((b, a), [])]
        raise AssertionError(f"package cycle {' <- '.join(cycle)}:\n" + "\n".join(found)) from None


def test_the_layer_check_counts_imports_inside_functions_and_under_type_checking(tmp_path: Path) -> None:
    """The walk that finds upward imports sees the ones a module-level scan would miss."""
    sample = tmp_path / "sample.py"
    sample.write_text("\n".join([
        "from typing import TYPE_CHECKING",
        "if TYPE_CHECKING:",
        "    from mempald.runtime.root import Daemon",
        "def f() -> None:",
        "    from mempald import logs",
        "    import mempald.rpc.core",
        "def g() -> None:",
        "    from . import queues",
        "    from ..store import faults",
        "",
    ]))
    found = {mod for _, mod in _mempald_imports(sample, "mempald.ingest")}
    assert found == {"mempald.runtime.root", "mempald.logs", "mempald.rpc.core", "mempald.ingest.queues",
                     "mempald.store.faults"}
    assert [_layer(m) for m in sorted(found)] == ["ingest", "logs", "rpc", "runtime", "store"]


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


# The cowork inbox is a feature between two named agents (Claude Code and Codex peek at each other's live session):
# it reads their transcripts by name on purpose. Nothing else outside the normalizers may name a format.
NAMES_A_FORMAT_ON_PURPOSE = {"mempald/features/cowork.py"}


def test_no_format_is_named_outside_the_normalizers_and_the_registry() -> None:
    """The intake asks a format what it reads (``mempald.normalize.format``): a format's name as a string, or an
    import of a format's own module, anywhere else is a special case by name. (The fallback ``text`` format is
    not looked for: ``"text"`` is also the drawer's field.)"""
    from mempald.normalize import registry

    names = {f.name for f in registry.FORMATS if f is not registry.TEXT}
    modules = {f.parse.__module__ for f in registry.FORMATS}
    found: list[str] = []
    for path in sorted((REPO / "mempald").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("mempald/normalize/") or rel in NAMES_A_FORMAT_ON_PURPOSE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{rel}:{node.lineno} names {node.value!r}")
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported = {f"{node.module}.{a.name}" for a in node.names} | {node.module}
                found += [f"{rel}:{node.lineno} imports {m}" for m in sorted(imported & modules)]
            elif isinstance(node, ast.Import):
                found += [f"{rel}:{node.lineno} imports {a.name}" for a in node.names if a.name in modules]
    assert not found, "\n".join(found)
