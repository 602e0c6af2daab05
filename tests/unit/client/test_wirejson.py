"""mempal.wirejson gives what json gives: the same text for every value, the same value for every text, the same
errors; and the hook's import path stays free of the modules it exists to avoid."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mempal import wirejson
from tests.conftest import REPO

scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10**40), max_value=10**40)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text() | st.text(alphabet=st.characters()))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=30)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=400, deadline=None)
@given(values, st.booleans())
def test_dumps_is_json_dumps_and_loads_reads_it_back(value: Any, ascii_only: bool) -> None:
    text = wirejson.dumps(value, ensure_ascii=ascii_only)
    assert text == json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))
    assert _same(wirejson.loads(text), json.loads(text))
    spaced = json.dumps(value, ensure_ascii=ascii_only, indent=2)
    assert _same(wirejson.loads(f" \n\t{spaced}\r\n "), json.loads(spaced))


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=40) | st.sampled_from(['{"a": 1} x', "[1,", '"\\ud800"', "NaN", "-Infinity", "1e999",
                                                 '{"a" 1}', "\ufeff{}", "", "  ", "[1] [2]", '"\x01"', "tru"]))
def test_loads_accepts_and_refuses_what_json_loads_does(text: str) -> None:
    try:
        expected: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        with pytest.raises(json.JSONDecodeError) as got:
            wirejson.loads(text)
        assert (got.value.msg, got.value.pos) == (exc.msg, exc.pos)
        return
    assert _same(wirejson.loads(text), expected)


def test_the_errors_json_raises_for_what_it_cannot_hold() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        wirejson.dumps({"a": {1, 2}})
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        wirejson.dumps(loop)
    assert wirejson.dumps([1]) == "[1]"  # a failed call leaves nothing behind for the next one
    with pytest.raises(TypeError):
        wirejson.loads(b"{}")  # type: ignore[arg-type]
    with pytest.raises(RecursionError):
        wirejson.loads("[" * 100_000)


HEAVY = ("json", "re", "enum", "socket", "signal", "pathlib", "typing", "contextlib", "collections", "selectors")


def test_the_hook_imports_none_of_the_modules_that_would_slow_its_start() -> None:
    code = f"import sys, mempal.hook; print(sorted(set({HEAVY!r}) & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60,
                         check=True)
    assert out.stdout.strip() == "[]", out.stdout
