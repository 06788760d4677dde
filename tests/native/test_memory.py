"""memory_save / memory_search in-process through the real pipeline and real SQLite FTS5."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acpd.tools.native.memory import SCHEMA, match_expression, memory_path
from tests.native.conftest import Rig, RigFactory

pytestmark = pytest.mark.anyio

HOSTILE = [
    '"', '""', '"tests', "tests*", "*", "NEAR(", "NEAR(tests run, 2)", "-", "-tests", "a AND",
    "OR", "AND", "NOT", "NOT tests", "content:tests", "notes_fts:run", "^tests", ")(", "{tests}",
    "tests:", "'; DROP TABLE notes;--", "\x00tests", "tests\\", "[tests]", "+tests",
    "tests AND NOT", '"""*"""', "::", ".", "rank", "bm25(notes_fts)", "\u202etests",
    "\uff54\uff45\uff53\uff54\uff53",
    "tests " * 400,
]


async def saved(rig: Rig, *notes: str) -> None:
    for note in notes:
        result = await rig.run("memory_save", {"content": note})
        assert result.error is None, result.text


async def test_words_match_ranked_with_stemming(rig: RigFactory) -> None:
    r = rig()
    await saved(r, "Run the test suite with ./scripts/test", "Deploys go out on Fridays",
                "The test database is reset by running make reset-db; tests need it")
    result = await r.run("memory_search", {"query": "how do I run tests?"})
    assert result.error is None
    lines = result.text.splitlines()
    assert lines[0] == "2 memories, best match first:"
    assert "Fridays" not in result.text
    one = await r.run("memory_search", {"query": "fridays deploying", "limit": 1})
    assert "1 memory," in one.text and "Fridays" in one.text


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_queries_never_error(rig: RigFactory, query: str) -> None:
    r = rig()
    await saved(r, "tests run with pytest near the end of the content")
    result = await r.run("memory_search", {"query": query[:2000]})
    assert result.error is None, (query, result.text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=st.text(min_size=1, max_size=300))
def test_any_text_is_a_valid_match_expression(query: str) -> None:
    """Whatever the text, what reaches MATCH parses (real FTS5, porter tokenizer)."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    db.execute("INSERT INTO notes (content, digest, created_at) VALUES ('tests run', 'd', 0)")
    expression = match_expression(query)
    if expression is not None:
        db.execute("SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?", (expression,)).fetchall()


async def test_a_query_past_its_budget_is_a_timeout_not_a_crash(rig: RigFactory) -> None:
    r = rig()
    await saved(r, "seed")
    path = memory_path(r.kit.native.memory.data_dir, r.env.cwd)  # type: ignore[union-attr]
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO notes (content, digest, created_at) VALUES (?, ?, 0)",
                       [(f"alpha note number {n} with words", f"d{n}") for n in range(3000)])
    slow = rig({"native": {"memory": {"budget_secs": 1e-6}}})
    result = await slow.run("memory_search", {"query": "alpha words note", "limit": 50})
    assert result.error is not None and result.error.category.value == "Timeout", result.text
    assert "budget_secs" in result.text
    fine = await r.run("memory_search", {"query": "alpha words note", "limit": 50})
    assert fine.error is None and "50 memories" in fine.text


async def test_without_a_data_dir_the_tools_refuse_and_say_why(rig: RigFactory) -> None:
    from acpd.daemon.config import ToolsConfig
    from acpd.tools.setup import build_toolkit

    r = rig()
    r.kit = build_toolkit(ToolsConfig.model_validate({"checkpoint": {"enabled": False}}), None)
    result = await r.run("memory_save", {"content": "x"})
    assert result.error is not None and "data directory" in result.text


async def test_a_long_note_is_shown_cut_and_kept_whole(rig: RigFactory) -> None:
    r = rig()
    await saved(r, "marker " + "word " * 400)
    result = await r.run("memory_search", {"query": "marker"})
    assert "characters in all]" in result.text
