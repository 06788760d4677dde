from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpd.protocol.errors import ErrorCode, RpcError
from acpd.protocol.jsonrpc import (
    Ignored,
    Invalid,
    Message,
    Notification,
    Request,
    Response,
    error,
    notification,
    parse_line,
    parse_object,
    request,
    result,
    sniff_id,
    valid_id,
)


def invalid(message: Message) -> tuple[int, Any]:
    assert isinstance(message, Invalid), message
    return message.error.code, message.id


# --- parse errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b"{",
        b"not json",
        b'{"jsonrpc":"2.0","id":1,}',
        b"NaN",
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"v":NaN}}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"v":Infinity}}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"v":-Infinity}}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":[1e400]}',
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":[' + b"9" * 400 + b"]}",
        b"[" * 5000 + b"]" * 5000,
        b'{"a":' * 2000 + b"1" + b"}" * 2000,
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"x"}',  # a BOM
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"t":"\\ud800"}}',  # lone surrogate
        b'{"jsonrpc":"2.0","id":1,"method":"x"} trailing',
        b"\x00",
    ],
)
def test_unparseable_lines_are_parse_errors_with_a_null_id(line: bytes) -> None:
    message = parse_line(line)
    assert invalid(message) == (ErrorCode.PARSE_ERROR, None)
    assert isinstance(message, Invalid) and len(message.error.message) <= 200


def test_invalid_utf8_in_a_string_keeps_the_request_id() -> None:
    line = b'{"jsonrpc":"2.0","id":42,"method":"session/prompt","params":{"t":"\xff\xfe"}}'
    assert invalid(parse_line(line)) == (ErrorCode.PARSE_ERROR, 42)
    line = b'{"jsonrpc":"2.0","id":"s-1","method":"x","params":["\xc3"]}'
    assert invalid(parse_line(line)) == (ErrorCode.PARSE_ERROR, "s-1")


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","method":"x","params":["\xff"]}',  # a notification: no id
        b'{"jsonrpc":"2.0","id":true,"method":"x","params":["\xff"]}',
        b'["\xff", {"id": 1}]',
        b'{"id":1,"method":"x" \xff',  # invalid UTF-8 *and* broken JSON
    ],
)
def test_invalid_utf8_without_a_readable_id_answers_null(line: bytes) -> None:
    assert invalid(parse_line(line)) == (ErrorCode.PARSE_ERROR, None)


def test_a_broken_line_that_happens_to_mention_an_id_is_still_null() -> None:
    assert invalid(parse_line(b'{"jsonrpc":"2.0","id":5,"method":')) == (
        ErrorCode.PARSE_ERROR,
        None,
    )


# --- invalid requests ------------------------------------------------------------------------


@pytest.mark.parametrize("value", [[], [{"jsonrpc": "2.0", "id": 1, "method": "x"}], [1, 2]])
def test_batches_are_refused(value: Any) -> None:
    code, msg_id = invalid(parse_object(value))
    assert (code, msg_id) == (ErrorCode.INVALID_REQUEST, None)
    message = parse_line(orjson.dumps(value))
    assert isinstance(message, Invalid) and "batch" in message.error.message


@pytest.mark.parametrize("value", [1, -1.5, "x", None, True, False])
def test_non_objects_are_invalid_requests(value: Any) -> None:
    assert invalid(parse_line(orjson.dumps(value))) == (ErrorCode.INVALID_REQUEST, None)


@pytest.mark.parametrize("version", [None, "1.0", "2", 2.0, 2, ["2.0"], {"v": "2.0"}, "2.0 "])
def test_wrong_or_missing_jsonrpc_keeps_a_readable_id(version: Any) -> None:
    obj: dict[str, Any] = {"id": 9, "method": "initialize"}
    if version is not None:
        obj["jsonrpc"] = version
    assert invalid(parse_object(obj)) == (ErrorCode.INVALID_REQUEST, 9)
    obj["id"] = [9]
    assert invalid(parse_object(obj)) == (ErrorCode.INVALID_REQUEST, None)


@pytest.mark.parametrize("bad_id", [True, False, 1.0, 1.5, [1], {"id": 1}])
def test_ids_that_are_not_integers_or_strings_are_refused_with_a_null_id(bad_id: Any) -> None:
    obj = {"jsonrpc": "2.0", "id": bad_id, "method": "session/new", "params": {}}
    code, msg_id = invalid(parse_object(obj))
    assert (code, msg_id) == (ErrorCode.INVALID_REQUEST, None)


def test_a_request_with_a_null_id_is_refused_with_a_null_id() -> None:
    obj = {"jsonrpc": "2.0", "id": None, "method": "session/new"}
    assert invalid(parse_object(obj)) == (ErrorCode.INVALID_REQUEST, None)


@pytest.mark.parametrize("method", [1, None, True, ["x"], {"m": 1}])
def test_method_must_be_a_string(method: Any) -> None:
    obj = {"jsonrpc": "2.0", "id": 3, "method": method}
    assert invalid(parse_object(obj)) == (ErrorCode.INVALID_REQUEST, 3)


def test_a_message_with_neither_method_nor_result_is_invalid() -> None:
    assert invalid(parse_object({"jsonrpc": "2.0", "id": 4})) == (ErrorCode.INVALID_REQUEST, 4)
    assert invalid(parse_object({"jsonrpc": "2.0"})) == (ErrorCode.INVALID_REQUEST, None)
    assert invalid(parse_object({})) == (ErrorCode.INVALID_REQUEST, None)


@pytest.mark.parametrize("params", [1, "x", True, 2.5])
def test_params_must_be_an_object_or_an_array(params: Any) -> None:
    obj = {"jsonrpc": "2.0", "id": "a", "method": "m", "params": params}
    assert invalid(parse_object(obj)) == (ErrorCode.INVALID_REQUEST, "a")
    del obj["id"]
    assert invalid(parse_object(obj)) == (ErrorCode.INVALID_REQUEST, None)


# --- requests and notifications --------------------------------------------------------------


@pytest.mark.parametrize("msg_id", [0, -1, 2**63 - 1, 2**64 - 1, "", "abc", "日本"])
def test_requests_with_integer_or_string_ids(msg_id: Any) -> None:
    line = orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "m", "params": {"a": 1}})
    assert parse_line(line) == Request(msg_id, "m", {"a": 1})


def test_an_integer_too_big_for_64_bits_is_a_float_to_orjson_so_not_an_id() -> None:
    line = b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}'
    assert invalid(parse_line(line)) == (ErrorCode.INVALID_REQUEST, None)


@pytest.mark.parametrize("params", [{"a": 1}, [1, 2], [], {}, None])
def test_params_object_array_or_absent(params: Any) -> None:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "m"}
    if params is not None:
        obj["params"] = params
    assert parse_object(obj) == Request(1, "m", params)
    del obj["id"]
    assert parse_object(obj) == Notification("m", params)


def test_null_params_count_as_absent() -> None:
    assert parse_object({"jsonrpc": "2.0", "id": 1, "method": "m", "params": None}) == Request(
        1, "m", None
    )


def test_a_notification_has_no_id_member_at_all() -> None:
    assert parse_object({"jsonrpc": "2.0", "method": "session/cancel"}) == Notification(
        "session/cancel", None
    )


def test_a_request_that_also_carries_result_is_still_a_request() -> None:
    obj = {"jsonrpc": "2.0", "id": 1, "method": "m", "result": 1}
    assert parse_object(obj) == Request(1, "m", None)


def test_duplicate_keys_take_the_last_value() -> None:
    assert parse_line(b'{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}') == Request(2, "m", None)


# --- responses -------------------------------------------------------------------------------


def test_responses_with_a_result() -> None:
    assert parse_object({"jsonrpc": "2.0", "id": 5, "result": {"x": 1}}) == Response(5, {"x": 1})
    assert parse_object({"jsonrpc": "2.0", "id": "s", "result": None}) == Response("s", None)


def test_responses_with_an_error() -> None:
    message = parse_object(
        {"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "nope", "data": [1]}}
    )
    assert isinstance(message, Response) and message.error is not None
    assert (message.id, message.error.code, message.error.message, message.error.data) == (
        5,
        -32601,
        "nope",
        [1],
    )


def test_a_response_with_a_null_error_is_a_result() -> None:
    assert parse_object({"jsonrpc": "2.0", "id": 5, "error": None}) == Response(5, None)


@pytest.mark.parametrize(
    "error_obj", ["boom", 1, None, [], {"code": "x"}, {"code": True, "message": 5}, {}]
)
def test_malformed_error_objects_still_make_an_error_response(error_obj: Any) -> None:
    message = parse_object({"jsonrpc": "2.0", "id": 5, "error": error_obj, "result": 1})
    assert isinstance(message, Response)
    if error_obj is None:
        assert message.error is None and message.result == 1
    else:
        assert message.error is not None and message.error.code == ErrorCode.INTERNAL_ERROR


@pytest.mark.parametrize(
    "obj",
    [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}},
        {"jsonrpc": "2.0", "result": 1},
        {"jsonrpc": "2.0", "error": {"code": 1, "message": "m"}},
        {"jsonrpc": "2.0", "id": True, "result": 1},
        {"jsonrpc": "2.0", "id": 1.5, "result": 1},
        {"jsonrpc": "2.0", "id": [1], "result": 1},
        {"jsonrpc": "1.0", "id": 1, "result": 1},
        {"id": 1, "error": {"code": 1, "message": "m"}},
    ],
)
def test_malformed_responses_are_ignored_never_answered(obj: dict[str, Any]) -> None:
    assert isinstance(parse_object(obj), Ignored)


# --- helpers ---------------------------------------------------------------------------------


def test_builders() -> None:
    assert request(1, "m", {"a": 1}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "m",
        "params": {"a": 1},
    }
    assert notification("n", []) == {"jsonrpc": "2.0", "method": "n", "params": []}
    assert result("x", None) == {"jsonrpc": "2.0", "id": "x", "result": None}
    err = RpcError(-32602, "bad", {"loc": ["cwd"]})
    assert error(None, err) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32602, "message": "bad", "data": {"loc": ["cwd"]}},
    }
    assert error(3, RpcError(-32601, "m"))["error"] == {"code": -32601, "message": "m"}


def test_valid_id() -> None:
    assert [valid_id(v) for v in (0, "", -5, "x")] == [True] * 4
    invalid_ids: list[Any] = [True, False, None, 1.0, [], {}]
    assert [valid_id(v) for v in invalid_ids] == [False] * 6


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":17,"method":"session/prompt","params":{"x":"', 17),
        (b'{"jsonrpc":"2.0","id" : -3,', -3),
        (b'{"id":"abc","method":"m"', "abc"),
        (b'{"id":"a\\"b","method":"m"', 'a"b'),
        (b'{"id":"\\u00e9"', "é"),
        (b'{"method":"m","params":{"text":"xxxxxxxx', None),
        (b'{"id":null,"method":"m"', None),
        (b'{"id":true,"method":"m"', None),
        (b'{"id":1.5,"method":"m"', None),
        (b'{"id":1e3,"method":"m"', None),
        (b'{"jsonrpc":"2.0","method":"m","params":{"id":5,"x":"', None),  # nested: not ours
        (b'{"params":{"id":5},"id":6,"method":"m"', 6),
        (b'{"params":["{\\"id\\":5"],"id":6,', 6),
        (b'{"method":"id","id":7}', 7),  # a value "id" is not the key
        (b'{"id":', None),  # the value was cut off
        (b'{"id":12', None),  # maybe in the middle of the number
        (b'{"id":12 }', 12),
        (b'{"id":"' + b"x" * 300 + b'"', None),  # longer than any id we would sniff
        (b'{"id":"\\ud800"', None),
        (b'{"id":1234567890123456789012', None),
        (b"", None),
        (b"\xff\xfe", None),
    ],
)
def test_sniff_id(head: bytes, expected: Any) -> None:
    assert sniff_id(head) == expected


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.binary(max_size=300))
def test_parse_line_and_sniff_id_never_raise(line: bytes) -> None:
    message = parse_line(line)
    assert isinstance(message, Request | Notification | Response | Invalid | Ignored)
    sniffed = sniff_id(line)
    assert sniffed is None or valid_id(sniffed)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False)
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)
envelope_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"])


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    st.dictionaries(
        envelope_keys,
        json_values | st.sampled_from(["2.0", "initialize", "session/new"]),
        max_size=6,
    )
)
def test_every_object_is_classified_and_answers_carry_a_valid_id(obj: dict[str, Any]) -> None:
    message = parse_object(obj)
    if isinstance(message, Invalid):
        assert message.id is None or valid_id(message.id)
        assert message.error.code in (ErrorCode.INVALID_REQUEST, ErrorCode.PARSE_ERROR)
        # An answered message must never be a response: that would start a ping-pong.
        assert "method" in obj or ("result" not in obj and "error" not in obj)
    elif isinstance(message, Request):
        assert valid_id(message.id) and obj["id"] == message.id and obj["jsonrpc"] == "2.0"
    elif isinstance(message, Notification):
        assert "id" not in obj and isinstance(obj["method"], str)
    elif isinstance(message, Response):
        assert "method" not in obj and valid_id(message.id)
