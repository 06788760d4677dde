"""TAFC: the complexity score, the threshold rule, the schema copy and the stored-call strip."""

from __future__ import annotations

import math

import orjson
import pytest
from pydantic import ValidationError

from acpd.daemon.config import Config
from acpd.tools.catalog import tafc
from acpd.tools.catalog.config import TafcConfig, clamp_threshold
from acpd.tools.pipeline import TAFC_PREFIX


def obj(props: dict[str, object], required: list[str] | None = None) -> dict[str, object]:
    return {"type": "object", "properties": props, "required": required or []}


FLAT = obj({"path": {"type": "string"}}, ["path"])
DEEP = obj(
    {
        "target": {"type": "string", "enum": [f"env{i}" for i in range(16)]},
        "steps": {"type": "array", "items": obj({
            "name": {"type": "string"},
            "with": obj({"retries": {"type": "integer"}, "mode": {"enum": ["a", "b"]}}),
        })},
        **{f"p{i}": {"type": "string"} for i in range(5)},
    },
    ["target", "steps", "p0", "p1", "p2", "p3"],
)


def test_the_runner_strips_the_field_we_add() -> None:
    assert tafc.TAFC_FIELD == TAFC_PREFIX


def test_score_parts_and_bounds() -> None:
    assert tafc.complexity(obj({})) == 0.0
    assert tafc.complexity(FLAT) == pytest.approx(0.5 / 4, abs=1e-3)
    # 6 required (capped), nesting 3 (capped), enum 16 (capped).
    assert tafc.complexity(DEEP) == 1.0
    more_required = obj({k: {"type": "string"} for k in "abc"}, list("abc"))
    assert tafc.complexity(more_required) > tafc.complexity(FLAT)
    with_enum = obj({"path": {"type": "string", "enum": ["x", "y", "z"]}}, ["path"])
    assert tafc.complexity(FLAT) < tafc.complexity(with_enum) < 0.6


@pytest.mark.parametrize("bad", [None, 3, "x", [], {"required": "path"},
                                 {"properties": [1, 2]}, {"properties": {"a": None}},
                                 {"required": [1, None], "items": "nope"}])
def test_malformed_schemas_score_zero_without_raising(bad: object) -> None:
    assert tafc.complexity(bad) == 0.0


def test_a_huge_schema_is_read_within_the_node_budget() -> None:
    node: dict[str, object] = {"type": "string"}
    for _ in range(5000):  # far deeper than recursion would allow without the budget
        node = obj({"x": node})
    assert 0 < tafc.complexity(node) <= 1


def test_augment_puts_the_field_first_and_leaves_the_original() -> None:
    before = orjson.dumps(DEEP)
    out = tafc.augment(DEEP)
    assert next(iter(out["properties"])) == tafc.TAFC_FIELD
    assert out["properties"][tafc.TAFC_FIELD]["type"] == "string"
    assert tafc.TAFC_FIELD not in out["required"]
    assert orjson.dumps(DEEP) == before


def test_only_plain_object_schemas_are_augmented() -> None:
    assert tafc.can_augment(FLAT)
    assert not tafc.can_augment({"type": "array", "items": {}})
    assert not tafc.can_augment({"type": "object"})
    assert not tafc.can_augment(obj({"_tafc_think_2": {"type": "string"}}))


@pytest.mark.parametrize(("given", "expected"), [
    (math.nan, 0.6), (math.inf, 0.6), (-math.inf, 0.6), (1.5, 1.0), (-0.2, 0.0), (0.3, 0.3),
])
def test_threshold_is_clamped(given: float, expected: float) -> None:
    assert clamp_threshold(given) == expected
    assert TafcConfig(complexity_threshold=given).complexity_threshold == expected


def test_threshold_from_toml_nan(tmp_path: object) -> None:
    import tomllib

    data = tomllib.loads("[agent.catalog.tafc]\nenabled = true\ncomplexity_threshold = nan\n")
    assert Config.model_validate(data).agent.catalog.tafc.complexity_threshold == 0.6
    data = tomllib.loads("[agent.catalog.tafc]\ncomplexity_threshold = inf\n")
    assert Config.model_validate(data).agent.catalog.tafc.complexity_threshold == 0.6
    for text, expected in (("0.5", 0.5), ("nan", 0.6), ("2", 1.0), ("-inf", 0.6)):
        got = TafcConfig.model_validate({"complexity_threshold": text}).complexity_threshold
        assert got == expected, text
    for bad in ("high", True, None, [0.5]):
        with pytest.raises(ValidationError):
            TafcConfig.model_validate({"complexity_threshold": bad})


def test_stored_calls_lose_the_reasoning() -> None:
    call = {
        "arguments": {"path": "a", "_tafc_think": "SECRET", "_tafc_think_2": "MORE"},
        "raw_arguments": '{"_tafc_think": "SECRET", "path": "a"}',
        "invalid_json": None,
    }
    tafc.strip_stored(call)
    assert call["arguments"] == {"path": "a"}
    assert orjson.loads(str(call["raw_arguments"])) == {"path": "a"}
    broken = {"arguments": None, "raw_arguments": '{"_tafc_think": "SECRET", ',
              "invalid_json": 'invalid_json: ... "_tafc_think": "SECRET"'}
    tafc.strip_stored(broken)
    assert "SECRET" not in orjson.dumps(broken).decode()
    plain = {"arguments": {"path": "a"}, "raw_arguments": '{"path":"a"}', "invalid_json": None}
    tafc.strip_stored(plain)
    assert plain["raw_arguments"] == '{"path":"a"}'
