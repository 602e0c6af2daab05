"""The BM25 tokenizers (``mempald.embed.sparse``) and the store's ``set_sparse`` on every backend."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mempald.embed import sparse
from mempald.embed.sparse import DEFAULT_TOKENIZER, ENGLISH, TOKENIZERS, Bm25Encoder, pretokenize
from mempald.store.base import Filters
from tests.unit.store.test_store_contract import BACKENDS, corpus, make_store

ZH = "迁移订单表的时候出现了死锁问题，需要重新设计索引"
JA = "昨日、東京でデータベースの移行作業を行いました"
CODE = "call parseConfigFile with user_id from src/store/edge.py on port 8080 in 2023"


def matches(enc: Bm25Encoder, query: str, doc: str) -> bool:
    """Every token of the query is in the document (what a keyword search needs to find it)."""
    q = set(enc.query(query).indices)
    return bool(q) and q <= set(enc.document(doc).indices)


def test_the_default_finds_cjk_keywords_identifier_parts_and_numbers() -> None:
    enc = Bm25Encoder()
    assert enc.tokenizer == DEFAULT_TOKENIZER
    for query, doc in (("死锁", ZH), ("索引", ZH), ("データベース", JA), ("移行", JA), ("東京", JA),
                       ("parse config", CODE), ("config file", CODE), ("parseConfigFile", CODE), ("user", CODE),
                       ("user_id", CODE), ("edge.py", CODE), ("store", CODE), ("8080", CODE), ("2023", CODE)):
        assert matches(enc, query, doc), query
    assert not matches(enc, "死锁", JA) and not matches(enc, "移行", ZH)


def test_what_each_of_qdrants_tokenizers_misses() -> None:
    english, multi, code = (Bm25Encoder(t) for t in (ENGLISH, "multilingual", "code"))
    assert not matches(english, "死锁", ZH) and not matches(english, "parse config", CODE)
    assert matches(multi, "死锁", ZH) and not matches(multi, "2023", CODE) and not matches(multi, "parse config", CODE)
    assert matches(code, "parse config", CODE) and not matches(code, "死锁", ZH)


def test_english_text_encodes_as_the_english_tokenizer_does() -> None:
    text = "We decided to run the migrations before every deploy; 3 workers crashed on 12 May 2024."
    assert pretokenize(text) == text
    assert Bm25Encoder().document(text) == Bm25Encoder(ENGLISH).document(text)


def test_pretokenize_spells_cjk_as_bigrams_and_adds_identifier_parts() -> None:
    assert pretokenize("死锁问题").split() == ["死锁", "锁问", "问题"]
    assert pretokenize("用 a 字").split() == ["用", "a", "字"]
    assert pretokenize("getHTTPServer ok").splitlines()[-1] == "get HTTP Server"


def test_unknown_tokenizer_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown keyword tokenizer"):
        Bm25Encoder("klingon")
    assert DEFAULT_TOKENIZER in TOKENIZERS


@pytest.mark.parametrize("kind", BACKENDS)
def test_set_sparse_replaces_keyword_vectors_only(kind: str, tmp_path: Path) -> None:
    store = make_store(kind, tmp_path)
    try:
        pts = corpus()
        store.upsert(pts)
        target = pts[0]
        dense_before = store.retrieve([target.id], with_vectors=True)[0].dense
        new = Bm25Encoder().document(ZH)
        store.set_sparse([(target.id, new)])
        got = store.retrieve([p.id for p in pts], with_vectors=True)
        by_id = {g.id: g for g in got}
        replaced = by_id[target.id].sparse
        assert replaced is not None and set(replaced.indices) == set(new.indices)
        assert by_id[target.id].payload == target.payload
        assert by_id[target.id].dense == dense_before and dense_before is not None
        assert set(by_id[pts[1].id].sparse.indices) == set(pts[1].sparse.indices)  # type: ignore[union-attr]
        hits = store.query(None, Bm25Encoder().query("死锁"), Filters(), 3)[1]
        assert [h.id for h in hits] == [target.id]
        store.set_sparse([])
    finally:
        store.close()


def test_mcp_instructions_tell_agents_to_search_in_english() -> None:
    from mempal.mcp_tools import instructions

    for read_only in (False, True):
        text = instructions(read_only)
        assert "SEARCH IN ENGLISH" in text and "Translate a question asked in another language" in text


def test_migrate_refuses_a_target_whose_keywords_another_tokenizer_made(tmp_path: Path) -> None:
    from mempald.ops.migrate import migrate
    from mempald.store.base import StoreError
    from mempald.store.server import ServerStore

    src = ServerStore(":memory:", 8)
    dst = ServerStore(":memory:", 8, collection="other")
    try:
        src.upsert(corpus())
        src.set_meta({"model": "m", "dim": 8, "tokenizer": DEFAULT_TOKENIZER})
        dst.set_meta({"model": "m", "dim": 8, "tokenizer": ENGLISH})
        with pytest.raises(StoreError, match="tokenizer 'english'"):
            migrate(src, dst)
        assert dst.count(Filters(include_deleted=True)) == 0
    finally:
        src.close()
        dst.close()


def _parts_by_word(text: str) -> list[str]:
    """identifier_parts by its definition: every word (a letter, then letters and digits) tested."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9]*", text)
    return [" ".join(sparse._PART.findall(w)) for w in words if sparse._CAMEL.search(w)]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="aZbY09_ .-/\nxQé死", max_size=80))
@example("9Abc getHTTPServer 12fooBar x9Y parseConfigFile parseConfigFile snake_caseWord A1B2c3")
def test_identifier_parts_are_those_of_every_camel_word(text: str) -> None:
    assert sparse.identifier_parts(text) == _parts_by_word(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from([*"aZbY09_ .-/\nxQé死ÉßİΣσ\u00a0", "\ud83d"]), max_size=40))
@example("ÉaÉ éA aÉ")
def test_has_camel_answers_as_the_regex_does(text: str) -> None:
    """The byte-class test stands in for a regex search: the same answer on every text, non-ASCII letters
    (which the regex does not count as letters) and a lone surrogate among them."""
    assert sparse.has_camel(text) == (sparse._CAMEL.search(text) is not None)
