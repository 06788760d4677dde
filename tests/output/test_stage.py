"""The output stage on its own: notes kept out of the filters, overflow storage failures,
tools that are not shells, and read_overflow's refusals."""

from __future__ import annotations

from typing import Any

import pytest

from acpd.tools.builtin import overflow as read_tool
from acpd.tools.builtin.shell import SPECS as SHELL_SPECS
from acpd.tools.builtin.shell import shell_output
from acpd.tools.capabilities import CommandResult
from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.filters import build_filter_set
from acpd.tools.output import NOT_STORED, OutputStage
from acpd.tools.overflow import OverflowSettings, SessionOverflow, parse_reference
from acpd.tools.spec import ToolContext, ToolOutput

BASH = SHELL_SPECS[0]


class Backend:
    def __init__(self, fail: bool = False) -> None:
        self.rows: dict[tuple[str, str], str] = {}
        self.fail = fail

    def save_overflow(self, session_id: str, entry_id: str, content: str) -> None:
        if self.fail:
            raise OSError("disk full")
        self.rows[(session_id, entry_id)] = content

    def load_overflow(self, session_id: str, entry_id: str) -> str | None:
        return self.rows.get((session_id, entry_id))


def bash(output: str, code: int = 0) -> ToolOutput:
    return shell_output(CommandResult(output, code), 120.0)


def test_notes_are_never_filtered_and_stats_only_when_lines_went() -> None:
    stage = OutputStage(build_filter_set())
    # A make failure: the truncate rule cuts it, the exit code note stays whole and last.
    out = "".join(f"cc -c file{i}.c\n" for i in range(300))
    p = stage.prepare(BASH, {"command": "make -j2"}, bash(out, 2))
    assert p.text.endswith("cc -c file299.c\n[exit code: 2]")
    assert p.info["lines_in"] == 300 and p.info["lines_out"] < 60
    assert p.card.splitlines()[-1].startswith("[shell] 300 lines -> ")
    assert "[shell]" not in p.text
    short = stage.prepare(BASH, {"command": "make"}, bash("ok\n"))
    assert short.card == short.text and short.info["rule"] == "make"


def test_a_tool_that_is_not_a_shell_only_loses_its_secrets() -> None:
    stage = OutputStage(build_filter_set())
    spec = next(s for s in read_tool.SPECS)  # any non-shell spec will do
    text = "line 1\n\n\n\nline 2\x1b[31m red\n"
    p = stage.prepare(spec, {}, ToolOutput(text))
    assert p.text == text  # no sanitising, no rule: a file read stays byte-exact
    leaked = "token ghp_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xYabcd"
    q = stage.prepare(spec, {}, ToolOutput(leaked, raw={"nested": [leaked]}))
    assert "ghp_" not in q.text and "[security]" in q.text and "GitHub token" in q.text
    assert "ghp_" not in str(q.raw)


def test_overflow_is_stored_for_the_session_or_its_reference_withdrawn() -> None:
    stage = OutputStage(build_filter_set(), OverflowSettings(threshold=1000))
    big = "".join(f"{i}\n" for i in range(3000))
    backend = Backend()
    p = stage.store(
        stage.prepare(BASH, {"command": "seq 3000"}, bash(big)),
        SessionOverflow(backend, "s1"),
    )
    assert p.entry_id is not None and f"overflow:{p.entry_id}" in p.text
    assert backend.rows[("s1", p.entry_id)] == big
    assert backend.load_overflow("s2", p.entry_id) is None
    assert f"overflow:{p.entry_id}" in p.raw["stdout"]

    failing = stage.store(
        stage.prepare(BASH, {"command": "seq 3000"}, bash(big)),
        SessionOverflow(Backend(fail=True), "s1"),
    )
    assert "overflow:" not in failing.text and NOT_STORED in failing.text
    assert "overflow:" not in str(failing.raw)


@pytest.mark.parametrize(
    "value",
    ["", "overflow:", "../../etc/passwd", "overflow:1' OR '1'='1",
     "00000000-0000-0000-0000-000000000000", "overflow:" + "a" * 36],
)
def test_references_other_than_a_uuid4_are_refused(value: str) -> None:
    assert parse_reference(value) is None


def test_references_in_either_form_are_accepted() -> None:
    entry = "0f8fad5b-d9cb-469f-a165-70867728950e"
    assert parse_reference(f"overflow:{entry}") == entry
    assert parse_reference(entry.upper()) == entry


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("reference", "category"),
    [("not-a-uuid", ErrorCategory.INVALID_PARAMETERS),
     ("overflow:0f8fad5b-d9cb-469f-a165-70867728950e", ErrorCategory.PERMANENT_FAILURE)],
)
async def test_read_overflow_refuses_what_is_not_this_sessions(
    reference: str, category: ErrorCategory
) -> None:
    backend = Backend()
    backend.rows[("other", "0f8fad5b-d9cb-469f-a165-70867728950e")] = "theirs"
    ctx = _ctx(SessionOverflow(backend, "mine"))
    with pytest.raises(ToolError) as caught:
        await read_tool.read_overflow(read_tool.ReadOverflowParams(reference=reference), ctx)
    assert caught.value.category is category
    assert "theirs" not in caught.value.message


def _ctx(access: Any) -> ToolContext:
    async def publish(_items: Any) -> None: ...

    return ToolContext("tc", "/", ("/",), None, None, publish, lambda _c: None,  # type: ignore[arg-type]
                       overflow=access)
