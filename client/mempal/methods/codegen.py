"""Write the typed Python API (``mempal/api_methods.py``) from the method table.

    python -m mempal.methods.codegen          # rewrite the file
    python -m mempal.methods.codegen --check  # exit 1 if it is out of date (a test runs this)

Every socket method becomes a method of ``mempal.Client`` with the same name: required parameters positional,
the others keyword-only and ``None`` by default (the daemon then applies the declared default, or its
settings). Parameters whose name is a Python keyword get a trailing underscore (``from_``).
"""

from __future__ import annotations

import keyword
import sys
import textwrap
from pathlib import Path

from mempal.methods import METHODS
from mempal.methods.spec import Method, Param

TARGET = Path(__file__).resolve().parents[1] / "api_methods.py"

HEADER = '''"""The typed methods of ``mempal.Client``, one per socket method. GENERATED from the method table by
``python -m mempal.methods.codegen``: do not edit; change ``mempal/methods/`` and regenerate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from mempal.api_base import ClientBase
from mempal.methods.drawer import {returns}


class ClientMethods(ClientBase):
'''


def py_name(p: Param) -> str:
    return p.name + "_" if keyword.iskeyword(p.name) else p.name


def py_type(p: Param) -> str:
    if p.kind in ("strs", "paths", "ids"):
        return "str | Sequence[str]"
    if p.kind == "enum":
        return "Literal[" + ", ".join(repr(c) for c in p.choices) + "]"
    if p.kind == "time":
        return "str | float"
    return {"int": "int", "float": "float", "bool": "bool"}.get(p.kind, "str")


def _wrapped(arg: str) -> str:
    """An argument line too long for one line: a ``Literal[...]`` with its choices on a line of their own."""
    if len(arg) + 1 <= 120 or "Literal[" not in arg:  # + the comma after it
        return arg
    head, _, rest = arg.partition("Literal[")
    choices, _, tail = rest.partition("]")
    indent = " " * (len(head) - len(head.lstrip()))
    return f"{head}Literal[\n{indent}    {choices},\n{indent}]{tail}"


def method_source(m: Method) -> str:
    required = [p for p in m.params if p.required and not p.fill]
    optional = [p for p in m.params if p not in required]
    args = ["self"] + [f"{py_name(p)}: {py_type(p)}" for p in required]
    if optional:
        args.append("*")
        args += [f"{py_name(p)}: {py_type(p)} | None = None" for p in optional]
    returns = m.returns or "dict[str, Any]"
    sig = f"    def {m.name}({', '.join(args)}) -> {returns}:"
    if len(sig) > 120:
        inner = ",\n".join(_wrapped(" " * 12 + a) for a in args)
        sig = f"    def {m.name}(\n{inner},\n    ) -> {returns}:"
    doc = [m.summary] + ([m.help] if m.help else [])
    lines = textwrap.wrap(" ".join(doc), 108)
    if m.params:
        lines.append("")
        for p in m.params:
            lines += textwrap.wrap(f"{py_name(p)}: {p.help}", 108, subsequent_indent="    ")
    body = "\n".join(("        " + ln) if ln else "" for ln in lines)
    pairs = [f'"{p.name}": {py_name(p)}' for p in m.params]
    invoke, close = (f'cast("{m.returns}", self._invoke(', "))") if m.returns else ("self._invoke(", ")")
    call = f'        return {invoke}"{m.name}", {{{", ".join(pairs)}}}{close}'
    if len(call) > 120:
        items = "".join(f"            {x},\n" for x in pairs)
        call = f'        return {invoke}"{m.name}", {{\n{items}        }}{close}'
    return f'{sig}\n        """{body.lstrip()}\n        """\n{call}\n'


def source() -> str:
    """The module: its header (importing the answers' types the table names) and one method per socket method."""
    returns = sorted({m.returns for m in METHODS.values() if m.returns})
    return HEADER.format(returns=", ".join(returns)) + "\n".join(method_source(m) for m in METHODS.values())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = source()
    if "--check" in args:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is out of date: run python -m mempal.methods.codegen", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
