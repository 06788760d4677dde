"""The mapping of what the SDK and its HTTP client raise, and of what a server answers, to
the eleven categories (real SDK and httpx2 objects)."""

from __future__ import annotations

import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from acpd.mcpclient.results import clean, error_of, output_of
from acpd.tools.errors import ErrorCategory, ToolError


@pytest.mark.parametrize(("code", "category"), [
    (types.INVALID_PARAMS, ErrorCategory.INVALID_PARAMETERS),
    (types.INVALID_REQUEST, ErrorCategory.INVALID_PARAMETERS),
    (types.METHOD_NOT_FOUND, ErrorCategory.TOOL_NOT_FOUND),
    (types.REQUEST_TIMEOUT, ErrorCategory.TIMEOUT),
    (types.INTERNAL_ERROR, ErrorCategory.SERVER_ERROR),
    (types.PARSE_ERROR, ErrorCategory.SERVER_ERROR),
    (types.CONNECTION_CLOSED, ErrorCategory.SERVER_ERROR),
    (-32050, ErrorCategory.SERVER_ERROR),
    (1234, ErrorCategory.PERMANENT_FAILURE),
])
def test_json_rpc_errors(code: int, category: ErrorCategory) -> None:
    assert error_of("s", "t", MCPError(code, "boom")).category is category


@pytest.mark.parametrize(("status", "category"), [
    (401, ErrorCategory.POLICY_BLOCKED), (429, ErrorCategory.RATE_LIMITED),
    (503, ErrorCategory.SERVER_ERROR), (404, ErrorCategory.PERMANENT_FAILURE),
])
def test_http_status_errors(status: int, category: ErrorCategory) -> None:
    request = httpx2.Request("POST", "http://127.0.0.1:9/mcp?token=secret123")
    response = httpx2.Response(status, request=request)
    exc = httpx2.HTTPStatusError("Client error", request=request, response=response)
    err = error_of("s", "t", exc)
    assert err.category is category
    assert "secret123" not in err.message


def test_transport_failures() -> None:
    assert error_of("s", "t", httpx2.ConnectError("refused")).category is (
        ErrorCategory.NETWORK_ERROR)
    assert error_of("s", "t", TimeoutError()).category is ErrorCategory.TIMEOUT


def test_results() -> None:
    ok = types.CallToolResult(content=[
        types.TextContent(type="text", text="a"),
        types.ImageContent(type="image", data="AAAA", mime_type="image/png"),
    ], structured_content={"n": 1})
    out = output_of("s", "t", ok)
    assert out.text == "a\n[image/png image, 3 bytes, not shown]"
    assert out.raw == {"server": "s", "tool": "t", "structuredContent": {"n": 1}}
    only_structured = types.CallToolResult(content=[], structured_content={"n": 2})
    assert output_of("s", "t", only_structured).text == '{"n":2}'
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    failed = types.CallToolResult(content=[types.TextContent(type="text", text=f"bad {token}")],
                                  is_error=True)
    with pytest.raises(ToolError) as err:
        output_of("s", "t", failed)
    assert err.value.category is ErrorCategory.PERMANENT_FAILURE
    assert token not in err.value.message and "bad" in err.value.message


def test_clean_takes_out_url_queries_and_user_info() -> None:
    text = clean("failed for url 'https://user:pw@host.example:8443/mcp/k3y?key=abc' (x)")
    assert text == "failed for url 'https://host.example:8443/...' (x)"
    assert clean("see http://127.0.0.1:9 now") == "see http://127.0.0.1:9 now"


def test_a_server_is_described_without_its_secrets() -> None:
    from acpd.mcpclient.servers import ServerParams

    web = ServerParams("w", "http", url="https://u:pw@h.example:8443/mcp/k3y?t=1",
                       headers=(("Authorization", "Bearer zzz"),))
    assert web.describe() == "https://h.example:8443"
    assert "zzz" not in repr(web) and "k3y" not in web.describe()
    local = ServerParams("l", "stdio", command="/opt/bin/github-mcp", args=("--token", "abc"),
                         env=(("GH_TOKEN", "zzz"),))
    assert local.describe() == "github-mcp" and "zzz" not in repr(local)
    assert local.identity != ServerParams("l", "stdio", command="/opt/bin/other").identity


def test_values_the_server_was_given_are_scrubbed_from_what_it_says() -> None:
    from acpd.mcpclient.servers import ServerParams

    web = ServerParams("w", "http", url="https://h/mcp",
                       headers=(("Authorization", "Bearer tok-1234567890"), ("X-Short", "abc")))
    assert web.scrub("sent tok-1234567890 and abc") == "sent [REDACTED:mcp-header] and abc"
    local = ServerParams("l", "stdio", command="srv", env=(("HOME2", "/home/me/x"),
                                                           ("PASS", "hunter2hunter2")))
    assert local.scrub("/home/me/x hunter2hunter2") == "/home/me/x [REDACTED:mcp-env]"
