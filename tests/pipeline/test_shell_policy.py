"""The runner with the shell policy wired in: strictest wins across the policy, the mode and the
rules; trust per workspace; plugin sets; config errors; the local runner's sandbox and env."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from acpd.daemon.config import load_config
from acpd.daemon.errors import ConfigError
from acpd.daemon.local import LocalCommandRunner
from acpd.tools.capabilities import CommandRequest
from acpd.tools.permissions import PermissionAnswer
from acpd.tools.shellpolicy import ShellPolicies, ShellPolicySettings
from tests.pipeline.conftest import Rig, RigFactory

pytestmark = pytest.mark.anyio

ALLOWED = "echo hi"
ASKED = "python3 -c 'print(1)'"
DENIED = "curl https://example.com"


def with_policy(rig: RigFactory, tmp_path: Path, *, trust: Any = "provisional",
                trusted: tuple[str, ...] = (), **kw: Any) -> Rig:
    r = rig(**kw)
    r.pipeline.shell = ShellPolicies(ShellPolicySettings(
        None, trust, trusted, (tmp_path / "no-plugins",)))
    return r


@pytest.mark.parametrize(("mode", "command", "asked", "ran"), [
    ("ask", ALLOWED, False, True),
    ("auto", ALLOWED, False, True),
    ("read-only", ALLOWED, False, False),
    ("ask", ASKED, True, True),
    ("auto", ASKED, True, True),
    ("ask", DENIED, False, False),
    ("auto", DENIED, False, False),
])
async def test_policy_mode_matrix(rig: RigFactory, tmp_path: Path, mode: str, command: str,
                                  asked: bool, ran: bool) -> None:
    r = with_policy(rig, tmp_path, mode=mode, answers=["allow_once"])
    result = await r.call("bash", {"command": command})
    assert bool(r.observer.asked) is asked
    assert (result.error is None) is ran
    if asked:
        assert r.observer.asked[0].title.startswith(f"{command} (in ")
    (line,) = r.audit()
    assert line["shell_policy"] is not None and len(line["policy_hash"]) == 16
    assert line["policy_hash"] != line["rules_hash"]


async def test_a_policy_deny_reaches_the_model_with_its_reasons(
    rig: RigFactory, tmp_path: Path
) -> None:
    r = with_policy(rig, tmp_path, mode="auto")
    result = await r.call("bash", {"command": DENIED})
    assert result.error is not None and result.error.category.value == "PolicyBlocked"
    assert "[tool_error]" in result.text and "curl reaches the network" in result.text
    assert r.observer.final_text().startswith("Blocked: the shell policy denies it")


async def test_always_allow_is_per_command_and_never_lifts_a_policy_deny(
    rig: RigFactory, tmp_path: Path
) -> None:
    answers: list[PermissionAnswer] = ["allow_always", "reject_once"]
    r = with_policy(rig, tmp_path, answers=answers)
    assert (await r.call("bash", {"command": ASKED})).error is None
    assert (await r.call("bash", {"command": ASKED})).error is None
    assert len(r.observer.asked) == 1
    assert (await r.call("bash", {"command": ASKED + "; python3 -c 'print(2)'"})).error
    assert len(r.observer.asked) == 2
    # An "always allow" stored for a command the policy denies changes nothing.
    from acpd.tools.permissions import approval_key

    spec = r.pipeline.registry.resolve("bash")
    assert spec is not None
    r.env.approvals.set(approval_key(spec, {"command": DENIED}), True)
    refused = await r.call("bash", {"command": DENIED})
    assert refused.error is not None and r.audit()[-1]["decided_by"] == "policy"


async def test_an_allow_rule_cannot_lift_a_policy_ask_and_an_ask_rule_beats_an_allow(
    rig: RigFactory, tmp_path: Path
) -> None:
    r = with_policy(rig, tmp_path, mode="auto", rules={"bash": [("python3 *", "allow"),
                                                                ("echo *", "ask")]},
                    answers=["reject_once", "reject_once"])
    assert (await r.call("bash", {"command": ASKED})).error is not None
    assert (await r.call("bash", {"command": ALLOWED})).error is not None
    assert [v.title.rsplit(" (in ", 1)[0] for v in r.observer.asked] == [ASKED, ALLOWED]


async def test_untrusted_turns_ask_into_deny_and_trusted_workspaces_run_workspace_code(
    rig: RigFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Unconfined: in the kernel sandbox a provisional workspace runs builds too (see
    # test_a_sandboxed_provisional_workspace_runs_its_build below).
    monkeypatch.setenv("ACPD_SANDBOX", "off")
    untrusted = with_policy(rig, tmp_path, trust="untrusted")
    result = await untrusted.call("bash", {"command": ASKED})
    assert result.error is not None and untrusted.observer.asked == []
    assert "trust.untrusted" in untrusted.audit()[-1]["shell_policy"]["rules"]

    ws = tmp_path / "ws"
    (ws / "Makefile").write_text("all:\n\t@echo built\n")
    provisional = with_policy(rig, tmp_path, answers=["reject_once"])
    assert (await provisional.call("bash", {"command": "make"})).error is not None
    assert len(provisional.observer.asked) == 1
    trusted = with_policy(rig, tmp_path, trusted=(str(tmp_path),))
    made = await trusted.call("bash", {"command": "make"})
    assert made.error is None and "built" in made.text and trusted.observer.asked == []


async def test_workspace_plugins_load_only_for_trusted_workspaces(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    plugin = ws / ".acpd" / "plugins" / "strict"
    plugin.mkdir(parents=True)
    (plugin / "plugin.toml").write_text('[shell]\nblocked_commands = ["ls"]\n')
    user = tmp_path / "user-plugins"
    plain = ShellPolicies(ShellPolicySettings(plugin_dirs=(user,)))
    assert plain.plugin_dirs_for(str(ws)) == (user,)
    decision = await plain.judge("ls", cwd=str(ws), roots=(str(ws),))
    assert decision.verdict == "allow"

    trusting = ShellPolicies(ShellPolicySettings(plugin_dirs=(user,),
                                                 trusted_workspaces=(str(ws),)))
    assert trusting.plugin_dirs_for(str(ws)) == (user, plugin.parent)
    assert trusting.trust_for(str(ws / "sub")) == "trusted"
    decision = await trusting.judge("ls", cwd=str(ws), roots=(str(ws),))
    assert decision.verdict == "deny"
    # Sessions on the same plugin set share one handle; another set gets its own.
    same = await trusting.handle_for(str(ws))
    assert same is await trusting.handle_for(str(ws))
    other = await trusting.handle_for(str(tmp_path))
    assert other is not same and len(trusting.handles()) == 2


async def test_a_policy_that_cannot_judge_denies(tmp_path: Path) -> None:
    shell = ShellPolicies(ShellPolicySettings())

    async def broken(cwd: str, session_id: str = "") -> Any:
        raise RuntimeError("tree-sitter is missing")

    shell.handle_for = broken  # type: ignore[method-assign]
    decision = await shell.judge("ls", cwd=str(tmp_path), roots=(str(tmp_path),))
    assert decision.verdict == "deny" and "tree-sitter is missing" in decision.reasons[0]


@pytest.mark.parametrize(("body", "field"), [
    ('trust = "sometimes"', "trust"),
    ('trusted_workspaces = ["relative/dir"]', "trusted_workspaces"),
    ('plugin_dirs = [""]', "plugin_dirs"),
    ('env_blocklist = ["BAD NAME"]', "env_blocklist"),
    ('auto_rollback_exit_codes = [0]', "auto_rollback_exit_codes"),
    ('policy_file = "/nonexistent/policy.toml"', "policy_file"),
    ('policy_file = "{bad}"', "not a valid shell policy"),
])
def test_bad_shell_settings_are_config_errors(tmp_path: Path, body: str, field: str) -> None:
    bad = tmp_path / "bad-policy.toml"
    bad.write_text("[policy]\nno_such_key = 1\n")
    config = tmp_path / "acpd.toml"
    config.write_text("[tools.shell]\n" + body.replace("{bad}", str(bad)) + "\n")
    with pytest.raises(ConfigError, match=field):
        load_config(str(config))


def test_shell_settings_load(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[blocklist]\ncommands = ["terraform"]\n')
    config = tmp_path / "acpd.toml"
    config.write_text(f'[tools.shell]\npolicy_file = "{policy}"\ntrust = "untrusted"\n'
                      'trusted_workspaces = ["~/work"]\nenv_blocklist = ["MY_*"]\n')
    shell = load_config(str(config)).tools.shell
    assert shell.policy_file == str(policy) and shell.trust == "untrusted"
    assert shell.trusted_workspaces == [os.path.expanduser("~/work")]
    assert shell.plugin_paths()[0].name == "plugins" and shell.env_blocklist == ["MY_*"]


async def test_a_policy_file_from_the_config_judges(rig: RigFactory, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[blocklist]\ncommands = ["echo"]\n')
    r = rig(mode="auto")
    r.pipeline.shell = ShellPolicies(ShellPolicySettings(policy_file=policy))
    assert (await r.call("bash", {"command": "echo hi"})).error is not None


# --- the local runner ----------------------------------------------------------------------


async def _run(runner: LocalCommandRunner, command: str, cwd: str,
               roots: tuple[str, ...]) -> str:
    async def nothing(*_: Any) -> None:
        return None

    request = CommandRequest(command, cwd, 10.0, 1 << 16, roots=roots)
    return (await runner.run(request, nothing, nothing)).output


async def test_local_env_blocklist_is_configurable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_PRIVATE_THING", "p1")
    monkeypatch.setenv("GITHUB_TOKEN", "t1")
    show = 'echo "[$MY_PRIVATE_THING][$GITHUB_TOKEN]"'
    roots = (str(tmp_path),)
    assert await _run(LocalCommandRunner(), show, str(tmp_path), roots) == "[p1][]\n"
    custom = LocalCommandRunner(env_blocklist=["my_*"])
    assert await _run(custom, show, str(tmp_path), roots) == "[][t1]\n"


async def test_local_cwd_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "out").symlink_to(tmp_path)
    runner = LocalCommandRunner()
    assert await _run(runner, "pwd", str(ws), (str(ws),)) == f"{ws}\n"
    for outside in (str(tmp_path), str(ws / "out")):
        with pytest.raises(PermissionError, match="outside the workspace"):
            await _run(runner, "pwd", outside, (str(ws),))
    await anyio.lowlevel.checkpoint()


async def test_a_sandboxed_provisional_workspace_runs_its_build(
    rig: RigFactory, tmp_path: Path
) -> None:
    """With the kernel sandbox, a build's worst case stays inside the workspace (and can be
    undone), so a provisional workspace runs it without a prompt; untrusted still denies."""
    from acpd.sandbox.status import sandbox_status

    if not sandbox_status().available:
        pytest.skip(f"no kernel sandbox here: {sandbox_status().reason}")
    provisional = with_policy(rig, tmp_path, answers=["reject_once"])
    (tmp_path / "ws" / "Makefile").write_text("all:\n\t@echo built\n")
    made = await provisional.call("bash", {"command": "make"})
    assert made.error is None and "built" in made.text and provisional.observer.asked == []
    untrusted = with_policy(rig, tmp_path, trust="untrusted")
    assert (await untrusted.call("bash", {"command": "make"})).error is not None


async def test_code_allowed_only_because_it_is_sandboxed_cannot_plant_what_git_obeys(
    rig: RigFactory, tmp_path: Path
) -> None:
    """Red-team 6 A1: a build the sandbox lets run cannot create `.git/commondir` (git would
    then take its config from a workspace directory, on the user's next git run outside the
    sandbox); git allowed on its own merits still writes its own data."""
    from acpd.sandbox.status import sandbox_status

    if not sandbox_status().available:
        pytest.skip(f"no kernel sandbox here: {sandbox_status().reason}")
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        await anyio.run_process(["git", *args], cwd=ws, env=env)
    (ws / "Makefile").write_text(
        "all:\n\t@echo ../g > .git/commondir; mkdir .git/worktrees; echo done\n")
    r = with_policy(rig, tmp_path, answers=["reject_once"])
    made = await r.call("bash", {"command": "make"})
    assert made.error is None and "done" in made.text and r.observer.asked == []
    assert not (ws / ".git" / "commondir").exists()
    assert not (ws / ".git" / "worktrees").exists()
    # In plain bash the same recipe does plant it: the class is real.
    await anyio.run_process(["make", "-s"], cwd=ws, env=env)
    assert (ws / ".git" / "commondir").exists()
    (ws / ".git" / "commondir").unlink()
    (ws / ".git" / "worktrees").rmdir()
    committed = await r.call("bash", {"command": "git commit -q --allow-empty -m two"})
    assert committed.error is None and r.observer.asked == []
    log = (await anyio.run_process(["git", "log", "--oneline"], cwd=ws, env=env)).stdout
    assert len(log.splitlines()) == 2
