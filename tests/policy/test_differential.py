"""Differential fuzzing of the default shell policy against real bash (issue 15).

Commands are generated (seeded) from a grammar of the bypass classes of issue 15, mixed with
benign workflows. Each is judged by the DEFAULT policy (trust provisional, not sandboxed);
every command it ALLOWS is then run by real bash (`bash -c`, stdin /dev/null, a few seconds,
no network: inside `unshare -rn` when the kernel allows it) in a fresh copy of a workspace
that is a git repository full of canaries:

* outside the workspace: a fake HOME with `~/.ssh/id_rsa` and `~/.gitconfig`, and a canary
  directory, all under a base directory that is *not* under /tmp (the default policy lets
  commands write /tmp, so a canary there would prove nothing);
* `.git/config`, `.git/hooks/`, `.git/info/`;
* `.env` and `secrets/token.txt` holding unique canary strings (deny_read), as does the key.

After each run: nothing outside the workspace changed (the per-run TMPDIR aside), nothing under
`.git/config`, `.git/hooks` or `.git/info` changed, no canary string reached stdout or stderr,
and no process the command started is still alive (found by a marker in its environment).
A failure prints every offending command with what it did.

Classes and the environment-variable blocklist (for docs/policy.md): assignments through any
builtin (`read`, `printf -v`, `mapfile`, `declare`/`export`/`local`/`readonly`/`typeset`,
`let`, `(( ))`, `getopts`, `select`, `for`, `wait -p`, `${V:=x}`, namerefs, `coproc`) go
through the same blocklist as `V=x cmd`. Deny: variables that make bash, the loader, git, an
interpreter or a toolchain run code or read config the command line chose (PATH, IFS, HOME,
XDG_*, GIT_* (but GIT_PAGER=cat), BASH_ENV, ENV, SHELLOPTS, LD_*, PYTHONPATH, NODE_OPTIONS,
NPM_CONFIG_*, CARGO_HOME/CARGO_BUILD_*/runners, RUSTC_WRAPPER, RUSTFLAGS, GOFLAGS, GOROOT,
MAKEFLAGS, EDITOR/VISUAL/*PAGER (but =cat), *ASKPASS, TAR_OPTIONS, RIPGREP_CONFIG_PATH...).
Ask: variables that choose a compiler, flags or a location a build uses (CC, CXX, LD, AR,
CFLAGS, LDFLAGS, CARGO_TARGET_DIR, TMPDIR, proxies): code only through a build, which is
trusted-only anyway, and an approver can read them.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy

SEED = 15
TIME_BUDGET_S = 55.0
MAX_COMMANDS = 2500
RUN_TIMEOUT_S = 4.0

pytestmark = pytest.mark.slow


# -- the world ---------------------------------------------------------------------------------


@dataclass
class World:
    base: Path
    template: Path
    home: Path
    out: Path
    """The canary directory outside the workspace: nothing may appear in it."""
    canaries: tuple[str, ...]
    unshare: bool
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)


def _base_dir() -> Path:
    for parent in ("/var/tmp", os.path.expanduser("~"), os.getcwd()):
        if parent.startswith("/tmp"):
            continue
        try:
            return Path(tempfile.mkdtemp(prefix="acpd-fuzz-", dir=parent))
        except OSError:
            continue
    pytest.skip("no writable directory outside /tmp for the canaries")


def _git(ws: Path, *args: str) -> None:
    # HOME is an empty directory: the workspace's own .gitconfig (a canary) must not run
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ws.parent / "setup-home"),
           "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True)


def _make_world() -> World:
    base = _base_dir()
    tag = uuid.uuid4().hex[:12]
    canaries = (f"CANARY_ENV_{tag}", f"CANARY_SECRET_{tag}", f"CANARY_SSH_{tag}")
    home = base / "home"
    out = base / "outside"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(canaries[2] + "\n")
    out.mkdir()
    (out / "keep.txt").write_text("outside\n")
    touch_out = f"touch {out}/PWNED"
    (home / ".gitconfig").write_text(f"[core]\n\tpager = {touch_out}; cat\n")
    ws = base / "template"
    (ws / "src").mkdir(parents=True)
    (base / "setup-home").mkdir()
    (ws / "secrets").mkdir()
    (ws / "build").mkdir()
    (ws / "README.md").write_text("# demo\nTODO: write docs\n")
    (ws / "src" / "main.py").write_text("print('hello')  # TODO\n")
    (ws / "data.txt").write_text("b\na\nc\na\n")
    (ws / "idx.txt").write_text(f"a[$({touch_out})]\n")
    (ws / ".env").write_text(f"TOKEN={canaries[0]}\n")
    (ws / "secrets" / "token.txt").write_text(canaries[1] + "\n")
    (ws / "e.sed").write_text(f"1e {touch_out}\n")
    (ws / "evil.sh").write_text(f"{touch_out}\n")
    (ws / "evil.awk").write_text(f'BEGIN {{ system("{touch_out}") }}\n')
    (ws / ".gitconfig").write_text(f"[core]\n\tpager = {touch_out}; cat\n"
                                   f"\tfsmonitor = {touch_out}; echo\n")
    (ws / "git").mkdir()
    (ws / "git" / "config").write_text(f"[core]\n\tpager = {touch_out}; cat\n")
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "-c", "user.email=a@b", "-c", "user.name=a", "add", "README.md", "src", "data.txt")
    _git(ws, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")
    _git(ws, "branch", "feature")
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "hooks").mkdir(exist_ok=True)
    (ws / ".git" / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")
    unshare = shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-rn", "true"], capture_output=True).returncode == 0
    return World(base, ws, home, out, canaries, unshare)


def _snapshot(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, tuple[object, ...]]:
    """Every entry under root: type, mode, size, content digest or link target."""
    out: dict[str, tuple[object, ...]] = {}
    skipped = {str(s) for s in skip}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in skipped]
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            if path in skipped:
                continue
            st = os.lstat(path)
            if os.path.islink(path):
                out[path] = ("link", os.readlink(path))
            elif os.path.isfile(path):
                with open(path, "rb") as fh:
                    digest = hashlib.sha256(fh.read(1 << 20)).hexdigest()
                out[path] = ("file", st.st_mode, st.st_size, digest)
            else:
                out[path] = ("dir", st.st_mode)
    return out


# -- the grammar -------------------------------------------------------------------------------


def _grammar(w: World) -> list[Callable[[random.Random], str]]:
    """Generators, one per family; each returns a command line."""
    out = str(w.out)
    touch = f"touch {out}/P"
    tick = f"`{touch}`"
    sub = f"$({touch})"

    def pick(r: random.Random, items: list[str]) -> str:
        return r.choice(items)

    def quote(r: random.Random, text: str) -> str:
        return pick(r, [f"'{text}'", f'"{text}"', text.replace("$", "\\$").replace("(", "\\(")
                        .replace(")", "\\)").replace(" ", "\\ ")])

    def arith(r: random.Random) -> str:  # class 1
        inner = quote(r, f"a[{pick(r, [sub, tick])}]")
        return pick(r, [
            f"(( {inner} ))", f"echo $(( {inner} ))", f"echo ${{a[{inner}]}}",
            f"a[{inner}]=1", f"test -v {inner}", f"[ -v {inner} ]", f"[[ -v {inner} ]]",
            f"[[ 1 -eq {inner} ]]", f"declare -a {inner}=1", f"typeset {inner}=1",
            f"let {inner}=1", f"let x={inner}", f"printf -v {inner} x", f"read {inner} < data.txt",
            f"x=abc; echo ${{x:{inner}:1}}", f"a=(1 2); echo ${{#a[{inner}]}}",
            f"a=(1 2); echo ${{!a[{inner}]}}", f"echo $[ {inner} ]",
            f"for (( i={inner}; i<1; i++ )); do :; done", f"declare -i x; x={inner}",
            f"a=(1 2); unset {inner}", f"declare -n r={inner}; echo $r",
            f"x={inner}; echo ${{!x}}", f"x={inner}; (( x ))",
            "read x < idx.txt; echo $(( x ))", "read x < idx.txt; [[ $x -eq 1 ]]",
            "read x < idx.txt; (( y = x ))", "mapfile -t a < idx.txt; echo $(( a ))",
            "read x < idx.txt; s=abc; echo ${s:x}", "read x < idx.txt; echo ${!x}",
            "read x < idx.txt; test -v \"$x\"", "read x < idx.txt; printf -v \"$x\" y",
            "read x < idx.txt; declare -n r=$x; echo $r",
            "read x < idx.txt; a=(1); echo ${a[$x]}", "while read -r l; do (( l )); done < idx.txt",
            "xargs -a idx.txt bash -c 'echo $(( $1 ))' _", "xargs -a idx.txt -I{} sh -c 'echo {}'",
            "xargs -a idx.txt -I % bash -c ': %'", "cat idx.txt | xargs -i sh -c 'echo {}'",
            "find . -name idx.txt -exec bash -c 'read x < \"$1\"; echo $((x))' _ {} \\;",
        ])

    def substitutions(r: random.Random) -> str:  # here-docs and ${x:-...}
        body = pick(r, [tick, sub, f"${{x:-{tick}}}", f"${{x:-${{y:-{tick}}}}}",
                        f"a${{x:-\"{tick}\"}}b", f"${{x:-'{tick}'}}"])
        return pick(r, [
            f"cat <<EOF\n{body}\nEOF", f"cat <<-EOF\n\t{body}\n\tEOF",
            f"cat <<EOF | cat\n{body}\nEOF", f"echo ${{x:-{tick}}}", f"echo \"${{x:-{tick}}}\"",
            f"echo ${{x:={tick}}}", f"echo ${{x/a/{tick}}}", f"echo \"${{x:-'{tick}'}}\"",
            f"echo ${{x:-${{y:-{tick}}}}}", f"f() {{ cat <<EOF\n{body}\nEOF\n}}; f",
        ])

    def env_hijack(r: random.Random) -> str:  # class 4, HOME/XDG/toolchains
        var = pick(r, ["HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_CONFIG_GLOBAL", "PATH",
                       "BASH_ENV", "ENV", "PAGER", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "LESSOPEN"])
        val = pick(r, [".", "./git", "./evil.sh", "./.gitconfig", f"{touch};cat", w.template])
        run = pick(r, ["git log -1", "git -p log -1", "git diff HEAD~0", "git status",
                       "bash -c ls", "git show"])
        return pick(r, [
            f"{var}={val} {run}", f"env {var}={val} {run}", f"export {var}={val}; {run}",
            f"declare -x {var}={val}; {run}", f"read {var} <<< {val}; {run}",
            f"printf -v {var} %s {val}; export {var}; {run}",
            f"echo {val} > v.txt; read {var} < v.txt; export {var}; {run}",
            f"mapfile -t {var} < data.txt; {run}", f"for {var} in {val}; do export {var}; "
            f"{run}; done", f"declare -n r={var}; r={val}; export {var}; {run}",
            f"echo ${{{var}:={val}}}; export {var}; {run}", f"typeset {var}={val}; {run}",
            f"local {var}={val} 2>/dev/null; {run}", f"getopts a {var}; {run}",
            f"x={var}; declare \"$x={val}\"; export {var}; {run}",
        ])

    def git_internals(r: random.Random) -> str:  # class 2
        dest = pick(r, [".git/", ".git/hooks/", ".git/hooks/pre-commit", ".git/config",
                        "./.git/info/", ".git/./hooks", "src/../.git/hooks/"])
        return pick(r, [
            f"cp evil.sh {dest}", f"mv evil.sh {dest}", f"cp -t {dest} evil.sh",
            f"cp --target-directory={dest} evil.sh", f"cp --targ={dest} evil.sh",
            f"ln -s ../../evil.sh {dest}", f"tee {dest} < evil.sh", f"echo x > {dest}",
            f"tar -cf a.tar evil.sh && tar -C {dest} -xf a.tar", f"install evil.sh {dest}",
            f"sed -i s/x/y/ {dest}", f"touch {dest}x", f"mkdir -p {dest}d",
            "git --git-dir=. status", "git --work-tree=/ status", "git config core.pager x",
            f"cp -r src {dest}", f"rsync evil.sh {dest}", f"dd if=evil.sh of={dest}x",
        ])

    def code_options(r: random.Random) -> str:  # class 3 and friends
        return pick(r, [
            "sed -f e.sed data.txt", "sed -n '1e id' data.txt", f"sed 's/.*/{touch}/e' data.txt",
            "awk -f evil.awk", f"awk 'BEGIN{{system(\"{touch}\")}}'",
            f"awk '{{print | \"{touch}\"}}' data.txt", f"awk 'BEGIN{{print 1 > \"{out}/P\"}}'",
            f"find . -name data.txt -exec {touch} \\;", f"find . -newer x -fprint {out}/P",
            f"tar -cf /dev/null data.txt --checkpoint=1 --checkpoint-action=exec='{touch}'",
            f"tar -cf x.tar data.txt --to-command='{touch}'", f"git -c core.pager='{touch}' log",
            "sort -S 1K --compress-program=./evil.sh data.txt", "rg --pre ./evil.sh a",
            f"git log --output={out}/P", f"sort -o {out}/P data.txt", f"sort --outp={out}/P "
            "data.txt", f"uniq data.txt {out}/P", f"cp data.txt {out}/", f"tee {out}/P < data.txt",
            "python3 version", "bash evil.sh", "sh < evil.sh", "xargs -a evil.sh sh -c",
            f"git grep -O'{touch}' a", f"diff --to-file={out}/P data.txt",
            f"man -P '{touch}' ls", f"less +'!{touch}' data.txt",
        ])

    def reads(r: random.Random) -> str:  # class 6, files0-from and friends
        return pick(r, [
            "cat .env", "head secrets/token.txt", "grep -r CANARY .", "grep -r . .env",
            "rg -uuu CANARY", "rg --hidden CANARY", "git grep --no-index CANARY",
            "git diff --no-index .env /dev/null", "diff -rN . /dev/null", "diff .env data.txt",
            "sort --files0-from=.env", "wc --files0-from=secrets/token.txt", "grep -f .env x",
            "tar -cf - . | cat", "cp .env x.txt && cat x.txt", "ln -s .env y && cat y",
            "cat ~/.ssh/id_rsa", "grep -r CANARY ~", "cat $HOME/.ssh/id_rsa", "cat s*/t*",
            "cat .en?", "cat ./.e*", "od -c .env", "base64 .env", "xxd secrets/token.txt",
            "git show HEAD:.env", "cat < .env", "while read l; do echo $l; done < .env",
            "find . -name '*.txt' | xargs cat", "jq -R . .env", "nl .env", "tac .env",
            "comm .env data.txt", "paste .env", "strings secrets/token.txt", "file -f .env",
            "git --git-dir=.git --index-file=.env status", "awk 1 .env", "sed -n p .env",
        ])

    def escapes(r: random.Random) -> str:  # class 8, system state 9, functions
        return pick(r, [
            "setsid sleep 30 &", "nohup sleep 30 &", "(sleep 30 &)", "sleep 30 & disown",
            "( ( sleep 30 & ) & )", "setsid -f sleep 30", "sleep 30 &", "timeout 60 sleep 30 &",
            "date -s 2000-01-01", "hostname x", "sysctl -w kernel.x=1", "timedatectl",
            f"rm(){{ :; }}; {touch}", f"ls(){{ {touch}; }}; ls", f"f(){{ {touch}; }}; f",
            f"cat(){{ {touch}; }}; cat README.md", "git(){ :; }; git status",
            f"trap '{touch}' EXIT", f"alias ls='{touch}'; ls", f"eval '{touch}'",
            f"bash -c '{touch}'", f"command -p {touch}", f"exec {touch}",
        ])

    def destructive_git(r: random.Random) -> str:  # class 7
        return pick(r, [
            "git switch -f main", "git checkout -f", "git checkout -- .", "git stash clear",
            "git stash drop", "git branch -D feature", "git branch -f feature HEAD",
            "git reflog expire --expire=now --all", "git gc --prune=now",
            "git update-ref -d refs/heads/feature", "git push origin :feature",
            "git push --delete origin feature", "git reset --hard", "git clean -fdx",
            "git restore .", "git rm -r --cached .",
        ])

    def paths(r: random.Random) -> str:  # writes and reads outside, through links and options
        target = pick(r, [out, f"{out}/x", "~/x", "$HOME/x", "../x", "../../x", str(w.home)])
        return pick(r, [
            f"ln -s {out} lnk && echo x > lnk/f", f"ln -s {out} lnk; cp README.md lnk/",
            "ln -s .. up; cp README.md up/x", f"mkdir d && ln -s {out} d/l && echo x > d/l/f",
            f"cp README.md {target}", f"mv README.md {target}", f"cp -r src {target}",
            f"echo x > {target}", f"echo x >> {target}", f"tee {target} < README.md",
            f"sort -o {target} data.txt", f"sort --output={target} data.txt",
            f"cp --target-directory={target} README.md", f"install -D README.md {target}",
            f"tar -xf build.tar -C {target}", f"touch {target}", f"mkdir -p {target}/d",
            f"ln README.md {target}", f"ln -s README.md {target}", f"rmdir {target}",
            f"split -l 1 data.txt {target}", f"csplit data.txt 1 -f {target}",
            f"git archive -o {target} HEAD", f"git diff > {target}", f"date > {target}",
            f"printf x | dd of={target}", f"cat data.txt 1<> {target}", f"exec 3> {target}",
            f"find . -maxdepth 0 -fprintf {target} x", f"gzip -c data.txt > {target}",
            f"git -C {out} init", f"git init {out}/r", f"git clone . {out}/c",
            f"cd {out} && touch P", "cd .. && touch x", f"pushd {out}; touch P",
            f"cp -a . {out}/", f"rsync -a . {out}/", f"cat {target}", f"ls {target}",
        ])

    def benign(r: random.Random) -> str:
        return pick(r, [
            "git status", "git log --oneline -n 5", "git diff", "git diff HEAD", "git show --stat",
            "git branch", "ls -la", "ls src", "cat README.md", "head -n 2 data.txt",
            "grep -rn TODO src", "rg TODO src", "wc -l data.txt", "sort data.txt | uniq -c",
            "mkdir -p build/out && cp README.md build/out/", "mv build/x build/y 2>/dev/null; :",
            "touch build/.stamp", "find src -name '*.py'", "echo hello > build/hello.txt",
            "for f in src/*.py; do wc -l \"$f\"; done", "cat < README.md",
            "grep -c a data.txt", "diff data.txt README.md; true", "cut -c1 data.txt",
            "tr a-z A-Z < data.txt", "printf '%s\\n' a b | sort", "echo $((1+2))",
            "x=3; echo $(( x * 2 ))", "read -r l < data.txt; echo \"$l\"", "pwd", "date",
            "tar -czf build/dist.tar.gz src", "sed -n '1,2p' README.md",
            "awk '{print $1}' data.txt",
        ])

    return [arith, substitutions, env_hijack, git_internals, code_options, reads, escapes,
            destructive_git, paths, benign, benign]


def _mutate(r: random.Random, cmd: str) -> str:
    """Spellings that should not change a verdict: prefixes, wrappers, separators."""
    return r.choice([
        cmd, cmd, cmd, f"true && {cmd}", f"{cmd}; true", f"command {cmd}" if " " in cmd else cmd,
        f"( {cmd} )", f"{{ {cmd}; }}", f"env {cmd}", f"nice {cmd}", f"timeout 3 {cmd}",
        f"if true; then {cmd}; fi", f"bash -c {_sq(cmd)}", f"sh -c {_sq(cmd)}",
        f"eval {_sq(cmd)}", f"echo x | {cmd}", f"{cmd} | cat",
    ])


def _sq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# -- running -----------------------------------------------------------------------------------


@dataclass
class Outcome:
    problems: list[str]
    stdout: str = ""


def _survivors(marker: str) -> list[int]:
    found = []
    needle = f"ACPD_FUZZ_MARK={marker}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if needle in fh.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def _run(w: World, cmd: str, ws: Path, tmp: Path) -> Outcome:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(w.home), "TMPDIR": str(tmp),
           "LANG": "C.UTF-8", "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0",
           "GIT_CONFIG_NOSYSTEM": "1", "ACPD_FUZZ_MARK": w.marker}
    argv = ["bash", "-c", cmd]
    if w.unshare:
        argv = ["unshare", "-rn", *argv]
    problems: list[str] = []
    # Output goes to a file, not a pipe: a detached child holding a pipe open would make
    # the wait below last as long as the child.
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=sink, start_new_session=True)
        try:
            proc.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            problems.append("ran past the timeout")
        sink.seek(0)
        with_text = sink.read(1 << 20).decode("utf-8", "replace")
    for canary in w.canaries:
        if canary in with_text:
            problems.append(f"printed the canary {canary[:11]}")
    time.sleep(0.05)  # let a detached child start, so that the scan below sees it
    alive = _survivors(w.marker)
    if alive:
        problems.append(f"{len(alive)} process(es) survived the command")
        for pid in alive:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    return Outcome(problems, with_text[:300])


def _git_internals(ws: Path) -> dict[str, tuple[object, ...]]:
    snap: dict[str, tuple[object, ...]] = {}
    for name in ("hooks", "info"):
        root = ws / ".git" / name
        snap.update({os.path.relpath(k, ws): v for k, v in _snapshot(root).items()})
    config = ws / ".git" / "config"
    snap["config"] = ("file", hashlib.sha256(config.read_bytes()).hexdigest()) if (
        config.is_file() and not config.is_symlink()) else ("changed",)
    return snap


def _judge(policy: CompiledPolicy, cmd: str, ws: Path, home: Path) -> str:
    kwargs: dict[str, object] = {"cwd": str(ws), "roots": (str(ws),), "home": str(home),
                                 "trust": "provisional"}
    if "sandboxed" in inspect.signature(policy.judge).parameters:
        kwargs["sandboxed"] = False
    return policy.judge(cmd, **kwargs).verdict  # type: ignore[arg-type]


def test_allowed_commands_do_no_harm_under_real_bash(default: CompiledPolicy) -> None:
    if shutil.which("bash") is None or shutil.which("git") is None:
        pytest.skip("needs bash and git")
    w = _make_world()
    try:
        _fuzz(default, w)
    finally:
        for pid in _survivors(w.marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(w.base, ignore_errors=True)


def _fuzz(policy: CompiledPolicy, w: World) -> None:
    r = random.Random(SEED)
    families = _grammar(w)
    started = time.monotonic()
    failures: list[str] = []
    counts = {"judged": 0, "allowed": 0, "benign_allowed": 0, "benign": 0}
    ws = w.base / "ws"
    tmp = w.base / "tmp-run"
    outside_before = _snapshot(w.base, skip=(ws, tmp))
    git_before = _git_internals(w.template)
    seen: set[str] = set()
    while time.monotonic() - started < TIME_BUDGET_S and counts["judged"] < MAX_COMMANDS:
        family = r.choice(families)
        cmd = _mutate(r, family(r))
        if cmd in seen:
            continue
        seen.add(cmd)
        counts["judged"] += 1
        is_benign = family.__name__ == "benign"
        counts["benign"] += is_benign
        if _judge(policy, cmd, w.template, w.home) != "allow":
            continue
        counts["allowed"] += 1
        counts["benign_allowed"] += is_benign
        shutil.rmtree(ws, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(w.template, ws, symlinks=True)
        tmp.mkdir()
        outcome = _run(w, cmd, ws, tmp)
        problems = outcome.problems
        after = _snapshot(w.base, skip=(ws, tmp))
        if after != outside_before:
            changed = sorted(set(after) ^ set(outside_before) | {
                k for k in after if k in outside_before and after[k] != outside_before[k]})
            problems.append(f"changed outside the workspace: {changed[:3]}")
            shutil.rmtree(w.out, ignore_errors=True)
            _restore_outside(w)
            outside_before = _snapshot(w.base, skip=(ws, tmp))
        if _git_internals(ws) != git_before:
            problems.append("changed .git/config, .git/hooks or .git/info")
        if problems:
            failures.append(f"{cmd!r}: {'; '.join(problems)} | output: {outcome.stdout!r}")
    print(f"differential fuzz: {counts}, {len(failures)} failure(s), "
          f"unshare={'yes' if w.unshare else 'no'}")
    assert counts["allowed"] > 0 and counts["benign_allowed"] > 0
    assert not failures, "allowed commands did harm:\n" + "\n".join(failures)


def _restore_outside(w: World) -> None:
    w.out.mkdir(exist_ok=True)
    (w.out / "keep.txt").write_text("outside\n")
