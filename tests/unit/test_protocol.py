from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from client.protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorReply,
    Request,
    decode_request,
    decode_response,
    encode_error,
    encode_request,
    encode_result,
)


def test_round_trip_request() -> None:
    line = encode_request(7, "search", {"query": "x"})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    req = decode_request(line)
    assert req == Request(7, "search", {"query": "x"})


def test_notification_has_no_id() -> None:
    req = decode_request(encode_request(None, "ping"))
    assert isinstance(req, Request) and req.is_notification


def test_errors_are_typed() -> None:
    assert decode_request(b"{nope").code == PARSE_ERROR  # type: ignore[union-attr]
    assert decode_request(b"\xff\xfe").code == PARSE_ERROR  # type: ignore[union-attr]
    assert decode_request(b"[1,2]").code == INVALID_REQUEST  # type: ignore[union-attr]
    bad_version = decode_request(b'{"jsonrpc":"1.0","id":1,"method":"x"}')
    assert isinstance(bad_version, ErrorReply) and bad_version.id == 1 and bad_version.code == INVALID_REQUEST
    bad_params = decode_request(b'{"jsonrpc":"2.0","id":2,"method":"x","params":[1]}')
    assert isinstance(bad_params, ErrorReply) and bad_params.code == INVALID_PARAMS
    bad_id = decode_request(b'{"jsonrpc":"2.0","id":{"a":1},"method":"x"}')
    assert isinstance(bad_id, ErrorReply) and bad_id.code == INVALID_REQUEST


def test_deep_nesting_is_a_parse_error_not_a_crash() -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    assert isinstance(decode_request(line), (ErrorReply, Request))


def test_responses() -> None:
    ok = decode_response(encode_result(3, {"a": 1}))
    assert ok.result == {"a": 1} and ok.error is None
    err = decode_response(encode_error(4, -32001, "missing", {"p": 1}))
    assert err.error is not None and err.error.code == -32001 and err.error.data == {"p": 1}


@given(st.binary(max_size=512))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    assert isinstance(decode_request(data), (Request, ErrorReply))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_arbitrary_json_never_raises(value: object) -> None:
    assert isinstance(decode_request(json.dumps(value).encode()), (Request, ErrorReply))
