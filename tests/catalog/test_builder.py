"""The per-turn catalog on a realistic 100-tool set: filter reasons, gates, TAFC, providers."""

from __future__ import annotations

from typing import Any

import pytest

from acpd.providers.base import Message, ToolCallRequest
from acpd.tools.catalog import CatalogBuilder, CatalogConfig, CatalogState, native_tool_use
from acpd.tools.catalog.tafc import TAFC_FIELD, complexity
from tests.catalog.catalog100 import QUERIES, specs

pytestmark = pytest.mark.anyio

SPECS = specs()
ENTRIES = [(s.name, s) for s in SPECS]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def config(**values: Any) -> CatalogConfig:
    """Nothing always on unless given (the defaults are tested on their own)."""
    return CatalogConfig.model_validate({"always_on": [], **values})


async def test_default_always_on_is_the_agents_plumbing() -> None:
    state = CatalogState()
    names = await sent(CatalogBuilder(CatalogConfig(enabled=True, top_k=1)),
                       user("scale the payments deployment"), state)
    assert {"memory_save", "memory_search", "update_plan", "ask_user"} <= set(names)
    assert state.last is not None and state.last.reasons["always_on"] == 4


def user(text: str) -> list[Message]:
    return [Message("user", text)]


async def sent(builder: CatalogBuilder, history: list[Message], state: CatalogState | None = None,
               *, native: bool = True) -> list[str]:
    tools = await builder.build(ENTRIES, history, state or CatalogState(), native=native)
    return [t.name for t in tools]


async def test_off_by_default_sends_everything_unchanged() -> None:
    state = CatalogState()
    tools = await CatalogBuilder().build(ENTRIES, user("scale the deployment"), state)
    assert [t.name for t in tools] == [s.name for s in SPECS]
    assert [t.parameters for t in tools] == [s.input_schema() for s in SPECS]
    assert state.status_line() == "Tools: 100 of 100 sent (filtering off)"


async def test_bm25_keeps_the_tool_a_person_would_use() -> None:
    builder = CatalogBuilder(config(enabled=True, top_k=8))
    missed, unfiltered = [], []
    for query, expected in QUERIES:
        state = CatalogState()
        names = await sent(builder, user(query), state)
        if expected not in names:
            missed.append(query)
        assert state.last is not None
        if state.last.how == "BM25":
            # top_k ranked + the tool with a description under 3 words (none is named).
            assert len(names) <= 8 + 1
        else:  # no word in common with any tool: no query vector, nothing filtered
            assert len(names) == 100 and "no query vector" in state.last.how
            unfiltered.append(query)
    # A lexical scorer can miss a request that shares no word with its tool ("imports
    # requests" ranks the pull-request tools): that is what embeddings are for.
    assert len(missed) <= 1, missed
    assert len(unfiltered) <= 1, unfiltered


async def test_reasons_always_on_named_short_and_order() -> None:
    state = CatalogState()
    builder = CatalogBuilder(config(enabled=True, top_k=2, always_on=["memory_*", "read_file"]))
    names = await sent(builder, user("use kubectl_top, then scale the deployment"), state)
    assert {"memory_save", "memory_search", "read_file", "kubectl_top", "weather"} <= set(names)
    assert "kubectl_scale" in names
    order = [s.name for s in SPECS]
    assert names == sorted(names, key=order.index)  # catalog order kept
    assert state.last is not None
    assert state.last.reasons == {"always_on": 3, "named": 1, "short": 1, "ranked": 2}
    line = state.status_line()
    assert line.startswith(f"Tools: {len(names)} of 100 sent (BM25: 3 always on, 1 named")


async def test_mentions_are_whole_names_not_parts() -> None:
    builder = CatalogBuilder(config(enabled=True, top_k=1))
    state = CatalogState()
    await sent(builder, user("the git_log-ish thing; not run_tests_now, xgrep or grepé"), state)
    assert state.last is not None and "named" not in state.last.reasons
    await sent(builder, user("Use GREP. Then git_log, (bash)"), state)
    assert state.last is not None and state.last.reasons["named"] == 3


async def test_no_query_vector_sends_everything() -> None:
    builder = CatalogBuilder(config(enabled=True, top_k=3))
    for history in (user("bonjour tout le monde"), user("   "), []):
        state = CatalogState()
        assert len(await sent(builder, history, state)) == 100
        assert state.last is not None and "no query vector" in state.last.how


async def test_a_tool_called_this_turn_is_never_dropped() -> None:
    builder = CatalogBuilder(config(enabled=True, top_k=2))
    call = ToolCallRequest("c1", "mail_send", {"to": ["a@b"], "subject": "s", "body": "b"})
    history = [*user("scale the payments deployment"), Message("assistant", "", [call]),
               Message("tool", "sent", tool_call_id="c1")]
    state = CatalogState()
    names = await sent(builder, history, state)
    assert "mail_send" in names and state.last is not None
    assert state.last.reasons["referenced"] == 1
    # A call from an earlier turn does not count.
    later = [*history, *user("scale the payments deployment")]
    assert "mail_send" not in await sent(builder, later, CatalogState())


async def test_providers_without_native_tool_use_get_everything_plain() -> None:
    class Legacy:
        supports_tool_use = False

    class Method:
        def supports_tool_use(self) -> bool:
            return False

    assert not native_tool_use(Legacy()) and not native_tool_use(Method())
    assert native_tool_use(object())
    builder = CatalogBuilder(config(enabled=True, top_k=2, tafc={"enabled": True,
                                                                 "complexity_threshold": 0}))
    state = CatalogState()
    tools = await builder.build(ENTRIES, user("scale it"), state, native=False)
    assert len(tools) == 100
    assert not any(TAFC_FIELD in t.parameters.get("properties", {}) for t in tools)
    assert state.last is not None and "no native tool use" in state.last.how


async def test_tafc_goes_exactly_to_schemas_at_the_threshold() -> None:
    threshold = 0.45
    builder = CatalogBuilder(config(tafc={"enabled": True, "complexity_threshold": threshold}))
    state = CatalogState()
    tools = await builder.build(ENTRIES, user("anything"), state)
    thinking = {t.name for t in tools if TAFC_FIELD in t.parameters["properties"]}
    expected = {s.name for s in SPECS if complexity(s.input_schema()) >= threshold}
    assert thinking == expected and 0 < len(expected) < 100
    assert state.last is not None and set(state.last.tafc) == expected
    # The specs' own schemas are untouched; a second build gives the same.
    assert not any(TAFC_FIELD in s.input_schema()["properties"] for s in SPECS)
    again = await builder.build(ENTRIES, user("anything"), CatalogState())
    assert [t.parameters for t in again] == [t.parameters for t in tools]


def deps(rules: dict[str, Any], **values: Any) -> CatalogConfig:
    return config(dependencies={"enabled": True, "rules": rules}, **values)


async def test_requires_holds_back_until_completed_and_clear_resets() -> None:
    builder = CatalogBuilder(deps({"merge_pull_request": {"requires": ["get_pull_request_diff"]},
                                   "mcp__tf__terraform_apply": {"requires": ["terraform_plan"]}}))
    state = CatalogState()
    names = await sent(builder, user("ship it"), state)
    assert "merge_pull_request" not in names and "terraform_apply" not in names
    assert len(names) == 98
    assert state.last is not None and state.last.held == {
        "merge_pull_request": ("get_pull_request_diff",), "terraform_apply": ("terraform_plan",)}
    assert "merge_pull_request waits for get_pull_request_diff" in state.status_line()
    state.record_completed("get_pull_request_diff", "mcp__github__get_pull_request_diff")
    names = await sent(builder, user("ship it"), state)
    assert "merge_pull_request" in names and "terraform_apply" not in names
    state.clear()
    assert "merge_pull_request" not in await sent(builder, user("ship it"), state)


async def test_named_and_always_on_tools_bypass_the_gate() -> None:
    builder = CatalogBuilder(deps({"merge_pull_request": {"requires": ["get_pull_request_diff"]},
                                   "git_commit": {"requires": ["git_diff"]}},
                                  always_on=["git_commit"]))
    names = await sent(builder, user("merge_pull_request 12 please"), CatalogState())
    assert "merge_pull_request" in names and "git_commit" in names


async def test_deadlock_falls_back_to_the_full_set() -> None:
    rules = {s.name: {"requires": ["nonexistent_tool"]} for s in SPECS if s.name != "weather"}
    builder = CatalogBuilder(deps(rules, enabled=True, top_k=5, always_on=["weather"]))
    state = CatalogState()
    names = await sent(builder, user("scale the payments deployment"), state)
    assert len(names) == 100
    assert state.last is not None and state.last.deadlock
    assert "every candidate waited for a prerequisite, so all were sent" in state.status_line()


async def test_prefers_boost_changes_the_ranking() -> None:
    query = user("show the logs")
    plain = CatalogBuilder(config(enabled=True, top_k=1, min_description_words=0))
    (first,) = await sent(plain, query, CatalogState())
    rules = {"docker_logs": {"prefers": ["docker_ps"]},
             "kubectl_logs": {"prefers": ["kubectl_get_pods"]}}
    other = "docker_logs" if first != "docker_logs" else "kubectl_logs"
    prereq = "docker_ps" if other == "docker_logs" else "kubectl_get_pods"
    boosted = CatalogBuilder(config(
        enabled=True, top_k=1, min_description_words=0,
        dependencies={"enabled": True, "rules": rules, "boost_per_dep": 0.6,
                      "max_total_boost": 0.6}))
    state = CatalogState()
    state.record_completed(prereq, f"mcp__x__{prereq}")
    assert await sent(boosted, query, state) == [other]


async def test_a_huge_message_is_read_at_both_ends() -> None:
    builder = CatalogBuilder(config(enabled=True, top_k=1))
    paste = "lorem ipsum dolor " * 50_000
    state = CatalogState()
    names = await sent(builder, user(f"{paste}\nnow run kubectl_top please"), state)
    assert "kubectl_top" in names and state.last is not None
    assert state.last.reasons["named"] == 1
    names = await sent(builder, user(f"use git_blame on this:\n{paste}"), state)
    assert "git_blame" in names


async def test_many_sessions_building_at_once_share_the_caches() -> None:
    import anyio

    builder = CatalogBuilder(config(enabled=True, top_k=3, tafc={"enabled": True}))
    results: list[list[str]] = []

    async def one(query: str, entries: list[Any]) -> None:
        tools = await builder.build(entries, user(query), CatalogState())
        results.append([t.name for t in tools])

    halves = [ENTRIES[:60], ENTRIES[40:], ENTRIES]
    async with anyio.create_task_group() as tg:
        for n, (query, _) in enumerate(QUERIES):
            tg.start_soon(one, query, halves[n % 3])
    assert len(results) == len(QUERIES)
    alone = await sent(CatalogBuilder(config(enabled=True, top_k=3, tafc={"enabled": True})),
                       user(QUERIES[2][0]), CatalogState())
    assert alone == await sent(builder, user(QUERIES[2][0]), CatalogState())


async def test_scripted_provider_records_requests(tmp_path: Any) -> None:
    import json

    from acpd.providers.base import ModelRequest, ProviderError, ToolDefinition
    from acpd.providers.scripted import ScriptedProvider

    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "a"}, {"text": "b"}],
                                  "record": "out/requests.jsonl"}))
    provider = ScriptedProvider(script)
    request = ModelRequest("sys", user("hello"), [ToolDefinition("t", "d", {"type": "object"})])
    with pytest.raises(ProviderError, match="cannot record"):  # out/ does not exist
        [e async for e in provider.stream(request)]
    (tmp_path / "out").mkdir()
    [e async for e in provider.stream(request)]
    (line,) = (tmp_path / "out" / "requests.jsonl").read_text().splitlines()
    assert json.loads(line) == {"tools": [{"name": "t", "description": "d",
                                           "parameters": {"type": "object"}}],
                                "messages": 1, "query": "hello"}
    script.write_text(json.dumps({"turns": [], "record": 3}))
    with pytest.raises(ValueError, match="record must be a file name"):
        ScriptedProvider(script)


async def test_two_sessions_with_different_tools_under_one_id() -> None:
    import dataclasses

    import anyio

    builder = CatalogBuilder()
    other = [(n, dataclasses.replace(s, description=f"other server: {s.description}"))
             for n, s in ENTRIES[:8]]
    await builder.build(ENTRIES[:50], user("x"), CatalogState())  # 50 of mine are known
    seen: dict[str, list[str]] = {}

    async def one(label: str, entries: list[Any]) -> None:
        tools = await builder.build(entries, user("x"), CatalogState())
        seen[label] = [t.description for t in tools]

    async with anyio.create_task_group() as tg:
        # Mine: 50 known, 50 new (prepared on a thread); meanwhile the other session's 8
        # tools, under the same ids as 8 of mine, are prepared and cached.
        tg.start_soon(one, "mine", ENTRIES)
        tg.start_soon(one, "other", other)
    assert seen["mine"] == [s.description for _, s in ENTRIES]
    assert all(d.startswith("other server") for d in seen["other"])


async def test_a_prewarmed_builder_prepares_nothing_at_its_first_turn_and_sends_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = {"enabled": True, "top_k": 6, "tafc": {"enabled": True, "complexity_threshold": 0.3}}
    cold = CatalogBuilder(config(**settings))
    warm = CatalogBuilder(config(**settings))
    warm.prewarm(SPECS)
    prepared: list[int] = []
    original = CatalogBuilder._prepare

    def counting(self: CatalogBuilder, specs: Any) -> Any:
        prepared.append(len(specs))
        return original(self, specs)

    monkeypatch.setattr(CatalogBuilder, "_prepare", counting)
    history = user("roll back the payments deployment")
    first = await warm.build(ENTRIES, history, CatalogState())
    assert sum(prepared) == 0  # everything was ready
    assert first == await cold.build(ENTRIES, history, CatalogState())
    assert sum(prepared) == len(SPECS)
