"""The differential fuzz's grammar: the bypass classes of issue 15, benign workflows, and
near misses.

Each family is a generator `(random) -> command line`. The attack families spell the issue's
classes several ways each (arithmetic and subscript contexts, here-docs and `${x:-...}`,
environment hijack through every builtin, writes into git internals, programs that run code
from options or files, reads of deny_read files, escapes from the kill, destructive git, paths
outside the workspace). Attack spellings alone are nearly all refused, so the run would
exercise little: the `near_*` families take a benign command and change ONE thing, an option
(often abbreviated), a destination, an environment variable, a context, picked at random
from harmless and dangerous values, so that many of them are allowed and run, right at the
edge of what the policy lets through. `mutate` then wraps a line in spellings that must not
change a verdict (prefixes, wrappers, subshells, `bash -c`, pipes).

The red-team classes of redteam6 (being fixed in other branches) live in fuzz_redteam.py.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tests.policy.fuzz_world import World

Generator = Callable[[random.Random], str]


def sq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def mutate(r: random.Random, cmd: str) -> str:
    """Spellings that should not change a verdict: prefixes, wrappers, separators."""
    return r.choice([
        cmd, cmd, cmd, cmd, f"true && {cmd}", f"{cmd}; true", f"( {cmd} )", f"{{ {cmd}; }}",
        f"command {cmd}" if " " in cmd else cmd, f"env {cmd}", f"nice {cmd}",
        f"timeout 3 {cmd}", f"if true; then {cmd}; fi", f"bash -c {sq(cmd)}",
        f"sh -c {sq(cmd)}", f"eval {sq(cmd)}", f"echo x | {cmd}", f"{cmd} | cat",
    ])


def families(w: World) -> dict[str, Generator]:
    """Every family, by name; names starting with "benign" are the benign workflows."""
    out, home = str(w.out), str(w.home)
    p = w.payload
    tick, sub = f"`{p}`", f"$({p})"
    pick = random.Random.choice

    def quote(r: random.Random, text: str) -> str:
        return pick(r, [f"'{text}'", f'"{text}"', text.replace("$", "\\$").replace(
            "(", "\\(").replace(")", "\\)").replace(" ", "\\ ")])

    def arith(r: random.Random) -> str:  # class 1
        inner = quote(r, f"a[{pick(r, [sub, tick])}]")
        return pick(r, [
            f"(( {inner} ))", f"echo $(( {inner} ))", f"echo ${{a[{inner}]}}",
            f"a[{inner}]=1", f"test -v {inner}", f"[ -v {inner} ]", f"[[ -v {inner} ]]",
            f"[[ 1 -eq {inner} ]]", f"declare -a {inner}=1", f"typeset {inner}=1",
            f"let {inner}=1", f"let x={inner}", f"printf -v {inner} x", f"read {inner} < data.txt",
            f"x=abc; echo ${{x:{inner}:1}}", f"a=(1 2); echo ${{#a[{inner}]}}",
            f"echo $[ {inner} ]", f"for (( i={inner}; i<1; i++ )); do :; done",
            f"declare -i x; x={inner}", f"a=(1 2); unset {inner}", f"declare -n r={inner}; echo $r",
            f"x={inner}; echo ${{!x}}", f"x={inner}; (( x ))", f"case 1 in {sub}) :;; esac",
            "read x < idx.txt; echo $(( x ))", "read x < idx.txt; [[ $x -eq 1 ]]",
            "mapfile -t a < idx.txt; echo $(( a ))", "read x < idx.txt; s=abc; echo ${s:x}",
            "read x < idx.txt; test -v \"$x\"", "read x < idx.txt; printf -v \"$x\" y",
            "read x < idx.txt; a=(1); echo ${a[$x]}", "while read -r l; do (( l )); done < idx.txt",
            "xargs -a idx.txt -I{} sh -c 'echo {}'", "cat idx.txt | xargs -i sh -c 'echo {}'",
        ])

    def substitutions(r: random.Random) -> str:  # here-docs and ${x:-...}
        body = pick(r, [tick, sub, f"${{x:-{tick}}}", f"${{x:-${{y:-{tick}}}}}",
                        f"a${{x:-\"{tick}\"}}b", f"${{x:-'{tick}'}}"])
        return pick(r, [
            f"cat <<EOF\n{body}\nEOF", f"cat <<-EOF\n\t{body}\n\tEOF",
            f"cat <<EOF | cat\n{body}\nEOF", f"echo ${{x:-{tick}}}", f"echo \"${{x:-{tick}}}\"",
            f"echo ${{x:={tick}}}", f"echo ${{x/a/{tick}}}", f"echo \"${{x:-'{tick}'}}\"",
            f"f() {{ cat <<EOF\n{body}\nEOF\n}}; f", f"cat <<< {body}",
        ])

    def env_hijack(r: random.Random) -> str:  # class 4, HOME/XDG/toolchains
        var = pick(r, ["HOME", "XDG_CONFIG_HOME", "GIT_DIR", "GIT_CONFIG_GLOBAL", "PATH",
                       "BASH_ENV", "ENV", "PAGER", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "LESSOPEN",
                       "GIT_CONFIG_PARAMETERS", "PROMPT_COMMAND", "PS4", "SHELLOPTS"])
        val = pick(r, [".", "./git", "./evil.sh", "./.gitconfig", f"{p};cat", str(w.ws)])
        run = pick(r, ["git log -1", "git -p log -1", "git diff HEAD~0", "git status",
                       "bash -c ls", "git show"])
        return pick(r, [
            f"{var}={val} {run}", f"env {var}={val} {run}", f"export {var}={val}; {run}",
            f"declare -x {var}={val}; {run}", f"read {var} <<< {val}; {run}",
            f"printf -v {var} %s {val}; export {var}; {run}",
            f"echo {val} > v.txt; read {var} < v.txt; export {var}; {run}",
            f"mapfile -t {var} < data.txt; {run}",
            f"for {var} in {val}; do export {var}; {run}; done",
            f"declare -n r={var}; r={val}; export {var}; {run}",
            f"echo ${{{var}:={val}}}; export {var}; {run}", f"typeset {var}={val}; {run}",
            f"getopts a {var}; {run}", f"x={var}; declare \"$x={val}\"; export {var}; {run}",
        ])

    def git_internals(r: random.Random) -> str:  # class 2
        dest = pick(r, [".git/", ".git/hooks/", ".git/hooks/pre-commit", ".git/config",
                        "./.git/info/", ".git/./hooks", "src/../.git/hooks/", ".git/commondir",
                        ".git/config.worktree", ".git/worktrees/w/", ".git/modules/m/"])
        return pick(r, [
            f"cp evil.sh {dest}", f"mv evil.sh {dest}", f"cp -t {dest} evil.sh",
            f"cp --target-directory={dest} evil.sh", f"cp --targ={dest} evil.sh",
            f"ln -s ../../evil.sh {dest}", f"tee {dest} < evil.sh", f"echo x > {dest}",
            f"tar -cf a.tar evil.sh && tar -C {dest} -xf a.tar", f"install evil.sh {dest}",
            f"sed -i s/x/y/ {dest}", f"touch {dest}x", f"mkdir -p {dest}d",
            "git --git-dir=. status", "git --work-tree=/ status", "git config core.pager x",
            f"cp -r src {dest}", f"dd if=evil.sh of={dest}x", f"echo x >> {dest}",
            f"git config -f {dest} core.fsmonitor x", "git config core.hooksPath hk",
        ])

    def code_options(r: random.Random) -> str:  # class 3 and friends
        return pick(r, [
            "sed -f e.sed data.txt", f"sed -n '1e {p}' data.txt", f"sed 's/.*/{p}/e' data.txt",
            "awk -f evil.awk", f"awk 'BEGIN{{system(\"{p}\")}}'",
            f"awk '{{print | \"{p}\"}}' data.txt", f"awk 'BEGIN{{print 1 > \"{out}/P\"}}'",
            f"find . -name data.txt -exec {p} \\;", f"find . -newer x -fprint {out}/P",
            f"tar -cf /dev/null data.txt --checkpoint=1 --checkpoint-action=exec='{p}'",
            f"tar -cf x.tar data.txt --to-command='{p}'", f"git -c core.pager='{p}' log",
            "sort -S 1K --compress-program=./evil.sh data.txt", "rg --pre ./evil.sh a",
            f"git log --output={out}/P", f"sort -o {out}/P data.txt",
            f"sort --outp={out}/P data.txt", f"uniq data.txt {out}/P", f"cp data.txt {out}/",
            f"tee {out}/P < data.txt", "python3 version", "bash evil.sh", "sh < evil.sh",
            "xargs -a evil.sh sh -c", f"git grep -O'{p}' a", f"diff --to-file={out}/P data.txt",
            f"man -P '{p}' ls", f"less +'!{p}' data.txt", f"git -c core.fsmonitor='{p}' status",
            f"git -c diff.external='{p}' diff", "GIT_DIR=git git status",
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
            "cat < .env", "while read l; do echo $l; done < .env", "cat *.pem", "cat .env.l*",
            "find . -name '*.txt' | xargs cat", "jq -R . .env", "nl .env", "tac .env",
            "comm .env data.txt", "paste .env", "strings secrets/token.txt", "file -f .env",
            "git --git-dir=.git --index-file=.env status", "awk 1 .env", "sed -n p .env",
            "grep -r --include=token.txt . .", "rg -l . secrets", "cat outl/../../home/.ssh/*",
        ])

    def escapes(r: random.Random) -> str:  # class 8, system state 9, functions
        return pick(r, [
            "setsid sleep 30 &", "nohup sleep 30 &", "(sleep 30 &)", "sleep 30 & disown",
            "( ( sleep 30 & ) & )", "setsid -f sleep 30", "sleep 30 &", "timeout 60 sleep 30 &",
            "date -s 2000-01-01", "hostname x", "sysctl -w kernel.x=1", "timedatectl",
            f"rm(){{ :; }}; {p}", f"ls(){{ {p}; }}; ls", f"f(){{ {p}; }}; f",
            f"cat(){{ {p}; }}; cat README.md", "git(){ :; }; git status",
            f"trap '{p}' EXIT", f"alias ls='{p}'; ls", f"eval '{p}'",
            f"bash -c '{p}'", f"command -p {p}", f"exec {p}", "coproc sleep 30",
        ])

    def destructive_git(r: random.Random) -> str:  # class 7
        return pick(r, [
            "git switch -f main", "git checkout -f", "git checkout -- .", "git stash clear",
            "git stash drop", "git branch -D feature", "git branch -f feature HEAD",
            "git reflog expire --expire=now --all", "git gc --prune=now",
            "git update-ref -d refs/heads/feature", "git push origin :feature",
            "git push --delete origin feature", "git reset --hard", "git clean -fdx",
            "git restore .", "git rm -r --cached .", "git stash -u", "git clean -fX",
        ])

    def paths(r: random.Random) -> str:  # writes and reads outside, through links and options
        target = pick(r, [out, f"{out}/x", "~/x", "$HOME/x", "../x", "../../x", home, "outl/x",
                          "outl/../x"])
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
            f"cp -a . {out}/", "cd outl && touch x", "cd outl/.. && touch x",
            f"cat {target}", f"ls {target}", "rm -rf outl/", "rm -r outl/*",
        ])

    def scripts(r: random.Random) -> str:  # opaque code: ask, or allowed only when confined
        # (only opaque vehicles: `bash -c BODY` is judged through, and would repeat the
        # red-team shapes fuzz_redteam.py keeps apart)
        body = pick(r, [
            p, f"touch {out}/s", "echo x > ~/.bashrc", "cat .env", "cat secrets/token.txt",
            "cat ~/.ssh/id_rsa", "cat server.pem .env.local", "echo x > .git/hooks/pre-commit",
            "echo x >> .git/config", "mkdir .git/info/x", "setsid sleep 30 &", "nohup sleep 30 &",
            "(sleep 30 &)", "rm -rf outl/", "cp README.md outl/", "cd -P outl/.. && touch s",
            "mv .env.local x; cat x", "ln -s ../home/.ssh/id_rsa k; cat k", "rm -rf secrets",
            "cat outl/../../home/.ssh/id_rsa", f"python3 -c 'open(\"{out}/py\", \"w\")'",
            "grep -r CANARY . ~", "echo x > README.md", "git status", "rm .env.local",
            f"cp -r . {out}/copy", "chmod 000 secrets; cat secrets/token.txt",
        ])
        return pick(r, [
            f"printf '%s\\n' {sq(body)} > s.sh; bash s.sh", f"echo {sq(body)} > s.sh && sh s.sh",
            f"echo {sq(body)} > s.sh; bash -c \"$(cat s.sh)\"",
            f"printf 'all:\\n\\t%s\\n' {sq(body)} > Makefile && make -s",
            f"echo {sq(body)} | bash", f"echo {sq(body)} > s.sh; . ./s.sh",
        ])

    def benign(r: random.Random) -> str:
        return pick(r, BENIGN)

    from tests.policy.fuzz_near import near_families

    return {"arith": arith, "substitutions": substitutions, "env_hijack": env_hijack,
            "git_internals": git_internals, "code_options": code_options, "reads": reads,
            "escapes": escapes, "destructive_git": destructive_git, "paths": paths,
            "scripts": scripts,
            "benign": benign, "benign2": benign, **near_families(w)}


BENIGN = [
    "git status", "git log --oneline -n 5", "git diff", "git diff HEAD", "git show --stat",
    "git branch", "ls -la", "ls src", "cat README.md", "head -n 2 data.txt",
    "grep -rn TODO src", "rg TODO src", "wc -l data.txt", "sort data.txt | uniq -c",
    "mkdir -p build/out && cp README.md build/out/", "mv build/x build/y 2>/dev/null; :",
    "touch build/.stamp", "find src -name '*.py'", "echo hello > build/hello.txt",
    "for f in src/*.py; do wc -l \"$f\"; done", "cat < README.md",
    "grep -c a data.txt", "diff data.txt README.md; true", "cut -c1 data.txt",
    "tr a-z A-Z < data.txt", "printf '%s\\n' a b | sort", "echo $((1+2))",
    "x=3; echo $(( x * 2 ))", "read -r l < data.txt; echo \"$l\"", "pwd", "date",
    "tar -czf build/dist.tar.gz src", "sed -n '1,2p' README.md", "awk '{print $1}' data.txt",
    "git log -1 --format=%H", "git diff --stat HEAD", "git grep TODO", "rg -n TODO",
    "grep -rn TODO .", "sort -u data.txt", "uniq -c data.txt", "head -c 10 README.md",
    "git add README.md && git commit -qm docs", "git switch -c topic", "git stash list",
]
