"""The result cache and the anomaly detector, alone and through the runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpd.tools.anomaly import AnomalyDetector, AnomalySettings
from acpd.tools.builtin import core_registry
from acpd.tools.cache import ResultCache, cache_key, cacheable
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.spec import ToolOutput
from acpd.tools.state import SessionTools
from tests.pipeline.conftest import RigFactory

pytestmark = pytest.mark.anyio


def test_only_read_only_tools_outside_the_seeds_set_are_cacheable() -> None:
    cacheable_names = {s.name for s in core_registry() if cacheable(s)}
    assert cacheable_names == {"read", "list_directory", "find_path", "grep", "update_plan"}


def test_ttl_expiry_and_clear() -> None:
    now = [0.0]
    cache = ResultCache(ttl=10, clock=lambda: now[0])
    cache.put("k", ToolOutput("v"))
    assert cache.get("k") is not None
    now[0] = 10.0
    assert cache.get("k") is None and len(cache) == 0
    cache.put("k", ToolOutput("v"))
    cache.clear()
    assert cache.get("k") is None and cache.hits == 0 and cache.misses == 1
    cache.put("bad", ToolOutput("v", failed=True))
    assert cache.get("bad") is None


def test_keys_do_not_depend_on_argument_order() -> None:
    spec = core_registry().resolve("read")
    assert spec is not None
    assert cache_key(spec, {"path": "a", "limit": 2}) == cache_key(spec, {"limit": 2, "path": "a"})
    assert cache_key(spec, {"path": "a"}) != cache_key(spec, {"path": "b"})


async def test_runner_serves_repeats_from_cache_until_something_changes(rig: RigFactory) -> None:
    r = rig(mode="auto")
    Path(r.env.cwd, "f.txt").write_text("one\n")  # noqa: ASYNC240
    first = await r.call("read", {"path": "f.txt"})
    again = await r.call("read", {"path": "f.txt"})
    assert first.text == again.text == "one\n"
    assert r.env.state.cache.hits == 1 and r.audit()[-1]["cached"] is True
    await r.call("write", {"path": "f.txt", "content": "two\n"})
    assert (await r.call("read", {"path": "f.txt"})).text == "two\n"
    await r.call("bash", {"command": "echo three > f.txt"})
    assert (await r.call("read", {"path": "f.txt"})).text == "three\n"
    r.env.state.clear()
    assert len(r.env.state.cache) == 0


async def test_bash_is_never_cached(rig: RigFactory) -> None:
    r = rig(mode="auto")
    await r.call("bash", {"command": "echo x >> n.txt"})
    await r.call("bash", {"command": "echo x >> n.txt"})
    assert Path(r.env.cwd, "n.txt").read_text() == "x\nx\n"  # noqa: ASYNC240


def test_detector_blocks_past_the_threshold_and_unblocks() -> None:
    detector = AnomalyDetector(AnomalySettings(window_size=4, failure_threshold=0.5, min_calls=4))
    assert [detector.record("t", f) for f in (True, False, True)] == [None, None, None]
    assert detector.record("t", False) is None  # 2 of 4 is not above 50 %
    assert detector.record("t", True) is None  # window F T F T: still 50 %
    assert detector.record("t", True) is not None  # window T F T T: 75 %
    assert detector.is_blocked("t")
    assert detector.unblock("t") and not detector.is_blocked("t")
    assert detector.record("t", True) is None  # the window starts afresh
    off = AnomalyDetector(AnomalySettings(auto_block=False, window_size=1, min_calls=1))
    assert off.record("t", True) is None and not off.is_blocked("t")


async def test_runner_blocks_a_failing_tool_and_unblock_lifts_it(rig: RigFactory) -> None:
    state = SessionTools(anomaly=AnomalyDetector(
        AnomalySettings(window_size=3, failure_threshold=0.6, min_calls=3)))
    r = rig(state=state)
    r.behaviours["probe"].errors = [ToolError(ErrorCategory.PERMANENT_FAILURE, "x")] * 3
    for n in range(3):
        await r.call("probe", {"path": str(n)})
    blocked = await r.call("probe", {"path": "later"})
    assert blocked.error is not None and "/unblock probe" in blocked.error.format_for_model()
    assert r.behaviours["probe"].calls == 3
    assert r.audit()[-1]["decision"] == "anomaly_blocked"
    assert "probe" not in [n for n, _ in r.pipeline.catalog("ask", state)]
    state.anomaly.unblock("plugin__probe")
    assert (await r.call("probe", {"path": "later"})).error is None


async def test_refusals_and_rejections_are_not_failures(rig: RigFactory) -> None:
    state = SessionTools(anomaly=AnomalyDetector(
        AnomalySettings(window_size=2, failure_threshold=0.4, min_calls=2)))
    r = rig(mode="read-only", state=state)
    for n in range(4):
        await r.call("mutate", {"path": str(n)})
    assert not state.anomaly.blocked
