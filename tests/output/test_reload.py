"""Hot reload of the output filters: config.toml and filters.toml on disk, a real watchfiles
watcher started through the daemon's hook (ShellPolicies.attach), the stage swapped whole."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup

from acpd.daemon.config import ToolsConfig, load_config
from acpd.tools.builtin.shell import SPECS as SHELL_SPECS
from acpd.tools.builtin.shell import shell_output
from acpd.tools.capabilities import CommandResult
from acpd.tools.outputreload import KEPT
from acpd.tools.pipeline import ToolPipeline
from acpd.tools.setup import Toolkit, build_toolkit

pytestmark = pytest.mark.anyio

BASH = SHELL_SPECS[0]
COMMAND = "cat notes.txt"
NOTES = "".join(f"{tag} line {i}\n" for i in range(20) for tag in ("KEEP", "OTHER", "noise"))


def rule(pattern: str, name: str = "notes") -> str:
    return (
        f'[[rules]]\nname = "{name}"\nmatch = {{ prefix = "cat notes.txt" }}\n'
        f'strategy = {{ type = "keep_matching", patterns = ["{pattern}"] }}\n'
    )


def toolkit(tmp_path: Path) -> Toolkit:
    """As the daemon builds it: config.toml and filters.toml in one directory."""
    config = tmp_path / "config.toml"

    def read_tools() -> ToolsConfig:  # a missing file is the defaults, as for the daemon
        return load_config(str(config)).tools if config.exists() else ToolsConfig()

    kit = build_toolkit(
        read_tools(), None, config_dir=tmp_path, config_file=config, reload_tools=read_tools
    )
    assert kit.reloader is not None
    return kit


def shown(pipeline: ToolPipeline) -> str:
    """What the model would get of `cat notes.txt` now (the exit-code note cut off)."""
    stage = pipeline.output  # read once, as a call does
    text = stage.prepare(BASH, {"command": COMMAND}, shell_output(CommandResult(NOTES, 0), 120))
    return text.text.removesuffix("[exit code: 0]").rstrip("\n")


def kept(tag: str) -> str:
    return "\n".join(f"{tag} line {i}" for i in range(20))


def put(path: Path, text: str) -> None:
    """Write whole, as editors that save by rename do (a reload never sees half a file)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def eventually(
    check: Callable[[], bool], what: str, write: tuple[Path, str] | None = None
) -> None:
    """Poll with a generous deadline, no assertion on how fast a reload is. `write` is done
    first and again every second until `check` passes: a watcher still starting up (or
    restarting on new files) may miss one event, never all of them."""
    deadline = 30.0
    end = time.monotonic() + deadline
    next_write = 0.0
    while True:
        if write is not None and time.monotonic() >= next_write:
            put(*write)
            next_write = time.monotonic() + 1.0
        if check():
            return
        if time.monotonic() > end:
            raise AssertionError(f"not seen within {deadline:.0f} s: {what}")
        await anyio.sleep(0.05)


async def notify(method: str, params: Any) -> None:
    return None


def starter(tg: TaskGroup) -> Callable[[Callable[[], Awaitable[None]]], None]:
    """The connection's `start_soon`, as ShellPolicies.attach takes it."""

    def start(fn: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await fn()

        tg.start_soon(run)

    return start


async def test_edits_on_disk_change_the_next_output(tmp_path: Path) -> None:
    filters = tmp_path / "filters.toml"
    config = tmp_path / "config.toml"
    filters.write_text(rule("^KEEP"))
    config.write_text("[tools.filters]\nenabled = true\n")
    kit = toolkit(tmp_path)
    pipeline = kit.pipeline
    assert shown(pipeline) == kept("KEEP")
    shell = pipeline.shell
    assert shell is not None
    async with anyio.create_task_group() as tg:
        shell.attach(starter(tg), notify)  # what the daemon does once its runtime loads

        edited = (filters, rule("^OTHER"))
        await eventually(lambda: shown(pipeline) == kept("OTHER"), "the edited rule", edited)

        # A rule disabled by name in config.toml.
        disabled = (config, '[tools.filters]\ndisabled = ["notes"]\n')
        await eventually(lambda: shown(pipeline) == NOTES.rstrip("\n"), "disabled", disabled)

        enabled = (config, "[tools.filters]\nenabled = true\n")
        await eventually(lambda: shown(pipeline) == kept("OTHER"), "enabled again", enabled)

        # A malformed file: the set in force stays, and the user is told why, once.
        in_force = pipeline.output.filters
        broken = (filters, rule("^KEEP") + "[[rules]\nname = 'broken\n")
        await eventually(lambda: KEPT in pipeline.output.warnings, "the kept warning", broken)
        assert pipeline.output.filters is in_force
        assert shown(pipeline) == kept("OTHER")
        stage = pipeline.output
        note = stage.take_warnings()
        assert note is not None and "not valid TOML" in note and KEPT in note
        assert stage.take_warnings() is None

        # A config.toml that does not load keeps the set in force too.
        bad_config = (config, "[tools.filters]\nenabled = 3\n")
        await eventually(
            lambda: any("enabled" in w for w in pipeline.output.warnings),
            "bad config",
            bad_config,
        )
        assert pipeline.output.filters is in_force
        put(config, "")
        await eventually(
            lambda: shown(pipeline) == kept("KEEP"), "good files", (filters, rule("^KEEP"))
        )

        # Deleted: the built-in rules (none of them matches `cat notes.txt`).
        filters.unlink()
        await eventually(
            lambda: (
                pipeline.output.filters is not None
                and pipeline.output.filters.match(COMMAND) is None
            ),
            "the built-in rules",
        )
        assert shown(pipeline) == NOTES.rstrip("\n")
        shell.close()  # the watchers end, and with them the task group


def test_a_bad_rule_is_skipped_and_the_good_ones_load(tmp_path: Path) -> None:
    filters = tmp_path / "filters.toml"
    filters.write_text(rule("^KEEP"))
    kit = toolkit(tmp_path)
    assert kit.reloader is not None
    # a backreference: RE2 (linear time) has none, so the rule is refused
    filters.write_text(rule("^OTHER") + rule("(a+)\\\\1$", name="hostile"))
    outcome = kit.reloader.rebuild()
    assert outcome.published
    assert shown(kit.pipeline) == kept("OTHER")
    assert any("hostile" in w for w in outcome.warnings)
    note = kit.pipeline.output.take_warnings()
    assert note is not None and "hostile" in note
    # A file with no usable rule left at all is a broken file: the set in force stays.
    in_force = kit.pipeline.output.filters
    filters.write_text(rule("^(KEEP", name="notes"))
    outcome = kit.reloader.rebuild()
    assert not outcome.published and kit.pipeline.output.filters is in_force
    assert "invalid regex" in outcome.warnings[0] and outcome.warnings[-1] == KEPT
    assert shown(kit.pipeline) == kept("OTHER")


def test_an_oversized_file_keeps_the_set_in_force(tmp_path: Path) -> None:
    filters = tmp_path / "filters.toml"
    filters.write_text(rule("^KEEP"))
    kit = toolkit(tmp_path)
    assert kit.reloader is not None
    in_force = kit.pipeline.output.filters
    filters.write_text(rule("^OTHER") + "# " + "x" * (1 << 20) + "\n")
    outcome = kit.reloader.rebuild()
    assert not outcome.published
    assert kit.pipeline.output.filters is in_force
    assert shown(kit.pipeline) == kept("KEEP")
    assert "byte limit" in outcome.warnings[0]
    assert "using the built-in filters" not in outcome.warnings[0]  # not what happens here
    assert outcome.warnings[-1] == KEPT


def test_a_call_in_flight_keeps_the_stage_it_read(tmp_path: Path) -> None:
    filters = tmp_path / "filters.toml"
    filters.write_text(rule("^KEEP"))
    kit = toolkit(tmp_path)
    assert kit.reloader is not None
    before = kit.pipeline.output  # what a running call holds
    filters.write_text(rule("^OTHER"))
    assert kit.reloader.rebuild().published
    result = shell_output(CommandResult(NOTES, 0), 120)
    old = before.prepare(BASH, {"command": COMMAND}, result).text
    new = kit.pipeline.output.prepare(BASH, {"command": COMMAND}, result).text
    assert old.startswith(kept("KEEP")) and new.startswith(kept("OTHER"))


def test_metrics_carry_over_and_a_tripped_rule_is_tried_again(tmp_path: Path) -> None:
    filters = tmp_path / "filters.toml"
    filters.write_text(rule("^KEEP"))
    kit = toolkit(tmp_path)
    reloader = kit.reloader
    assert reloader is not None
    shown(kit.pipeline)
    shown(kit.pipeline)
    first = kit.pipeline.output.filters
    assert first is not None
    first.metrics.record_timeout("notes")
    assert shown(kit.pipeline) == NOTES.rstrip("\n")  # tripped: skipped
    assert reloader.rebuild().published
    second = kit.pipeline.output.filters
    assert second is not None and second is not first
    assert second.metrics is first.metrics
    stats = second.metrics.snapshot()["notes"]
    assert stats.hits == 2 and stats.timeouts == 1
    assert shown(kit.pipeline) == kept("KEEP")  # tried again after the reload
    assert second.metrics.snapshot()["notes"].hits == 3


async def test_a_moved_filters_file_is_watched_where_it_now_is(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = tmp_path / "config.toml"
    (tmp_path / "filters.toml").write_text(rule("^KEEP"))
    (elsewhere / "mine.toml").write_text(rule("^OTHER"))
    kit = toolkit(tmp_path)
    reloader = kit.reloader
    assert reloader is not None and kit.pipeline.shell is not None
    async with anyio.create_task_group() as tg:
        kit.pipeline.shell.attach(starter(tg), notify)
        moved = (config, f'[tools.filters]\nfilters_path = "{elsewhere / "mine.toml"}"\n')
        await eventually(lambda: shown(kit.pipeline) == kept("OTHER"), "the new file", moved)
        assert reloader.watch_targets() == [config, elsewhere / "mine.toml"]
        edit = (elsewhere / "mine.toml", rule("^noise"))
        await eventually(lambda: shown(kit.pipeline) == kept("noise"), "an edit there", edit)
        kit.pipeline.shell.close()


async def test_watchers_start_with_attach_and_stop_with_close() -> None:
    from acpd.tools.shellpolicy import ShellPolicies, ShellPolicySettings

    shell = ShellPolicies(ShellPolicySettings())
    events: list[str] = []

    def watcher(name: str) -> Callable[[anyio.Event], Any]:
        async def run(stop: anyio.Event) -> None:
            events.append(f"{name} started")
            await stop.wait()
            events.append(f"{name} stopped")

        return run

    shell.add_watcher(watcher("early"))
    async with anyio.create_task_group() as tg:
        shell.attach(starter(tg), notify)
        shell.add_watcher(watcher("late"))
        await eventually(lambda: len(events) == 2, "both started")
        shell.close()
    assert sorted(events) == ["early started", "early stopped", "late started", "late stopped"]


def test_no_reloader_without_files() -> None:
    # `acpd tools run` builds its toolkit without a config directory: nothing to watch.
    assert build_toolkit(ToolsConfig(), None).reloader is None
