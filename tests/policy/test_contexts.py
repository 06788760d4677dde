"""Issue 15, classes 1 and 4 and the substitution scan, checked against real bash.

Each spelling below is run by bash in a scratch directory with a canary payload (`touch P`);
the test asserts that bash really runs the payload (so the spelling is a real attack, not a
guess) and that the default policy does not allow it. Spellings are grouped by context:
arithmetic, subscripts, builtins that name variables, expansions, here-documents.

The environment blocklist has two tiers (see `acpd.policy.blocklist`): deny for variables that
make bash, the loader, git, an interpreter or a toolchain load code or config from where the
command chose (PATH, HOME, XDG_*, GIT_*, BASH_ENV, LD_*, PYTHONPATH, NODE_OPTIONS, RUSTC_WRAPPER,
GOFLAGS, NPM_CONFIG_*, MAKEFLAGS, *PAGER and *EDITOR unless `cat`...), ask for variables that
pick a compiler, flags or an output location for a build (CC, CFLAGS, CARGO_TARGET_DIR...).
Every way a builtin can assign goes through it, not only `VAR=value cmd`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy

PAYLOADS = ("$(touch P)", "`touch P`")

ARITHMETIC = [
    "(( 'a[{p}]' ))", "(( a[{p}] ))", "echo $(( 'a[{p}]' ))", "x='a[{p}]'; echo $(( x ))",
    "x='a[{p}]'; (( x ))", "echo ${{a['{p}']}}", "a['{p}']=1", "test -v 'a[{p}]'",
    "[ -v 'a[{p}]' ]", "[[ -v 'a[{p}]' ]]", "[[ x -eq 'a[{p}]' ]]", "[[ 'a[{p}]' -eq 1 ]]",
    "declare -a 'a[{p}]=1'", "typeset 'a[{p}]=1'", "let 'a[{p}]=1'", "let 'x=a[{p}]'",
    "printf -v 'a[{p}]' x", "read 'a[{p}]' </dev/null", "x=abc; echo ${{x:'a[{p}]':1}}",
    "a=(1 2); echo ${{#a['{p}']}}", "a=(1 2); unset 'a[{p}]'", "echo ${{!a['{p}']}}",
    "echo $[ 'a[{p}]' ]", "for (( i='a[{p}]'; i<1; i++ )); do :; done",
    "declare -i x; x='a[{p}]'", "x='a[{p}]'; declare -n r=x; echo $((r))",
    "declare -n r='a[{p}]'; echo $r", "x='a[{p}]'; echo ${{!x}}", "x='a[{p}]'; [[ -v $x ]]",
    "set -- 'a[{p}]'; echo $(( $1 ))", "a=(1 2); echo \"${{a['{p}']}}\"",
    "x=${{y:-'a[{p}]'}}; echo $((x))", "echo $(( ${{y:-'a[{p}]'}} ))",
]
"""Code in arithmetic and subscript contexts (class 1): each runs `{p}` in bash 5.2."""

FROM_A_FILE = [
    "read x < data.txt; echo $(( x ))", "read x < data.txt; [[ $x -eq 1 ]]",
    "read x < data.txt; [[ x -eq 1 ]]", "read x < data.txt; let x",
    "read x < data.txt; declare -i y=$x", "read x < data.txt; a=(1); echo ${a[x]}",
    "read x < data.txt; a=(1); echo ${a[$x]}", "read x < data.txt; s=abc; echo ${s:x}",
    "read x < data.txt; echo ${!x}", "read x < data.txt; declare -n r=$x; echo $r",
    "read x < data.txt; printf -v \"$x\" y", "read x < data.txt; test -v \"$x\"",
    "read x < data.txt; echo $(( $x ))", "read x < data.txt; (( y = x ))",
    "for f in f*; do echo $(( f )); done", "for f in f*; do test -v \"$f\"; done",
    "mapfile -t arr < data.txt; echo $(( arr ))", "mapfile -t arr < data.txt; echo $(( arr[0] ))",
    "IFS= read -r x < data.txt; echo $((x))", "while read -r l; do (( l )); done < data.txt",
    "xargs -a data.txt -I{} sh -c 'echo {}'", "xargs -a data.txt -I % sh -c 'echo %'",
    "xargs -a data.txt -i sh -c 'echo {}'", "cat data.txt | xargs -I{} bash -c ': {}'",
]
"""A value from a file (written by the model) evaluated as arithmetic or a name: the file
`data.txt` holds `a[$(touch P)]` and a file is named `f[$(touch P)]`."""

SUBSTITUTIONS = [
    "cat <<EOF\n`touch P`\nEOF", "cat <<EOF\n${x:-`touch P`}\nEOF", "echo ${x:-`touch P`}",
    "echo \"${x:-`touch P`}\"", "echo ${x:-${y:-`touch P`}}", "echo ${x:=`touch P`}",
    "cat <<-EOF\n\t`touch P`\n\tEOF", "cat <<EOF\n${x:-${y:-${z:-`touch P`}}}\nEOF",
    "cat <<EOF | cat\n`touch P`\nEOF", "x=1; cat <<EOF\n${x#`touch P`}\nEOF",
    "cat <<EOF\n${x:-'`touch P`'}\nEOF", "f() { cat <<EOF\n`touch P`\nEOF\n}; f",
    "echo \"${x:-'`touch P`'}\"", "echo \"${x:-'$(touch P)'}\"",
    "printf -v a[\\$\\(touch\\ P\\)] x", "printf -v 'a[`touch P`]' x",
]
"""Backticks and `$(...)` that tree-sitter-bash reads as plain text (class 'What allow must
mean'): here-document bodies, `${x:-...}` operands, double-quoted single quotes."""

HARMLESS = [
    "cat <<'EOF'\n`touch P`\nEOF", "cat <<\\EOF\n$(touch P)\nEOF", "echo '`touch P`'",
    "echo ${x:-'`touch P`'}", "echo hi # `touch P`", "git commit -m 'fix `parse`'",
    "echo \\`touch P\\`", "echo $((1+2))", "x=3; echo $(( x * 2 ))", "a=(1 2); echo ${a[1]}",
    "read -r line < data.txt; echo \"$line\"", "for f in *.txt; do wc -l \"$f\"; done",
    "printf -v out '%s' hi; echo \"$out\"", "declare -i n=5; echo $n",
]
"""Quoted or escaped: bash runs nothing; the policy must not refuse them for that."""


def _bash_runs_payload(cmd: str, tmp: Path) -> bool:
    work = tmp / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    (work / "data.txt").write_text("a[$(touch P)]\n")
    (work / "f[$(touch P)]").write_text("")
    subprocess.run(["bash", "-c", cmd], cwd=work, stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=10,
                   env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work)})
    return (work / "P").exists()


def _cases() -> list[str]:
    return [c.format(p=p) for c in ARITHMETIC for p in PAYLOADS]


@pytest.mark.parametrize("cmd", _cases() + FROM_A_FILE + SUBSTITUTIONS)
def test_code_bash_runs_is_not_allowed(default: CompiledPolicy, tmp_path: Path,
                                       cmd: str) -> None:
    assert _bash_runs_payload(cmd, tmp_path), f"bash does not run the payload of {cmd!r}"
    decision = default.judge(cmd, cwd=str(tmp_path), roots=(str(tmp_path),))
    assert decision.verdict != "allow", (cmd, decision)


@pytest.mark.parametrize("cmd", HARMLESS)
def test_quoted_text_bash_does_not_run_is_not_refused(default: CompiledPolicy, tmp_path: Path,
                                                      cmd: str) -> None:
    assert not _bash_runs_payload(cmd, tmp_path)
    decision = default.judge(cmd, cwd=str(tmp_path), roots=(str(tmp_path),))
    assert not {"blocklist.backticks", "blocklist.command-substitution",
                "blocklist.subscript"} & set(decision.rules), (cmd, decision)


ASSIGNING = [
    "read {v} < p.txt", "printf -v {v} %s /tmp", "mapfile {v} < p.txt",
    "readarray -t {v} < p.txt", "declare {v}=/tmp", "declare \"{v}=/tmp\"",
    "x={v}; declare \"$x=/tmp\"", "typeset -x {v}=/tmp", "export '{v}'=/tmp", "local {v}=/tmp",
    "readonly {v}=/tmp", "let {v}=1", "(( {v}=1 ))", "(( {v}++ ))", "echo $(( {v}=1 ))",
    "(( {v}[0]=1 ))", "getopts a {v}", "select {v} in /tmp; do break; done",
    "for {v} in /tmp; do ls; done", "declare -n r={v}; r=/tmp", "declare -n r; r={v}; r=/tmp",
    "x={v}; declare -n r=$x", "echo ${{{v}:=/tmp}}", "echo ${{{v}=/tmp}}", "coproc {v} {{ :; }}",
    "wait -p {v}", "read -a {v} < p.txt", "builtin read {v} < p.txt",
    "command printf -v {v} x", "{v}=. git status", "env {v}=. git status",
    "for ((  {v}=0; {v}<1; {v}++ )); do :; done", "IFS=: read a {v} < p.txt", "unset {v}; ls",
    "r={v}; : ${{!r:=x}}",
]
"""Class 4: every way a builtin (or arithmetic) assigns a variable."""


@pytest.mark.parametrize("var", ["PATH", "HOME", "BASH_ENV", "GIT_DIR", "XDG_CONFIG_HOME",
                                 "LD_PRELOAD", "PYTHONPATH"])
@pytest.mark.parametrize("template", ASSIGNING)
def test_builtin_assignments_go_through_the_env_blocklist(default: CompiledPolicy,
                                                          workspace: str, var: str,
                                                          template: str) -> None:
    cmd = template.format(v=var)
    decision = default.judge(cmd, cwd=workspace)
    assert decision.verdict == "deny", (cmd, decision)


@pytest.mark.parametrize(("cmd", "verdict"), [
    ("HOME=. git status", "deny"), ("XDG_CONFIG_HOME=. git log", "deny"),
    ("GIT_CONFIG_GLOBAL=./x git log", "deny"), ("GIT_PAGER=./evil git log", "deny"),
    ("PAGER='sh -c id' git log", "deny"), ("EDITOR=./x git commit", "deny"),
    ("PYTHONSTARTUP=x.py python3 -c 1", "deny"), ("NODE_OPTIONS=--require=./x node a.js", "deny"),
    ("npm_config_script_shell=./x npm test", "deny"), ("RUSTC_WRAPPER=./x cargo build", "deny"),
    ("RUSTFLAGS='-C linker=./x' cargo build", "deny"), ("CARGO_HOME=. cargo build", "deny"),
    ("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=./x cargo run", "deny"),
    ("GOFLAGS=-toolexec=./x go build", "deny"), ("MAKEFLAGS=-f./x make", "deny"),
    ("TAR_OPTIONS=--to-command=./x tar -xf a.tar", "deny"), ("SSH_ASKPASS=./x git fetch", "deny"),
    ("LD_PRELOAD=./x.so ls", "deny"), ("BASH_ENV=./x bash -c ls", "deny"),
    ("RIPGREP_CONFIG_PATH=./rc rg x", "deny"), ("PERL5OPT=-Mx perl a.pl", "deny"),
    ("CC=./x make", "ask"), ("CFLAGS=-fplugin=./x.so make", "ask"),
    ("CARGO_TARGET_DIR=/elsewhere cargo build", "ask"),
    ("GIT_PAGER=cat git log", "allow"), ("PAGER=cat git log", "allow"),
    ("LC_ALL=C sort data.txt", "allow"), ("TZ=UTC date", "allow"),
])
def test_env_tiers(default: CompiledPolicy, workspace: str, cmd: str, verdict: str) -> None:
    decision = default.judge(cmd, cwd=workspace, trust="trusted")
    if verdict == "allow":
        assert decision.verdict == "allow", (cmd, decision)
    elif verdict == "ask":
        assert "env.ask" in decision.rules and decision.verdict != "allow", (cmd, decision)
    else:
        assert decision.verdict == "deny" and "blocklist.env" in decision.rules, (cmd, decision)


@pytest.fixture
def not_tmp() -> Iterator[Path]:
    """A directory outside /tmp (the default policy lets commands write under /tmp)."""
    base = Path(tempfile.mkdtemp(prefix="acpd-ctx-", dir="/var/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_symlink_created_between_two_decisions_is_judged_as_it_is_now(
        default: CompiledPolicy, not_tmp: Path) -> None:
    """Class 10: nothing about the file system is remembered from one decision to the next."""
    tmp_path = not_tmp
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    for cmd in ("echo x > lnk", "echo x > lnk/f", "cp README.md lnk/", "touch lnk/f"):
        link = ws / "lnk"
        if link.is_symlink():
            link.unlink()
        if "lnk/" in cmd:
            link.mkdir()
        first = default.judge(cmd, cwd=str(ws), roots=(str(ws),))
        assert first.verdict != "deny", (cmd, first)
        if link.is_dir() and not link.is_symlink():
            link.rmdir()
        link.symlink_to(outside)
        second = default.judge(cmd, cwd=str(ws), roots=(str(ws),))
        assert second.verdict == "deny" and "path.outside-write" in second.rules, (cmd, second)
        link.unlink()
        (ws / "lnk").mkdir()
        third = default.judge(cmd, cwd=str(ws), roots=(str(ws),))
        assert third.verdict == first.verdict, (cmd, third)
        (ws / "lnk").rmdir()


def test_a_workspace_root_swapped_for_a_symlink_is_seen(default: CompiledPolicy,
                                                        not_tmp: Path) -> None:
    tmp_path = not_tmp
    real = tmp_path / "real"
    other = tmp_path / "other"
    real.mkdir()
    other.mkdir()
    root = tmp_path / "root"
    root.symlink_to(real)
    assert default.judge(f"echo x > {real}/f", cwd=str(root)).verdict == "allow"
    root.unlink()
    root.symlink_to(other)
    assert default.judge(f"echo x > {real}/f", cwd=str(root)).verdict == "deny"
