"""Boundaries that keep the design honest: pure layers import nothing impure; clients import nothing heavy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PURE = ["mempald/normalize", "mempald/chunking.py", "mempald/classify.py", "mempald/aaak.py", "mempald/redact.py",
        "mempald/codechunk.py", "mempald/fusion.py"]
ALLOWED_INSIDE = ("mempald.normalize", "mempald.chunking", "mempald.classify", "mempald.aaak", "mempald.redact",
                  "mempald.codechunk", "mempald.fusion")
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
    if p.is_dir():
        return sorted(p.rglob("*.py"))
    return [p] if p.exists() else []


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
        "import sys, client.cli, client.connection, client.protocol, client.paths\n"
        "import hooks.run\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
