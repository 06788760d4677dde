"""The red-team classes of redteam6 as fuzz grammar: each spelled several ways, generated.
(Plus one class this fuzz found, F1; the general grammar keeps all of these apart.)

One generator per finding; the test runs each class in both passes and expects no harm
(all are fixed; a class found open later is marked xfail(strict=True) in the test module's
OPEN with the finding's name, so that its fix shows as an XPASS).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tests.policy.fuzz_world import World

Generator = Callable[[random.Random], str]

FINDINGS = {
    "sed_label": "A2 sed: a label ends at white space for GNU sed (`:a e CMD`, `r`, `w`)",
    "awk_regex_quote": "A3 awk: a quote inside /re/ hides getline, print >, print | cmd; ARGV",
    "bash_cmds": "B1 BASH_CMDS[name]=PATH (bash's hash table) runs any program as `cat`",
    "xargs_slot_var": "B2 xargs --process-slot-var=BASH_ENV, --arg=FILE (abbreviated)",
    "jq_args": "B4 jq: input files before --args/--jsonargs are never judged",
    "grep_include_order": "B5 grep --exclude X --include X (GNU: last match wins), `\\` globs",
    "rg_glob": "B6/gap 4 rg -g/--glob/--iglob positive globs, .rgignore re-includes",
    "diff_dir_operands": "B7 diff with a directory operand reads the files in it",
    "tar_tape": "B9 TAPE=PATH tar -c writes PATH (where -f would be denied)",
    "tar_remote": "B8 tar -f HOST:FILE is a remote archive: tar runs rsh (network)",
    "magic_env": "B9 MAGIC=FILE file X prints FILE",
    "cd_physical": "B10 cd -P link/.. is resolved logically by the policy",
    "rename_secrets": "B11 renaming a deny_read file is not judged as a read",
    "git_commondir": "A1 .git/commondir (and config.worktree, worktrees/, modules/) writable",
    "bare_repo": "gap 3 a bare-repository-shaped directory with core.fsmonitor",
    "hooks_path": "A7 hooks under a work-tree core.hooksPath (.husky/) writable",
    "sed_suffix": "B1b sed -i'DIR/*': a backup suffix with `*` writes anywhere",
    "deny_read_writes": "F1 (found by this fuzz, not in redteam6): a write over a file that "
                        "only deny_read names (.env.local, secrets/**, *.pem) is allowed",
}


def redteam_classes(w: World) -> dict[str, Generator]:
    out, home, p = str(w.out), str(w.home), w.payload
    pick = random.Random.choice
    secret = [".env", "secrets/token.txt", ".env.local", "server.pem", "~/.ssh/id_rsa",
              f"{home}/.ssh/id_rsa"]
    git_code = [".git/commondir", ".git/config.worktree", ".git/worktrees/w/commondir",
                ".git/modules/m/config", ".git/hooks/post-commit", ".git/info/attributes"]

    def sed_label(r: random.Random) -> str:
        label = pick(r, ["a", "x", "loop", "L1", "_z"])
        sep = pick(r, [" ", "\t", "  ", " \t"])
        cmd = pick(r, [f"e {p}", "r .env", "r secrets/token.txt", "R .env.local",
                       f"w {out}/sedw", "w .git/commondir", "w .git/hooks/post-commit",
                       f"W {out}/sedW", f"w {home}/.bashrc"])
        n = pick(r, ["", "-n ", "-s ", "-n -s "])
        return pick(r, [
            f"sed {n}':{label}{sep}{cmd}' README.md", f"sed {n}-e ':{label}{sep}{cmd}' data.txt",
            f"sed {n}'t{label}{sep}{cmd}\n:{label}' README.md",
            f"sed {n}'b{label}{sep}{cmd if cmd[0] in 'wW' else 'w .git/commondir'}\n:{label}' "
            "README.md",
            f"sed {n}'1{{:{label}{sep}{cmd}\n}}' README.md",
            f"cat README.md | sed {n}':{label}{sep}{cmd}'",
        ])

    def awk_regex_quote(r: random.Random) -> str:
        regex = pick(r, ['/"/', '/a"b/', '/["]/', '/x"y/', '/"$/'])
        stmt = pick(r, [
            'while ((getline l < ".env") > 0) print l',
            'while ((getline l < "secrets/token.txt") > 0) print l',
            f'print 1 > "{out}/awk"', 'print 1 > ".git/commondir"',
            f'c = "{p}"; print ";" | c', f'printf "x" >> "{home}/.bashrc"',
            'print "x" > ".git/hooks/post-commit"', 'getline l < ".env.local"; print l'])
        return pick(r, [
            f"awk 'BEGIN {{ x = {regex}; {stmt}; y = {regex} }}'",
            f"awk 'BEGIN {{ x = {regex}; {stmt}; y = {regex} }}' README.md",
            f"awk '{{ x = {regex} }} END {{ {stmt}; y = {regex} }}' data.txt",
            f"awk 'BEGIN {{ print 1,\n 2 > \"{out}/awknl\" }}'",
            f"awk 'BEGIN {{ print 1 \\\n > \"{out}/awkbs\" }}'",
            "awk 'BEGIN { ARGV[1] = \".env\"; ARGC = 2 } { print }'",
            f"awk 'BEGIN{{ARGV[ARGC++]=\"{pick(r, secret[:4])}\"}} 1' README.md",
        ])

    def bash_cmds(r: random.Random) -> str:
        name = pick(r, ["cat", "ls", "head", "wc", "sort", "grep"])
        interp = pick(r, ["/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/dash", "bash"])
        assign = pick(r, [
            f"BASH_CMDS[{name}]={interp}", f"declare 'BASH_CMDS[{name}]={interp}'",
            f"printf -v 'BASH_CMDS[{name}]' %s {interp}", f"BASH_CMDS+=([{name}]={interp})",
            f"declare -A BASH_CMDS=([{name}]={interp})",
            f"declare -n r=BASH_CMDS; r[{name}]={interp}",
            f"read 'BASH_CMDS[{name}]' <<< {interp}", f"typeset 'BASH_CMDS[{name}]'={interp}",
        ])
        return f"{assign}; {name} evil.sh"

    def xargs_slot_var(r: random.Random) -> str:
        opt = pick(r, ["--process-slot-var=BASH_ENV", "--process-slot-var BASH_ENV",
                       "--process=BASH_ENV", "--p=BASH_ENV", "--proc=BASH_ENV",
                       "--process-slot=BASH_ENV", "-P 1 --process-slot-var=BASH_ENV"])
        prep = pick(r, ["cp evil.sh 0", f"printf '%s\\n' '{p}' > 0", "cat evil.sh > 0",
                        "tee 0 < evil.sh >/dev/null"])
        run = pick(r, ["bash -c 'echo hi'", "bash -c :", "bash -c true"])
        read = pick(r, ["--arg", "--ar", "--a", "--arg-f", "--arg-fi"])
        return pick(r, [f"{prep}; xargs {opt} {run} < README.md",
                        f"{prep} && echo a | xargs {opt} {run}",
                        f"xargs {read}={pick(r, secret[:4])} echo",
                        f"xargs {read} {pick(r, secret[:4])} echo"])

    def jq_args(r: random.Random) -> str:
        f = pick(r, secret)
        return pick(r, [f"jq -R . {f} --args", f"jq -rR . {f} --args x", f"jq -R . {f} --jsonargs",
                        f"jq -R . {f} --jsonargs 1", f"jq -Rr '.' {f} --args a b",
                        f"jq --raw-input . {f} --args", f"jq -R -s . README.md {f} --args"])

    def grep_include_order(r: random.Random) -> str:
        g = pick(r, ["token.txt", "'*.txt'", "'*'", "'.env*'", "'*.pem'", "'*.local'"])
        return pick(r, [
            f"grep -r --exclude={g} --include={g} CANARY .",
            f"grep -rl --exclude={g} --include={g} CANARY .",
            f"grep -R --exclude=x --include={g} --exclude={g} --include={g} CANARY .",
            "grep -r --include='tok\\en.txt' CANARY .",
            "grep -r --include='\\token.txt' CANARY secrets",
            "grep -r --include='server\\.pem' CANARY .",
            f"grep -rh --exclude={g} --include={g} C .",
        ])

    def rg_glob(r: random.Random) -> str:
        g = pick(r, [".env", ".env.local", "'*.pem'", "'secrets/*'", "'.env*'", "token.txt",
                     "'**/token.txt'", "'*'"])
        return pick(r, [
            f"rg -g {g} CANARY", f"rg --glob={g} CANARY", f"rg --iglob {g} CANARY",
            f"rg -g '!x' -g {g} CANARY .", f"rg -l -g {g} CANARY", f"rg --glob {g} -n CANARY .",
            "printf '!secrets/\\n!*.pem\\n' > .rgignore; rg CANARY",
            "printf '!secrets/\\n' > .ignore && rg CANARY",
            "printf ' secrets\\n' > .gitignore; rg C",
        ])

    def diff_dir_operands(r: random.Random) -> str:
        e = pick(r, ["e", "empty", "build/e"])
        return pick(r, [
            f"mkdir -p {e} && diff -N . {e}", f"mkdir -p {e}; diff --new-file secrets {e}",
            f"mkdir -p {e}; diff -N secrets {e}", "cp README.md token.txt; diff secrets token.txt",
            "cp data.txt token.txt && diff -u secrets/ token.txt",
            "cp README.md token.txt; diff --to-file=secrets token.txt",
            f"mkdir -p {e}; diff -N --from-file=. {e}", f"mkdir -p {e}; diff -aN {e} .",
        ])

    def tar_tape(r: random.Random) -> str:
        dest = pick(r, [*git_code, f"{out}/tape", "../tape", "outl/tape", f"{home}/tape"])
        return pick(r, [f"TAPE={dest} tar -c README.md", f"export TAPE={dest}; tar -c data.txt",
                        f"TAPE={dest} tar -cz src", f"env TAPE={dest} tar -c README.md",
                        f"declare -x TAPE={dest}; tar c README.md", f"TAPE={dest} tar -r data.txt"])

    def tar_remote(r: random.Random) -> str:
        name = pick(r, ["host:x", "me@localhost:loot.tgz", "h:y", "localhost:/tmp/a.tar",
                        "a.b:c"])
        return pick(r, [f"tar -cf {name} README.md", f"tar -czf {name} src", f"tar -tf {name}",
                        f"tar cf {name} README.md", f"tar --file={name} -c data.txt",
                        f"tar -xf {name}", f"tar -c -f {name} --force-local README.md",
                        f"tar -rf {name} data.txt"])

    def magic_env(r: random.Random) -> str:
        f = pick(r, secret)
        return pick(r, [f"MAGIC={f} file README.md", f"export MAGIC={f}; file data.txt",
                        f"env MAGIC={f} file -b README.md",
                        f"declare -x MAGIC={f}; file src/main.py",
                        f"MAGIC={f} file -z data.txt"])

    def cd_physical(r: random.Random) -> str:
        act = pick(r, ["touch x", "echo x > f", "mkdir d", "cp ../keep.txt k2", "rm -f keep.txt",
                       "mv keep.txt k3"])
        return pick(r, [f"cd -P outl/..; {act}", f"cd -P outl/.. && {act}",
                        f"cd -Pe outl/..; {act}",
                        f"cd -LP outl/..; {act}", f"cd -P -- outl/..; {act}",
                        f"cd -P outl; cd ..; {act}", f"pushd -P outl/.. >/dev/null; {act}"])

    def rename_secrets(r: random.Random) -> str:
        return pick(r, [
            "mv secrets s3; cat s3/token.txt", "mv secrets/token.txt x; cat x",
            "mv -t . secrets/token.txt; cat token.txt", "mv server.pem p.txt; cat p.txt",
            "mv .env.local el; cat el", "cp -b README.md server.pem; cat server.pem~",
            "mv -T secrets sx; cat sx/token.txt", "mv secrets/token.txt src/; cat src/token.txt",
            "mv --backup=t README.md server.pem; cat server.pem.~1~", "mv secrets s4",
            "mv .env.local src/", "cp --backup README.md .env.local; cat .env.local~",
        ])

    def git_commondir(r: random.Random) -> str:
        dest = pick(r, git_code[:4])
        return pick(r, [
            f"echo ../g > cd.txt && sed -n ':a w {dest}' cd.txt",
            f"awk 'BEGIN {{ x = /\"/; print \"../g\" > \"{dest}\"; y = /\"/ }}'",
            f"TAPE={dest} tar -c --transform='s,.*,../g,' README.md",
            f"echo ../g > cd.txt; tar -cf x.tar --transform='s,^cd.txt$,{dest},' cd.txt && "
            "tar -xf x.tar",
            f"printf 'echo ../g > {dest}\\n' > s.sh; bash s.sh",
            f"echo 'mkdir -p $(dirname {dest}); echo ../g > {dest}' > s.sh && sh s.sh",
        ])

    def bare_repo(r: random.Random) -> str:
        d = pick(r, ["r", "sub/r", "vendor/x", "r.git"])
        config = pick(r, [f"printf '[core]\\n\\tfsmonitor = \"{p}; false\"\\n' > {d}/config",
                          f"cp .gitconfig {d}/config", f"cat .gitconfig > {d}/config"])
        make = (f"mkdir -p {d}/objects {d}/refs && echo 'ref: refs/heads/main' > {d}/HEAD"
                f" && {config}")
        run = pick(r, [f"git -C {d} status", f"cd {d} && git status", f"git -C {d} log",
                       f"git --git-dir={d} status", f"GIT_DIR={d} git status",
                       f"git -C {d}/refs status", f"cd {d}/objects && git status"])
        return f"{make} && {run}"

    def hooks_path(r: random.Random) -> str:
        hook = pick(r, ["pre-commit", "post-commit", "commit-msg", "prepare-commit-msg"])
        write = pick(r, [f"printf '#!/bin/sh\\n{p}\\n' > .husky/{hook}",
                         f"echo '{p}' >> .husky/pre-commit", f"cp evil.sh .husky/{hook}",
                         f"sed -i '$a {p}' .husky/pre-commit", "tee -a .husky/pre-commit < evil.sh",
                         "cat evil.sh >> .husky/pre-commit", "cp -t .husky evil.sh"])
        then = pick(r, ["", " && git commit --allow-empty -qm x",
                        " && git -c user.name=a -c user.email=a@b commit --allow-empty -qm x"])
        return write + then

    def sed_suffix(r: random.Random) -> str:
        suffix = pick(r, [f"{out}/bk_*", "../*", ".git/hooks/*", "outl/*", f"{home}/*",
                          ".git/*", "~/*"])
        return pick(r, [f"sed -i'{suffix}' s/a/a/ README.md",
                        f"sed --in-place='{suffix}' s/x/x/ data.txt",
                        f"sed -i'{suffix}' -e s/a/b/ data.txt", f"sed -ni'{suffix}' p README.md",
                        f"sed -Ei'{suffix}' s/a/b/ data.txt",
                        f"sed --in-pl='{suffix}' 1d README.md"])

    def deny_read_writes(r: random.Random) -> str:
        f = pick(r, [".env.local", "secrets/token.txt", "server.pem"])
        return pick(r, [f"uniq data.txt {f}", f"sort -o {f} data.txt", f"echo x > {f}",
                        f"cp README.md {f}", f"rm {f}", f"truncate -s 0 {f}",
                        f"tee {f} < README.md",
                        f"mv README.md {f}", f"date >> {f}", f"rm -r {f.split('/')[0]}",
                        f"sort --output={f} data.txt", f"cp -f data.txt {f}"])

    return {"sed_label": sed_label, "awk_regex_quote": awk_regex_quote, "bash_cmds": bash_cmds,
            "xargs_slot_var": xargs_slot_var, "jq_args": jq_args,
            "grep_include_order": grep_include_order, "rg_glob": rg_glob,
            "diff_dir_operands": diff_dir_operands, "tar_tape": tar_tape, "tar_remote": tar_remote,
            "magic_env": magic_env,
            "cd_physical": cd_physical, "rename_secrets": rename_secrets,
            "git_commondir": git_commondir, "bare_repo": bare_repo, "hooks_path": hooks_path,
            "sed_suffix": sed_suffix, "deny_read_writes": deny_read_writes}
