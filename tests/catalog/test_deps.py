"""The dependency graph: cycles broken at construction, gates, boosts, deadlock."""

from __future__ import annotations

import logging

import pytest

from acpd.tools.catalog.deps import DependencyGraph, find_cycle_members


def k(name: str) -> tuple[str, str]:
    return (name, f"core__{name}")


@pytest.mark.parametrize(("requires", "cycle"), [
    ({"a": ["b"], "b": ["a"]}, {"a", "b"}),
    ({"a": ["a"]}, {"a"}),
    ({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}, {"a", "b", "c"}),
    ({"a": ["b"], "b": ["c"], "d": ["b"]}, set()),
    ({"x": ["y"], "y": ["x"], "p": ["q"], "q": ["r"], "r": ["q"]}, {"x", "y", "q", "r"}),
])
def test_cycle_members(requires: dict[str, list[str]], cycle: set[str]) -> None:
    assert find_cycle_members(requires) == cycle


def test_a_long_chain_is_not_a_recursion_problem() -> None:
    chain = {f"t{i}": [f"t{i + 1}"] for i in range(20_000)}
    assert find_cycle_members(chain) == set()
    chain["t20000"] = ["t0"]
    assert len(find_cycle_members(chain)) == 20_001


def test_cycles_are_broken_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "acpd.catalog"):
        graph = DependencyGraph({"a": ["b"], "b": ["a"], "c": ["a"]}, {})
    assert "a, b form a requires cycle" in caplog.text
    assert graph.missing(k("a"), set()) == ()
    assert graph.missing(k("c"), set()) == ("a",)


def test_gate_holds_back_until_completed_and_matches_ids() -> None:
    graph = DependencyGraph({"write": ["read"], "core__deploy": ["build", "test"]}, {})
    tools = [k("read"), k("write"), k("deploy"), k("build")]
    held = graph.gate(tools, set(), exempt=set(), always_on=set()).held
    assert held == {"write": ("read",), "deploy": ("build", "test")}
    held = graph.gate(tools, {"read", "build"}, exempt=set(), always_on=set()).held
    assert held == {"deploy": ("test",)}
    done = {"read", "core__read"}  # CatalogState records both forms
    held = graph.gate(tools, done, exempt={k("deploy")}, always_on=set()).held
    assert held == {}


def test_deadlock_lifts_the_gates() -> None:
    graph = DependencyGraph({"write": ["read"], "edit": ["read"]}, {})
    result = graph.gate([k("write"), k("edit"), k("memory")], set(), set(), {k("memory")})
    assert result.deadlock and result.held == {}
    result = graph.gate([k("write"), k("read")], set(), set(), set())
    assert not result.deadlock and result.held == {"write": ("read",)}


def test_boost_is_per_dependency_and_capped() -> None:
    graph = DependencyGraph({}, {"deploy": ["lint", "test", "build"]},
                            boost_per_dep=0.15, max_total_boost=0.2)
    assert graph.boost(k("deploy"), set()) == 0
    assert graph.boost(k("deploy"), {"lint"}) == pytest.approx(0.15)
    assert graph.boost(k("deploy"), {"lint", "test", "build"}) == pytest.approx(0.2)
    assert graph.boost(k("other"), {"lint"}) == 0
