from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mempal.protocol import (
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


# --- fuzzing: request-shaped objects, replies, lines with junk around them ---------------------------------

ids = st.none() | st.integers() | st.text(max_size=8) | st.booleans() | st.floats(allow_nan=False) | json_values
request_shaped = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0, None]) | json_values,
        "id": ids,
        "method": st.text(max_size=12) | json_values,
        "params": st.dictionaries(st.text(max_size=8), json_values, max_size=4) | json_values,
    },
)


@given(request_shaped)
def test_request_shaped_objects_decode_to_a_typed_result(obj: dict[str, object]) -> None:
    out = decode_request(json.dumps(obj).encode())
    if isinstance(out, Request):
        assert isinstance(out.method, str) and out.method
        assert isinstance(out.params, dict)
        assert out.id is None or (isinstance(out.id, (int, str)) and not isinstance(out.id, bool))
    else:
        assert isinstance(out, ErrorReply)
        assert out.code in (PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS)
        json.loads(out.encode())  # the error reply itself is a valid line


@given(st.binary(max_size=64), request_shaped, st.binary(max_size=64))
def test_junk_around_a_request_never_raises(head: bytes, obj: dict[str, object], tail: bytes) -> None:
    assert isinstance(decode_request(head + json.dumps(obj).encode() + tail), (Request, ErrorReply))


reply_shaped = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values,
        "id": ids,
        "result": json_values,
        "error": st.fixed_dictionaries({}, optional={"code": json_values | st.floats(), "message": json_values,
                                                     "data": json_values}) | json_values,
    },
)


@given(reply_shaped)
def test_reply_decoder_raises_only_value_error(obj: dict[str, object]) -> None:
    with contextlib.suppress(ValueError):
        decode_response(json.dumps(obj).encode())


@given(st.binary(max_size=512))
def test_reply_decoder_on_arbitrary_bytes_raises_only_value_error(data: bytes) -> None:
    with contextlib.suppress(ValueError):
        decode_response(data)


def test_reply_decoder_typed_error_on_pathological_lines() -> None:
    for line in (b"[" * 100_000, b'{"jsonrpc":"2.0","id":1,"error":{"code":null}}',
                 b'{"jsonrpc":"2.0","id":1,"error":{"code":1e999}}'):
        with pytest.raises(ValueError, match="not a JSON-RPC"):
            decode_response(line)
