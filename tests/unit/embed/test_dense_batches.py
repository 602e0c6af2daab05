"""How the dense pass groups texts for the model: by length, within a count and a padded-token budget."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mempald.embed.embedder import MAX_SEQ_LEN, length_batches


@given(st.lists(st.integers(min_value=0, max_value=400), max_size=200), st.integers(1, 40),
       st.integers(1, 8 * MAX_SEQ_LEN))
def test_every_text_once_within_count_and_budget(lengths: list[int], max_count: int, budget: int) -> None:
    batches = length_batches(lengths, max_count, budget)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(b for b in batches)
    for b in batches:
        assert len(b) <= max_count
        longest = min(max(lengths[i] for i in b) + 2, MAX_SEQ_LEN)
        assert len(b) == 1 or len(b) * longest <= budget
    padded = [min(lengths[i] + 2, MAX_SEQ_LEN) for i in flat]
    assert padded == sorted(padded)


def test_short_texts_share_a_call_long_ones_do_not() -> None:
    lengths = [254] * 8 + [20] * 40 + [100] * 10
    batches = length_batches(lengths, 32, 8 * MAX_SEQ_LEN)
    sizes = [len(b) for b in batches]
    assert sizes == [32, 18, 8]  # 40 short: 32, then 8 more with the 10 of 102 tokens (18 x 102 <= 2,048); 8 x 256
    assert all(lengths[i] == 254 for i in batches[-1])
    assert batches[0] == list(range(8, 40))  # equal lengths keep their order
