"""Hot reload on a real directory with real file writes."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import anyio
import pytest

from acpd.policy.reload import PolicyHandle, ReloadReport, build_policy

from .conftest import REFERENCE

DENY_LS = '[shell]\nblocked_commands = ["ls"]\n'
ASK_CAT = """
[[shell.rules]]
id = "ask-cat"
verdict = "ask"
commands = ["cat"]
match = ["cat x"]
"""


def _plugin(root: Path, name: str, text: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    path = folder / "plugin.toml"
    tmp = folder / ".plugin.toml.tmp"
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[PolicyHandle, Path, Path, list[ReloadReport]]:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    reports: list[ReloadReport] = []
    handle = PolicyHandle(REFERENCE, [plugins], on_reload=reports.append)
    assert handle.last_report.errors == ()
    return handle, plugins, ws, reports


def _verdict(handle: PolicyHandle, ws: Path, cmd: str = "ls -la") -> str:
    return handle.judge(cmd, cwd=str(ws)).verdict


def test_valid_change_takes_effect(setup: tuple[PolicyHandle, Path, Path, list[ReloadReport]]
                                   ) -> None:
    handle, plugins, ws, reports = setup
    assert _verdict(handle, ws) == "allow"
    old = handle.current.hash
    _plugin(plugins, "strict", DENY_LS)
    report = handle.rebuild()
    assert report.changed and not report.errors and report.policy_hash != old
    assert any(s.endswith("strict/plugin.toml") for s in report.sources)
    assert _verdict(handle, ws) == "deny"
    assert reports[-1] is report
    # removing the whole plugin folder is a deliberate removal: the policy loosens again
    (plugins / "strict" / "plugin.toml").unlink()
    (plugins / "strict").rmdir()
    assert handle.rebuild().changed and _verdict(handle, ws) == "allow"


@pytest.mark.parametrize("breakage", ["malformed", "huge", "symlink", "deleted", "allow-rule",
                                      "world-writable", "bad-example"])
def test_broken_overlay_keeps_last_good(
    setup: tuple[PolicyHandle, Path, Path, list[ReloadReport]], tmp_path: Path, breakage: str
) -> None:
    handle, plugins, ws, reports = setup
    path = _plugin(plugins, "strict", DENY_LS)
    handle.rebuild()
    good = handle.current.hash
    assert _verdict(handle, ws) == "deny"
    if breakage == "malformed":
        path.write_text("[shell\nblocked_commands = [")
    elif breakage == "huge":
        path.write_text(DENY_LS + "#" * (300 * 1024))
    elif breakage == "symlink":
        target = tmp_path / "elsewhere.toml"
        target.write_text(DENY_LS)
        path.unlink()
        path.symlink_to(target)
    elif breakage == "deleted":
        path.unlink()
    elif breakage == "allow-rule":
        path.write_text('[[shell.rules]]\nid = "x"\nverdict = "allow"\ncommands = ["rm"]\n')
    elif breakage == "world-writable":
        os.chmod(path, 0o666)
    elif breakage == "bad-example":
        path.write_text(DENY_LS + ASK_CAT.replace('match = ["cat x"]', 'match = ["ls x"]'))
    report = handle.rebuild()
    assert report.errors, breakage
    assert report.kept_last_good and not report.changed
    assert report.policy_hash == good == handle.current.hash
    assert _verdict(handle, ws) == "deny"
    assert reports[-1] is report
    # a later valid write is picked up again
    if path.is_symlink():
        path.unlink()
    _plugin(plugins, "strict", DENY_LS + ASK_CAT)
    report = handle.rebuild()
    assert not report.errors and report.changed
    assert _verdict(handle, ws, "cat README.md") == "ask"


def test_permission_denied_overlay(setup: tuple[PolicyHandle, Path, Path, list[ReloadReport]]
                                   ) -> None:
    handle, plugins, ws, _ = setup
    path = _plugin(plugins, "strict", DENY_LS)
    handle.rebuild()
    good = handle.current.hash
    folder = path.parent
    path.write_text(DENY_LS + ASK_CAT)  # a change the daemon must not be able to read
    os.chmod(folder, 0o000)
    try:
        if os.geteuid() == 0:
            # root bypasses the mode bits: the file is still readable, so the loader must
            # check the bits itself for "permission denied" to mean anything
            assert (folder / "plugin.toml").read_text().startswith("[shell]")
        else:
            with pytest.raises(PermissionError):
                (folder / "plugin.toml").read_text()
        report = handle.rebuild()
    finally:
        os.chmod(folder, 0o755)
    assert report.errors and "strict" in report.errors[0]
    assert report.kept_last_good and report.policy_hash == good
    assert _verdict(handle, ws) == "deny"
    assert _verdict(handle, ws, "cat README.md") == "allow"  # the unreadable change is not used


def test_broken_config_keeps_last_good(tmp_path: Path) -> None:
    config = tmp_path / "policy.toml"
    config.write_text(REFERENCE.read_text())
    ws = tmp_path / "ws"
    ws.mkdir()
    handle = PolicyHandle(config, [])
    good = handle.current.hash
    config.write_text(REFERENCE.read_text() + "\n[[rules]]\nid = 'x'\n")
    report = handle.rebuild()
    assert report.errors and report.kept_last_good and report.policy_hash == good
    config.write_text("not toml at all [")
    assert handle.rebuild().policy_hash == good
    config.unlink()
    assert handle.rebuild().policy_hash == good
    assert handle.judge("rm -rf ./victim", cwd=str(ws)).verdict == "deny"


def test_broken_config_at_start_uses_default(tmp_path: Path) -> None:
    config = tmp_path / "policy.toml"
    config.write_text("[policy]\ntrust = 'yes'\n")
    handle = PolicyHandle(config, [])
    assert handle.last_report.errors and handle.last_report.kept_last_good
    assert handle.current.policy.policy.name == "default"


@pytest.mark.slow
def test_swaps_under_concurrent_decisions(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    cmd = "ls -la && cat README.md | grep x"
    # the two policies the swaps alternate between, and what each says about cmd
    _plugin(plugins, "p", DENY_LS)
    pol_a, _, _ = build_policy(REFERENCE, [plugins])
    _plugin(plugins, "p", ASK_CAT)
    pol_b, _, _ = build_policy(REFERENCE, [plugins])
    expected = {}
    for pol in (pol_a, pol_b):
        d = pol.judge(cmd, cwd=str(ws))
        expected[pol.hash] = (d.verdict, d.rules)
    assert expected[pol_a.hash] != expected[pol_b.hash]
    handle = PolicyHandle(REFERENCE, [plugins])
    assert handle.current.hash == pol_b.hash

    results: list[tuple[str, str, tuple[str, ...]]] = []
    stop = threading.Event()
    lock = threading.Lock()

    swapping = threading.Event()

    def decide(n: int) -> None:
        # Start once the swaps have: a decider must not finish its share before the
        # swapper thread was first scheduled (decisions are much faster than a rebuild).
        swapping.wait(30)
        local: list[tuple[str, str, tuple[str, ...]]] = []
        hashes: set[str] = set()
        # At least n each, and on until this decider has met a swap (or the swaps are
        # over), pausing now and then so that four busy deciders do not starve the swapper
        # thread of the GIL.
        while len(local) < n or (len(hashes) < 2 and not stop.is_set()):
            d = handle.judge(cmd, cwd=str(ws))
            local.append((d.policy_hash, d.verdict, d.rules))
            hashes.add(d.policy_hash)
            if len(local) % 100 == 0:
                time.sleep(0.0005)
        with lock:
            results.extend(local)

    def swap() -> None:
        for i in range(100):
            _plugin(plugins, "p", DENY_LS if i % 2 == 0 else ASK_CAT)
            report = handle.rebuild()
            assert not report.errors
            swapping.set()
            time.sleep(0.001)
        stop.set()

    deciders = [threading.Thread(target=decide, args=(2_500,)) for _ in range(4)]
    swapper = threading.Thread(target=swap)
    for t in [*deciders, swapper]:
        t.start()
    for t in [*deciders, swapper]:
        t.join(timeout=100)
    assert stop.is_set() and len(results) >= 10_000
    seen = {h for h, _, _ in results}
    assert seen <= set(expected)
    for h, verdict, rules in results:
        assert (verdict, rules) == expected[h], "a decision mixed two policies"
    assert len(seen) == 2, "the swaps were not observed by the deciders"


@pytest.mark.slow
def test_watcher_reloads_on_write(setup: tuple[PolicyHandle, Path, Path, list[ReloadReport]]
                                  ) -> None:
    handle, plugins, ws, reports = setup

    async def main() -> None:
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: handle.watch(stop_event=stop))
            await anyio.sleep(0.3)
            with anyio.fail_after(10):
                _plugin(plugins, "strict", DENY_LS)
                while _verdict(handle, ws) != "deny":  # noqa: ASYNC110 (polls a decision)
                    await anyio.sleep(0.01)
                (plugins / "strict" / "plugin.toml").write_text("[shell\n")
                while not reports or not reports[-1].errors:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            assert _verdict(handle, ws) == "deny"
            stop.set()

    anyio.run(main)
