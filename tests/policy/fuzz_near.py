"""Near misses: a benign, allowed command with ONE thing changed (the differential fuzz).

Each family keeps a command's shape and draws the changed part from a list that mixes harmless
values (so the line is allowed and runs: the harness sees what the policy lets through) with
dangerous ones (a destination in `.git`, outside, through the `outl` link; an abbreviated
long option; an environment variable that makes a program run or read something; a payload
in a context bash evaluates). The policy must tell them apart; every allowed one is run.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tests.policy.fuzz_world import World

Generator = Callable[[random.Random], str]


def near_families(w: World) -> dict[str, Generator]:
    out, p = str(w.out), w.payload
    pick = random.Random.choice
    safe_dirs = ["build/", "src/", "build/out/", ".gitx/", ".git-backup/", "husky/", "./",
                 "build/.git-notes/", "docs/"]
    bad_dirs = [".git/", ".git/hooks/", ".git/info/", ".git/worktrees/", "outl/",
                "../", f"{out}/", "~/", ".git/modules/"]
    safe_files = ["build/x.txt", "build/out.txt", "notes.txt", "src/gen.py", ".gitx", "hooks.txt",
                  "build/.env.sample.txt", "husky.txt"]
    bad_files = [".git/config", ".git/hooks/post-commit", ".git/commondir", ".git/info/exclude",
                 ".git/config.worktree", "outl/x", "../x", f"{out}/x", "~/.bashrc", ".env",
                 "~/.gitconfig", ".git/HEAD"]

    def dest_dir(r: random.Random) -> str:
        return pick(r, safe_dirs + safe_dirs + bad_dirs)

    def dest_file(r: random.Random) -> str:
        return pick(r, safe_files + safe_files + bad_files)

    def near_output(r: random.Random) -> str:  # output options, spelled and abbreviated
        f = dest_file(r)
        return pick(r, [
            f"sort -o {f} data.txt", f"sort --output={f} data.txt", f"sort --outp={f} data.txt",
            f"sort --o={f} data.txt", f"sort data.txt -o{f}", f"uniq data.txt {f}",
            f"git diff --output={f}", f"git log -1 --outp={f}", f"tee {f} < README.md",
            f"tee -a {f} < data.txt", f"echo x > {f}", f"echo x >> {f}", f"date >| {f}",
            f"printf '%s' x 1<> {f}", f"cat data.txt &> {f}", f"split -l 2 data.txt {f}",
            f"dd if=data.txt of={f} status=none", f"gzip -c data.txt > {f}",
            f"awk '{{print > \"{f}\"}}' data.txt", f"sed -n '1w {f}' data.txt",
            f"tar -cf {f} src", f"git archive -o {f} HEAD", f"find src -fprint {f}",
            f"base64 data.txt > {f}", f"cut -c1 data.txt | tee {f}",
        ])

    def near_copy(r: random.Random) -> str:  # destinations and target-directory spellings
        d, f = dest_dir(r), dest_file(r)
        return pick(r, [
            f"cp README.md {d}", f"cp -t {d} README.md", f"cp --target-directory={d} README.md",
            f"cp --targ={d} README.md", f"cp --t={d} README.md", f"mv data.txt {d}",
            f"mv -t {d} data.txt", f"cp -r src {d}", f"cp README.md {f}", f"mv data.txt {f}",
            f"install -m 644 README.md {f}", f"install -D README.md {d}r.md",
            f"ln -s README.md {f}", f"ln README.md {f}", f"mkdir -p {d}n && cp README.md {d}n/",
            f"tar -cf build/a.tar README.md && tar -xf build/a.tar -C {d}", f"touch {f}",
            f"cp -b README.md {f}", f"cp --backup=numbered README.md {f}", f"rm -f {f}",
            f"chmod +x {f}", f"truncate -s 0 {f}", f"mkdir {d}sub",
        ])

    def near_env(r: random.Random) -> str:  # one environment variable before an allowed command
        var = pick(r, ["LC_ALL=C", "TZ=UTC", "COLUMNS=80", "NO_COLOR=1", "GIT_PAGER=cat",
                       "LANG=C", "TERM=dumb", "GREP_COLORS=mt=1", "FOO=bar", "PAGER=cat",
                       "BASH_ENV=evil.sh", "ENV=evil.sh", "GIT_DIR=git", "PAGER=./evil.sh",
                       "GIT_CONFIG_GLOBAL=.gitconfig", "HOME=.", "XDG_CONFIG_HOME=.",
                       "TAR_OPTIONS=--to-command=./evil.sh", "RIPGREP_CONFIG_PATH=.env",
                       "LD_PRELOAD=./x.so", "PYTHONSTARTUP=evil.sh", "GIT_EXTERNAL_DIFF=./evil.sh",
                       "GIT_SSH_COMMAND=./evil.sh", "PROMPT_COMMAND=./evil.sh", "SHELLOPTS=xtrace",
                       "EDITOR=./evil.sh", "GIT_INDEX_FILE=.env", "GIT_WORK_TREE=/"])
        name = var.split("=", 1)[0]
        cmd = pick(r, ["git status", "git log -1", "git diff", "bash -c 'echo hi'",
                       "ls src", "sort data.txt", "grep -rn TODO src", "rg TODO src",
                       "tar -tzf build/d.tgz 2>/dev/null; true", "git show --stat"])
        return pick(r, [f"{var} {cmd}", f"env {var} {cmd}", f"export {var}; {cmd}",
                        f"declare -x {var}; {cmd}", f"{var}; export {name}; {cmd}"])

    def near_context(r: random.Random) -> str:  # a context bash evaluates, harmless or not
        inner = pick(r, ["cat README.md", "wc -l < data.txt", "git rev-parse HEAD", "ls src",
                         "date +%s", "echo 1", p, "cat .env", "cat ~/.ssh/id_rsa",
                         "sed -n 1p data.txt", "git branch --show-current"])
        return pick(r, [
            f"echo \"$({inner})\"", f"x=$({inner}); echo \"$x\"", f"echo `{inner}`",
            f"[[ -n $({inner}) ]] && echo y", f"cat <<EOF\n$({inner})\nEOF",
            f"echo \"${{x:-$({inner})}}\"", f"for f in $({inner}); do echo \"$f\"; done",
            f"test -n \"$({inner})\"", f"case $({inner}) in *) echo y;; esac",
            f"echo $(( $({inner} | wc -c) + 1 ))", f"f() {{ {inner}; }}; f",
            f"{inner} | head -n 1", f"if {inner} >/dev/null; then echo y; fi",
            f"while read -r l; do echo \"$l\"; done < <({inner})",
            f"a=($({inner})); echo ${{a[0]}}",
        ])

    def near_abbrev(r: random.Random) -> str:  # long options, whole and abbreviated
        f = pick(r, ["data.txt", "README.md", ".env", "secrets/token.txt", "src/main.py",
                     "~/.ssh/id_rsa", "server.pem", f"{out}/keep.txt"])
        return pick(r, [
            f"grep --file={f} README.md", f"grep --fi={f} README.md", f"grep -f {f} README.md",
            f"wc --files0-from={f}", f"wc --files0={f}", f"sort --files0-f={f}",
            f"du --files0-from={f}", f"diff --from-file={f} data.txt", f"diff --from={f} data.txt",
            f"cmp {f} data.txt", f"git diff --no-index {f} data.txt", f"rg --file={f} src",
            f"xargs --arg-file={f} echo", f"xargs -a {f} echo", f"tar -cf - -T {f} | wc -c",
            f"tar --files-from={f} -cf build/x.tar", f"git blame --contents={f} README.md",
            f"git log --pathspec-from-file={f}", f"ls --hide={f}", f"head --lines=1 {f}",
            "sort --comp=./evil.sh -S 1K data.txt", "sort --compress-prog=gzip data.txt",
            "tar -cf build/x.tar --checkpoint=1 src", "tar -cf build/x.tar --checkp=1 src",
            "rg --pre=cat TODO src", "rg --pr=./evil.sh TODO src", "rg --no-config TODO src",
        ])

    def near_git(r: random.Random) -> str:  # git with one option or place changed
        place = pick(r, ["src", ".", "build", "outl", "..", ".git", "git", "outl/..", "secrets"])
        conf = pick(r, ["color.ui=never", "core.quotepath=off", "log.showSignature=false",
                        f"core.pager={p}", f"core.fsmonitor={p}", f"diff.external={p}",
                        "core.hooksPath=.git/hooks", f"alias.st=!{p}", "core.editor=./evil.sh"])
        return pick(r, [
            f"git -C {place} status", f"git -C {place} log -1", f"git -c {conf} status",
            f"git -c {conf} log -1", f"git -c {conf} diff", f"git --git-dir={place} log -1",
            f"git --work-tree={place} status", f"git log -1 -- {place}", f"git diff -- {place}",
            f"git grep TODO -- {place}", f"git add {place} && git status", f"git show HEAD:{place}",
            f"git stash push -- {place}", f"git ls-files {place}", "git diff --ext-diff",
            "git diff --no-ext-diff", f"git log -1 --format='%H {place}'", "git commit -qm x",
            "git commit --allow-empty -qm x", "git commit --no-verify --allow-empty -qm x",
        ])

    def near_scripts(r: random.Random) -> str:  # sed and awk with one command changed
        f = dest_file(r)
        sed = pick(r, ["1p", "s/a/b/", "1d", f"1w {f}", "1r README.md", "1r .env", f"1e {p}",
                       "s/a/b/w build/w.txt", "y/ab/ba/", "$!N", "1!G;h;$!d", "/a/{p;q}"])
        awk = pick(r, ["{print $1}", "NR==1", "{n++} END{print n}", f"{{print > \"{f}\"}}",
                       f"{{print | \"{p}\"}}",
                       "BEGIN{while((getline l < \"README.md\")>0) print l}",
                       "BEGIN{while((getline l < \".env\")>0) print l}", "{printf \"%s\\n\", $0}",
                       f"BEGIN{{system(\"{p}\")}}", "{print length($0)}", "{gsub(/a/,\"b\")} 1"])
        return pick(r, [f"sed -n {sq(sed)} data.txt", f"sed {sq(sed)} data.txt",
                        f"sed -e {sq(sed)} README.md", f"sed -i.bak {sq(sed)} data.txt",
                        f"awk {sq(awk)} data.txt", f"awk -F: {sq(awk)} README.md",
                        f"cat data.txt | awk {sq(awk)}"])

    return {"near_output": near_output, "near_copy": near_copy, "near_env": near_env,
            "near_context": near_context, "near_abbrev": near_abbrev, "near_git": near_git,
            "near_scripts": near_scripts}


def sq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
