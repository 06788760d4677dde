"""Validate every message acpd wrote against the ACP JSON schema of the TypeScript SDK.

Version-aware: a log is checked against schema/v1 until acpd answers an `initialize` with
another `protocolVersion` (2: schema/v2, the draft), and from that answer on against that
version's schema (the answer itself included). A message of one version's traffic that only
the other version has (a v1 `tool_call` on a v2 connection, `fs/*` requests) is a problem.

Per method, not just the envelope: a response is checked against `$defs/<X>Response` for the
method of the client request it answers, an agent-to-client request's params against
`$defs/<X>Request`, `session/update` params against `SessionNotification` *and* the update
against the `SessionUpdate` branch for its `sessionUpdate` kind, an error against `Error`.
The method-to-definition map is read from the schema's own `x-method`/`x-side` annotations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker  # type: ignore[import-untyped]
from jsonschema.exceptions import ValidationError, best_match  # type: ignore[import-untyped]
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

REPO = Path(__file__).resolve().parents[2]
TS_DIR = REPO / "tests" / "e2e" / "ts"
SCHEMA_DIR = TS_DIR / "node_modules/@agentclientprotocol/sdk/schema"
SCHEMA_PATH = SCHEMA_DIR / "v1" / "schema.json"
SCHEMA_V2_PATH = SCHEMA_DIR / "v2" / "schema.json"
SCHEMA_PATHS = {1: SCHEMA_PATH, 2: SCHEMA_V2_PATH}

_INT_RANGES = {
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def _format_checker() -> FormatChecker:
    checker = FormatChecker()
    for name, (low, high) in _INT_RANGES.items():

        def check(value: object, low: int = low, high: int = high) -> bool:
            if not isinstance(value, int) or isinstance(value, bool):
                return True  # "type" judges the type; a format only constrains integers
            return low <= value <= high

        checker.checks(name)(check)
    return checker


@dataclass(frozen=True)
class Schema:
    document: dict[str, Any]
    registry: Registry[Any]
    agent_results: dict[str, str]
    """client-to-agent method -> `$defs` name of its response (InitializeResponse, ...)."""
    client_requests: dict[str, str]
    """agent-to-client method -> `$defs` name of its params (ReadTextFileRequest, ...)."""
    notifications: dict[str, str]
    """agent-to-client notification -> `$defs` name of its params."""
    update_branches: dict[str, str]
    """`sessionUpdate` kind -> the ref of its branch of `$defs/SessionUpdate`."""
    uri: str = "urn:acp:schema:v1"
    version: int = 1

    def validator(self, ref: str) -> Draft202012Validator:
        return _validator(self, ref)


@cache
def load_schema(path: Path = SCHEMA_PATH) -> Schema:
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `npm ci` in {TS_DIR} (scripts/test does it)"
        )
    version = 2 if path.parent.name == "v2" else 1
    uri = f"urn:acp:schema:v{version}"
    document = json.loads(path.read_text())
    resource = Resource.from_contents({**document, "$id": uri}, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(uri, resource)
    defs: dict[str, Any] = document["$defs"]
    agent_results: dict[str, str] = {}
    client_requests: dict[str, str] = {}
    notifications: dict[str, str] = {}
    for name, definition in defs.items():
        method, side = definition.get("x-method"), definition.get("x-side")
        if method is None:
            continue
        if side == "agent" and name.endswith("Response"):
            agent_results[method] = name
        elif side == "client" and name.endswith("Request"):
            client_requests[method] = name
        elif name.endswith("Notification") and side in ("client", "protocol"):
            notifications[method] = name
    # v1 lists the kinds under oneOf; v2 under anyOf, with a last branch for unknown kinds.
    keyword = "oneOf" if "oneOf" in defs["SessionUpdate"] else "anyOf"
    branches = {
        branch["properties"]["sessionUpdate"]["const"]: f"/$defs/SessionUpdate/{keyword}/{index}"
        for index, branch in enumerate(defs["SessionUpdate"][keyword])
        if "const" in branch.get("properties", {}).get("sessionUpdate", {})
    }
    return Schema(
        document, registry, agent_results, client_requests, notifications, branches, uri, version
    )


def schema_for(version: int) -> Schema:
    """The schema of one protocol version (1 for any version acpd does not speak)."""
    path = SCHEMA_PATHS.get(version, SCHEMA_PATH)
    return load_schema() if path == SCHEMA_PATH else load_schema(path)  # one v1 in the cache


_VALIDATORS: dict[tuple[int, str], Draft202012Validator] = {}


def _validator(schema: Schema, ref: str) -> Draft202012Validator:
    key = (id(schema), ref)
    if key not in _VALIDATORS:
        _VALIDATORS[key] = Draft202012Validator(
            {"$ref": f"{schema.uri}{ref}"}, registry=schema.registry,
            format_checker=_format_checker(),
        )
    return _VALIDATORS[key]


# --- the wire log ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WireLine:
    number: int
    direction: str
    """"A" for acpd, "C" for the client; "A!"/"C!" for a line cut off without a newline."""
    raw: bytes
    message: Any = None


def read_log(path: Path) -> list[WireLine]:
    lines: list[WireLine] = []
    for number, entry in enumerate(path.read_bytes().split(b"\n"), 1):
        if not entry:
            continue
        tag, _, raw = entry.partition(b" ")
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        lines.append(WireLine(number, tag.decode(), raw, message))
    return lines


def agent_messages(lines: Iterable[WireLine]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.direction == "A" and isinstance(line.message, dict):
            yield line.message


@dataclass
class Report:
    checked: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def count(self, kind: str) -> None:
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1


def validate_log(path: Path, schema: Schema | None = None) -> Report:
    """Check every line acpd wrote; the report lists each problem with its line and path.
    Without `schema`, the version follows what acpd answered to `initialize`."""
    fixed = schema is not None
    schema = schema or load_schema()
    report = Report()
    client_requests: dict[Any, str] = {}
    for line in read_log(path):
        if not fixed and line.direction == "A":
            schema = _negotiated(line.message, client_requests) or schema
        where = f"{path.name}:{line.number}"
        if line.direction.endswith("!"):
            if line.direction == "A!":
                report.problems.append(f"{where}: a line without a newline: {line.raw[:200]!r}")
            continue
        message = line.message
        if line.direction == "C":
            # A v2 client may batch its messages in one array.
            for entry in message if isinstance(message, list) else [message]:
                if isinstance(entry, dict) and "method" in entry and "id" in entry:
                    client_requests[_id_key(entry["id"])] = str(entry["method"])
            continue
        report.checked += 1
        if not isinstance(message, dict):
            report.problems.append(f"{where}: not a JSON object: {line.raw[:200]!r}")
            continue
        for problem in check_agent_message(schema, message, client_requests, report):
            report.problems.append(f"{where}: {problem}")
    return report


def _negotiated(message: Any, client_requests: dict[Any, str]) -> Schema | None:
    """The schema of the version in acpd's answer to an `initialize`, if this is one."""
    if not isinstance(message, dict) or "id" not in message or "method" in message:
        return None
    if client_requests.get(_id_key(message["id"])) != "initialize":
        return None
    result = message.get("result")
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    return schema_for(version) if isinstance(version, int) else None


def _id_key(value: Any) -> tuple[str, Any]:
    # 1 and "1" are different ids; True is not an id at all.
    return (type(value).__name__, value)


def check_agent_message(
    schema: Schema, message: dict[str, Any], client_requests: dict[Any, str], report: Report
) -> list[str]:
    """Problems with one message acpd sent; empty when it is valid."""
    problems: list[str] = []
    if message.get("jsonrpc") != "2.0":
        problems.append(f"jsonrpc must be '2.0', got {message.get('jsonrpc')!r}")
    problems += _against(schema, "envelope", "", message)
    method = message.get("method")
    if isinstance(method, str):
        params = message.get("params")
        if "id" in message:
            report.count(f"request {method}")
            problems += _against(schema, "id", "/$defs/RequestId", message["id"])
            name = schema.client_requests.get(method)
            if name is None:
                if not method.startswith("_"):
                    problems.append(
                        f"request {method}: not an agent-to-client method of ACP "
                        f"v{schema.version}"
                    )
            else:
                problems += _against(schema, f"request {method} params", f"/$defs/{name}", params)
        elif method == "session/update":
            problems += _check_update(schema, params, report)
        else:
            report.count(f"notification {method}")
            name = schema.notifications.get(method)
            if name is None:
                if not method.startswith("_"):
                    problems.append(f"notification {method}: not an agent-to-client notification")
            else:
                what = f"notification {method} params"
                problems += _against(schema, what, f"/$defs/{name}", params)
        return problems
    if "id" not in message:
        return [*problems, "a message with neither method nor id"]
    asked = client_requests.pop(_id_key(message["id"]), None)
    label = asked or "an unknown request"
    if "error" in message:
        report.count(f"error {label}")
        if "result" in message:
            problems.append(f"response to {label} has both result and error")
        problems += _against(schema, f"error response to {label}", "/$defs/Error", message["error"])
        return problems
    if "result" not in message:
        return [*problems, f"response to {label} has neither result nor error"]
    if asked is None:
        return [*problems, f"result for id {message['id']!r}, which the client never sent"]
    report.count(f"result {asked}")
    name = schema.agent_results.get(asked)
    if name is None:
        return problems  # an extension method: no schema to hold it to
    problems += _against(schema, f"result of {asked}", f"/$defs/{name}", message["result"])
    return problems


def _check_update(schema: Schema, params: Any, report: Report) -> list[str]:
    envelope = f"/$defs/{schema.notifications['session/update']}"
    problems = _against(schema, "session/update params", envelope, params)
    update = params.get("update") if isinstance(params, dict) else None
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    report.count(f"update {kind}")
    if not isinstance(kind, str) or kind not in schema.update_branches:
        return [*problems, f"session/update: unknown sessionUpdate kind {kind!r}"]
    problems += _against(schema, f"session/update {kind}", schema.update_branches[kind], update)
    return problems


def _against(schema: Schema, what: str, ref: str, instance: Any) -> list[str]:
    error = best_match(schema.validator(f"#{ref}" if ref else "").iter_errors(instance))
    if error is None:
        return []
    return [_describe(what, ref or "(the whole schema: the JSON-RPC envelope)", error)]


def _describe(what: str, ref: str, error: ValidationError) -> str:
    schema_path = "/".join(str(p) for p in error.absolute_schema_path)
    return (
        f"{what} does not match {ref} at {error.json_path}: {error.message[:300]} "
        f"(schema path: {ref}/{schema_path})"
    )


def assert_valid_log(path: Path, version: int | None = None) -> Report:
    """Raise AssertionError naming every message that breaks the schema (of `version`, or
    of the version negotiated in the log)."""
    report = validate_log(path, schema_for(version) if version is not None else None)
    assert report.checked > 0, f"{path} holds no message from acpd"
    if report.problems:
        shown = "\n  ".join(report.problems[:40])
        more = f"\n  ... and {len(report.problems) - 40} more" if len(report.problems) > 40 else ""
        raise AssertionError(
            f"{len(report.problems)} message(s) from acpd break the ACP schema:\n  {shown}{more}"
        )
    return report
