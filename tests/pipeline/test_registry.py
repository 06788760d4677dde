"""Tool model and registry: restricted schemas, redaction required, namespaces, order, catalog."""

from __future__ import annotations

import dataclasses
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from acpd.tools.builtin import core_registry, core_sources
from acpd.tools.builtin.shell import ShellOutputEnvelope
from acpd.tools.registry import DuplicateTool, RegistrationError, ToolRegistry, ToolSource
from acpd.tools.schema import forbidden_keywords, render_schema
from acpd.tools.spec import Effect, ToolInvocationRecord
from acpd.tools.state import SessionTools
from tests.pipeline.conftest import Args, Behaviour, make_tool


def test_nullable_fields_are_flattened_and_core_schemas_are_in_the_subset() -> None:
    schema = render_schema(Args)
    assert schema["properties"]["count"] == {"type": "integer", "minimum": 0}
    assert "count" not in schema.get("required", [])
    for spec in core_registry():
        rendered = spec.input_schema()
        assert forbidden_keywords(rendered) == [], spec.id
        assert rendered["additionalProperties"] is False
        assert "title" not in rendered


def test_nested_models_are_inlined() -> None:
    plan = core_registry().resolve("update_plan")
    assert plan is not None
    items = plan.input_schema()["properties"]["entries"]["items"]
    assert items["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert "$defs" not in plan.input_schema()


class Union(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: int | str


class Recursive(BaseModel):
    children: list[Recursive] = []


def test_schemas_outside_the_subset_fail_registration() -> None:
    base = make_tool("ok", Effect.READ_ONLY, Behaviour())
    for params in (Union, Recursive):
        bad = dataclasses.replace(base, params=params)
        with pytest.raises(RegistrationError, match=r"anyOf|recursive|\$ref"):
            ToolRegistry([bad])


def test_a_tool_without_redaction_is_refused() -> None:
    bare = dataclasses.replace(make_tool("x", Effect.READ_ONLY, Behaviour()), redaction=None)
    with pytest.raises(RegistrationError, match="redaction"):
        ToolRegistry([bare])


def test_ids_are_namespaced_and_unique() -> None:
    tool = make_tool("x", Effect.READ_ONLY, Behaviour())
    with pytest.raises(RegistrationError, match="namespaced"):
        ToolRegistry([dataclasses.replace(tool, id="x")])
    with pytest.raises(DuplicateTool):
        ToolRegistry([tool, dataclasses.replace(tool, name="y")])
    with pytest.raises(DuplicateTool):
        ToolRegistry([tool, dataclasses.replace(tool, id="plugin__other")])


def test_executor_order_is_fixed_configurable_and_owns_short_names() -> None:
    theirs = make_tool("read", Effect.READ_ONLY, Behaviour())
    plugin = ToolSource("plugin", [theirs])
    first = ToolRegistry.from_sources([*core_sources(), plugin])
    assert first.resolve("read") is not theirs and first.resolve("plugin__read") is theirs
    assert first.name_of(theirs) == "plugin__read"
    assert first.order == ["file", "shell", "plan", "overflow", "web", "diagnostics", "ask",
                           "plugin"]
    flipped = ToolRegistry.from_sources([*core_sources(), plugin], ["plugin", "shell"])
    assert flipped.resolve("read") is theirs
    assert flipped.order == ["plugin", "shell", "file", "plan", "overflow", "web",
                             "diagnostics", "ask"]
    assert [s.id for s in flipped][:2] == ["plugin__read", "core__bash"]
    with pytest.raises(RegistrationError, match="nope"):
        ToolRegistry.from_sources(core_sources(), ["nope"])


def test_catalog_is_per_request_from_registry_policy_mode_and_blocks(rig) -> None:  # type: ignore[no-untyped-def]
    r = rig(rules={"bash": [("*", "deny")]})
    state = SessionTools()
    names = [n for n, _ in r.pipeline.catalog("auto", state)]
    assert "bash" not in names and "write" in names and "probe" in names
    assert [n for n, _ in r.pipeline.catalog("read-only", state)] == [
        "read", "list_directory", "find_path", "grep", "update_plan", "read_overflow", "ask_user",
        "probe"]
    state.anomaly.blocked["plugin__probe"] = "test"
    assert "probe" not in [n for n, _ in r.pipeline.catalog("auto", state)]


def test_shell_envelope_is_typed_and_records_serialise() -> None:
    env = ShellOutputEnvelope(stdout="a", stderr="b", exit_code=0, truncated=False)
    assert env.to_raw() == {"stdout": "a", "stderr": "b", "exit_code": 0, "truncated": False}
    with pytest.raises(ValueError):
        ShellOutputEnvelope.model_validate({"stdout": "a", "exit_code": "zero"})
    record = ToolInvocationRecord("c1", "read", {"path": "a"}, None, None, 1.0, 2.0)
    assert set(record.to_dict()) == {
        "toolCallId", "name", "args", "result", "error", "startedAt", "endedAt"}
    effect: Literal["x"] = "x"
    assert effect
