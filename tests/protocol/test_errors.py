from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import BaseModel, ValidationError

from acpd.daemon.errors import (
    ConfigError,
    PeerError,
    SessionBusy,
    SessionNotFound,
    to_rpc_error,
)
from acpd.protocol import acp
from acpd.protocol.errors import (
    MAX_PEER_MESSAGE,
    ErrorCode,
    RpcError,
    internal_error,
    invalid_params,
    invalid_request,
    method_not_found,
    request_cancelled,
    resource_not_found,
)

SECRET = "hunter2-SECRET-VALUE"


def wire_text(err: RpcError) -> str:
    return orjson.dumps(err.to_wire()).decode()


def validation_error(model: type[BaseModel], value: Any) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        model.model_validate(value)
    return info.value


@pytest.mark.parametrize(
    ("model", "params"),
    [
        (acp.NewSessionRequest, {"cwd": SECRET, "mcpServers": []}),
        (acp.NewSessionRequest, {"cwd": ["/", SECRET]}),
        (acp.NewSessionRequest, [SECRET]),
        (acp.NewSessionRequest, SECRET),
        (acp.PromptRequest, {"sessionId": 1, "prompt": SECRET}),
        (acp.PromptRequest, {"sessionId": "s", "prompt": [SECRET]}),
        (acp.SetSessionConfigOptionRequest, {"sessionId": "s", "configId": "m", "value": [SECRET]}),
        (acp.InitializeRequest, {"protocolVersion": SECRET}),
        (acp.InitializeRequest, {"protocolVersion": 10**9}),
    ],
)
def test_validation_errors_are_invalid_params_without_input_values(
    model: type[BaseModel], params: Any
) -> None:
    err = to_rpc_error(validation_error(model, params))
    assert err.code == ErrorCode.INVALID_PARAMS
    text = wire_text(err)
    assert SECRET not in text and "10000000" not in text
    assert "Traceback" not in text and "https://errors.pydantic.dev" not in text
    assert isinstance(err.data, list) and err.data
    for item in err.data:
        assert set(item) == {"loc", "msg"} and all(isinstance(p, str) for p in item["loc"])


def test_validation_data_names_the_field_by_its_wire_name() -> None:
    err = to_rpc_error(validation_error(acp.PromptRequest, {"prompt": []}))
    assert err.data == [{"loc": ["sessionId"], "msg": "Field required"}]


def test_validation_data_is_capped() -> None:
    class Many(BaseModel):
        items: list[int]

    err = to_rpc_error(validation_error(Many, {"items": ["x"] * 100}))
    assert isinstance(err.data, list) and len(err.data) == 20


def test_an_unexpected_exception_is_a_generic_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    try:
        raise KeyError(SECRET)
    except KeyError as exc:
        err = to_rpc_error(exc)
    assert err.code == ErrorCode.INTERNAL_ERROR and err.data is None
    assert SECRET not in wire_text(err) and "Traceback" not in wire_text(err)
    # ... while the log keeps the traceback for whoever debugs it.
    assert any(record.exc_info for record in caplog.records)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (SessionNotFound("sess_1"), ErrorCode.RESOURCE_NOT_FOUND),
        (SessionBusy("busy"), ErrorCode.INVALID_REQUEST),
        (ConfigError("bad key"), ErrorCode.INTERNAL_ERROR),
        (invalid_params("p"), ErrorCode.INVALID_PARAMS),
        (invalid_request("r"), ErrorCode.INVALID_REQUEST),
        (method_not_found("m"), ErrorCode.METHOD_NOT_FOUND),
        (resource_not_found("r"), ErrorCode.RESOURCE_NOT_FOUND),
        (request_cancelled(), ErrorCode.REQUEST_CANCELLED),
        (internal_error(), ErrorCode.INTERNAL_ERROR),
    ],
)
def test_domain_errors_map_to_their_codes(exc: Exception, code: int) -> None:
    err = to_rpc_error(exc)
    assert err.code == code
    assert err.data is None
    if isinstance(exc, RpcError):
        assert err is exc


def test_session_not_found_and_method_not_found_truncate_what_the_peer_sent() -> None:
    assert len(to_rpc_error(SessionNotFound("s" * 10_000)).message) < 200
    assert len(method_not_found("m" * 10_000).message) <= 300


def test_peer_error_says_what_failed() -> None:
    assert str(PeerError("fs/read_text_file", RpcError(-32002, "gone"))) == (
        "fs/read_text_file failed: -32002 gone"
    )
    assert str(PeerError("x", None, "no answer")) == "x failed: no answer"


def test_rpc_error_to_wire_omits_absent_data() -> None:
    assert RpcError(-32601, "m").to_wire() == {"code": -32601, "message": "m"}
    assert RpcError(-32602, "p", {"a": 1}).to_wire() == {
        "code": -32602,
        "message": "p",
        "data": {"a": 1},
    }


@pytest.mark.parametrize(
    ("wire", "code", "message"),
    [
        ({"code": -32601, "message": "nope"}, -32601, "nope"),
        ({"code": True, "message": "x"}, ErrorCode.INTERNAL_ERROR, "x"),
        ({"code": "1", "message": 1}, ErrorCode.INTERNAL_ERROR, "error without a message"),
        ("a string " + SECRET, ErrorCode.INTERNAL_ERROR, "malformed error object (str)"),
        ([1, 2], ErrorCode.INTERNAL_ERROR, "malformed error object (list)"),
    ],
)
def test_from_wire_tolerates_malformed_errors(wire: Any, code: int, message: str) -> None:
    err = RpcError.from_wire(wire)
    assert (err.code, err.message) == (code, message)


def test_from_wire_truncates_a_huge_message() -> None:
    err = RpcError.from_wire({"code": 1, "message": "x" * 100_000})
    assert len(err.message) == MAX_PEER_MESSAGE
