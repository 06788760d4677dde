"""Behaviour of the judge beyond the corpus: trust, network, permissions, examples, limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy, compile_policy
from acpd.policy.rules import PolicyError, build, load_base
from acpd.policy.text import strip_line_continuations
from acpd.policy.words import expand


def _policy(toml: str, tmp_path: Path) -> CompiledPolicy:
    path = tmp_path / "p.toml"
    path.write_text(toml)
    return compile_policy(load_base(path)[0])


def test_decision_shape_and_hash(reference: CompiledPolicy, workspace: str) -> None:
    d = reference.judge("ls && rm -rf ./victim", cwd=workspace)
    assert d.verdict == "deny"
    assert "destroy.rm" in d.rules and "read.tools" in d.rules
    assert d.policy_hash == reference.hash and len(d.policy_hash) == 16
    assert set(d.to_json()) == {"verdict", "reasons", "rules", "policy_hash"}
    again = compile_policy(reference.policy)
    assert again.hash == reference.hash


def test_strictest_wins_not_first_match(tmp_path: Path, workspace: str) -> None:
    pol = _policy("""
[policy]
inherit_default = false
trust = "trusted"
[[rules]]
id = "allow-all-git"
verdict = "allow"
commands = ["git"]
[[rules]]
id = "deny-push"
verdict = "deny"
commands = ["git"]
subcommands = ["push"]
""", tmp_path)
    assert pol.judge("git status", cwd=workspace).verdict == "allow"
    assert pol.judge("git push", cwd=workspace).verdict == "deny"


def test_trust_levels(default: CompiledPolicy, workspace: str) -> None:
    assert default.judge("make test", cwd=workspace, trust="trusted").verdict == "allow"
    assert default.judge("make test", cwd=workspace, trust="provisional").verdict == "ask"
    assert default.judge("make test", cwd=workspace, trust="untrusted").verdict == "deny"
    assert default.judge("ls -la", cwd=workspace, trust="untrusted").verdict == "allow"
    broken = "ls (("
    assert default.judge(broken, cwd=workspace, trust="provisional").verdict == "ask"
    assert default.judge(broken, cwd=workspace, trust="untrusted").verdict == "deny"
    script = "./scripts/build.sh --fast"
    assert default.judge(script, cwd=workspace, trust="trusted").verdict == "allow"
    assert default.judge(script, cwd=workspace, trust="provisional").verdict == "ask"


def test_network_gate(tmp_path: Path, workspace: str) -> None:
    base = """
[policy]
inherit_default = false
trust = "trusted"
allow_network = {net}
[network]
commands = ["curl"]
[[rules]]
id = "curl"
verdict = "allow"
commands = ["curl"]
"""
    off = _policy(base.format(net="false"), tmp_path)
    on = _policy(base.format(net="true"), tmp_path)
    assert off.judge("curl https://example.com", cwd=workspace).verdict == "deny"
    assert on.judge("curl https://example.com", cwd=workspace).verdict == "allow"


def test_tool_permissions_and_legacy(tmp_path: Path, workspace: str) -> None:
    pol = _policy("""
[policy]
inherit_default = false
trust = "trusted"
[[tools.permissions.bash]]
pattern = "cargo *"
action = "allow"
[[tools.permissions.bash]]
pattern = "*sudo*"
action = "deny"
[tools.shell]
blocked_commands = ["terraform"]
confirm_patterns = ["git push"]
timeout = 30
""", tmp_path)
    assert pol.judge("cargo build", cwd=workspace).verdict == "allow"
    assert pol.judge("CARGO build", cwd=workspace).verdict == "allow"  # seeds: case-insensitive
    assert pol.judge("cargo-evil build", cwd=workspace).verdict == "ask"
    assert pol.judge("echo sudo", cwd=workspace).verdict == "deny"
    assert pol.judge("terraform apply", cwd=workspace).verdict == "deny"
    assert pol.judge("git push origin", cwd=workspace).verdict == "ask"
    # an allow glob cannot lift the blocklist or a deny found elsewhere on the line
    assert pol.judge("cargo build && rm -rf /", cwd=workspace).verdict != "allow"
    assert pol.judge("cargo build $(id)", cwd=workspace).verdict == "deny"


def test_rule_examples_are_checked_at_load(tmp_path: Path) -> None:
    bad = """
[policy]
inherit_default = false
[[rules]]
id = "push-force"
verdict = "deny"
commands = ["git"]
subcommands = ["push"]
options = ["--force"]
match = ["git push -f"]
"""
    with pytest.raises(PolicyError, match="does not match its example 'git push -f'"):
        _policy(bad, tmp_path)
    bad2 = bad.replace('match = ["git push -f"]', 'not_match = ["git push --forc"]')
    with pytest.raises(PolicyError, match="counter-example"):
        _policy(bad2, tmp_path)


def test_unknown_keys_and_bad_values_are_errors() -> None:
    with pytest.raises(PolicyError):
        build({"rules": [{"id": "x", "verdict": "maybe", "commands": ["ls"]}]}, "t")
    with pytest.raises(PolicyError):
        build({"rules": [{"id": "x", "verdict": "allow", "commands": ["ls"], "typo": 1}]}, "t")
    with pytest.raises(PolicyError):
        build({"rules": [{"id": "x", "verdict": "allow", "commands": ["ls"], "check": "no"}]},
              "t")
    with pytest.raises(PolicyError):
        build({"rules": [{"id": "a", "verdict": "allow", "commands": ["ls"]},
                         {"id": "a", "verdict": "deny", "commands": ["ls"]}]}, "t")


def test_input_cap_and_nul(reference: CompiledPolicy, workspace: str) -> None:
    huge = "echo " + "a" * 70_000
    d = reference.judge(huge, cwd=workspace)
    assert d.verdict == "deny" and "input.too-large" in d.rules
    assert reference.judge("ls\x00", cwd=workspace).verdict == "deny"


def test_line_continuation() -> None:
    assert strip_line_continuations("r\\\nm -rf x") == "rm -rf x"
    assert strip_line_continuations("echo 'a\\\nb'") == "echo 'a\\\nb'"
    assert strip_line_continuations('echo "it\'s \\\nok"') == "echo \"it's ok\""


def test_line_continuation_judged(reference: CompiledPolicy, workspace: str) -> None:
    assert reference.judge("r\\\nm -rf ./victim", cwd=workspace).verdict == "deny"
    assert reference.judge("cargo build \\\n  --release", cwd=workspace).verdict == "allow"


def test_words() -> None:
    home = "/home/u"
    assert expand("$'\\x72\\x6d'", {}, home).alternatives == (("rm",),)
    assert expand("a{b,c}d", {}, home).alternatives == (("abd", "acd"),)
    assert expand("'$(x)'", {}, home).alternatives == (("$(x)",),)
    assert expand("$Y", {}, home).dynamic
    assert expand('"$X"', {"X": ("a b",)}, home).alternatives == (("a b",),)
    assert expand("$X", {"X": ("a b",)}, home).alternatives == (("a", "b"),)
    assert expand("~/x", {}, home).alternatives == (("/home/u/x",),)


@pytest.mark.parametrize("cmd", [
    "git push --force-with-lease origin main", "git -C . push --mirror", "git push -fu origin",
    "git push origin +HEAD:main", "xargs git push -f", "git -c core.editor=x commit",
    "env -S 'rm -rf x'", "watch -n1 rm x", "flock /tmp/l -c 'rm -rf x'", "eval \"rm -rf x\"",
    "find . -delete", "ionice -c3 rm x", "exec rm x", "coproc RM { rm x; }",
    "sh -c 'sh -c \"rm x\"'", "cat .env.local", "echo x > .git/config",
    "X=rm; Y=$X; $Y -rf x", "for c in rm; do $c -rf x; done", "cat /etc/../root/.ssh/id_rsa",
])
def test_more_attacks_are_denied(reference: CompiledPolicy, workspace: str, cmd: str) -> None:
    assert reference.judge(cmd, cwd=workspace).verdict == "deny", cmd


@pytest.mark.parametrize("cmd", [
    "python3 -c 1", "bash -c \"$CMD\"", "$CMD", "git push $REMOTE", "cat \"$FILE\"",
    "/opt/tool/bin/ls", "some-unknown-tool", "npm run deploy",
    "find src -name '*.py' | xargs wc -l",  # xargs feeds unknown paths: ask
])
def test_unknowns_ask(reference: CompiledPolicy, workspace: str, cmd: str) -> None:
    assert RANK[reference.judge(cmd, cwd=workspace).verdict] >= RANK["ask"], cmd


@pytest.mark.parametrize("cmd", [
    "git status", "git diff --stat HEAD~1 -- src/", "ls | wc -l", "grep -rn TODO src | head",
    "cargo test 2>&1 | tail -n 30", "mkdir -p build/out && cp README.md build/out/",
    "for f in src/*.py; do wc -l \"$f\"; done", "echo \"$HOME\" > out.txt", "cat < README.md",
    "git log --stat -n 1", "sed -i 's/a/b/' src/x.py", "find src -name '*.py' | sort | uniq -c",
])
def test_everyday_commands_allowed(reference: CompiledPolicy, workspace: str, cmd: str) -> None:
    assert reference.judge(cmd, cwd=workspace).verdict == "allow", (
        cmd, reference.judge(cmd, cwd=workspace))


def test_default_policy_sane(default: CompiledPolicy, workspace: str) -> None:
    def j(cmd: str) -> str:
        return default.judge(cmd, cwd=workspace, trust="trusted").verdict

    assert j("rm -rf build") == "ask"
    assert j("rm -rf ~") == "deny"
    assert j("cat /usr/include/stdio.h") == "allow"
    assert j("cat /etc/hostname") == "ask"
    assert j("ls > /tmp/out.txt") == "allow"
    assert j("curl https://example.com") == "deny"
    assert j("git push origin main") == "ask"
    assert j("echo x > .acpd/plugins/p/plugin.toml") == "deny"
    assert j("cargo build") == "allow"


def test_symlink_in_workspace_pointing_out(reference: CompiledPolicy, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to("/etc")
    d = reference.judge("cat link/hostname", cwd=str(ws))
    assert d.verdict == "deny" and "path.outside-read" in d.rules
    assert os.path.islink(ws / "link")


@pytest.mark.parametrize("cmd", [
    "$'\\0/", "./$'\\0'", "/usr/bin/$'\\0'", "cat $'a\\0b'", "echo x > $'\\0'",
    "python3 $'\\0x'", "sh $'\\0'", "cd $'\\0' && ls", "git show HEAD:$'\\0'",
])
def test_nul_in_a_computed_word_denies(reference: CompiledPolicy, workspace: str,
                                       cmd: str) -> None:
    # `$'\0'` puts a NUL byte in a word's value: no program or file has such a name (and the
    # path calls would raise); the judge denies instead of crashing.
    assert reference.judge(cmd, cwd=workspace).verdict == "deny"
