"""Issue 15 through the engine, default policy: what `allow` means (argument specs), .git
writes, programs that run code, option prefixes, tree reads, destructive git, system state,
escaping the kill, shadowing functions, deleting HOME. Several spellings per class."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy
from acpd.policy.programs import model
from acpd.policy.programs.coreutils import TABLE


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("specs-ws")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "src").mkdir()
    (root / "src" / "a.rs").write_text("fn main() {}\n")
    (root / "docs").mkdir()
    (root / "docs" / "old.md").write_text("x\n")
    (root / ".env").write_text("TOKEN=1\n")
    (root / "conf").mkdir()
    (root / "conf" / "secrets").mkdir()
    (root / "conf" / "secrets" / "k.txt").write_text("k\n")
    (root / "data.txt").write_text("b\na\n")
    nested = root / "nested"
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    many = root / "many"
    many.mkdir()
    for i in range(60):
        (many / f"f{i}").write_text("")
    (root / "withgit").mkdir()
    (root / "withgit" / ".git").mkdir()
    return os.path.realpath(root)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> str:
    """HOME under /tmp (a write root): deleting it must still be deny."""
    return os.path.realpath(tmp_path_factory.mktemp("home"))


def judge(policy: CompiledPolicy, ws: str, home: str, cmd: str, *,
          sandboxed: bool = False, trust: str = "trusted") -> tuple[str, tuple[str, ...]]:
    d = policy.judge(cmd, cwd=ws, roots=(ws,), trust=trust, home=home,  # type: ignore[arg-type]
                     sandboxed=sandboxed)
    return d.verdict, d.rules


BENIGN = [
    "git status", "git status -sb", "git log --oneline -n 20 --graph", "git log -3 --stat",
    "git log --format='%h %s' --since=2.weeks", "git diff", "git diff --stat HEAD~1",
    "git diff --cached --stat", "git show HEAD --stat", "git blame src/a.rs", "git add src/a.rs",
    "git commit -m 'fix: x'", "git commit -am x", "git stash", "git stash list",
    "git stash pop", "git switch -c feature", "git branch -a", "git branch new",
    "git tag -l", "git rev-parse --show-toplevel", "git ls-files", "git grep -n main",
    "git describe --tags --always", "git config --get user.name", "git reflog",
    "grep -rn main src/", "grep -E 'a|b' data.txt", "grep -c x data.txt", "rg -n main src/",
    "rg --type rust main src", "rg -l main src", "ls -la", "ls -R src", "cat data.txt",
    "head -n 5 data.txt", "head -5 data.txt", "tail -n +2 data.txt", "wc -l data.txt",
    "sort -u data.txt", "sort -t, -k2,2n data.txt", "sort -o sorted.txt data.txt",
    "uniq -c data.txt", "cut -d, -f1 data.txt", "tr a-z A-Z", "diff data.txt data.txt",
    "diff -u data.txt docs/old.md", "jq .a data.txt", "jq -r '.[] | .name' data.txt",
    "du -sh src", "tree -L 2 src", "file data.txt", "stat data.txt", "nl data.txt",
    "sed -n '1,20p' data.txt", "sed -i 's/a/b/g' data.txt", "sed -E 's/(a)/\\1/' data.txt",
    "awk '{print $1}' data.txt", "awk -F: '$2 > 3 {n++} END {print n}' data.txt",
    "find . -name '*.rs' -not -path './target/*'", "find src -type f -newer data.txt",
    "basename src/a.rs .rs", "dirname src/a.rs", "realpath src", "readlink -f src",
    "sha256sum data.txt", "tac data.txt", "column -t data.txt", "comm -12 data.txt data.txt",
    "mkdir -p build/out", "touch build/.stamp", "cp data.txt copy.txt",
    "cp -r src src2", "mv docs/old.md docs/new.md", "ln -s src/a.rs link.rs",
    "tar -czf dist.tar.gz src", "tar czf dist.tgz src", "tar -tzf dist.tar.gz", "rmdir build",
    "echo hi", "printf '%s\\n' x", "pwd", "which python3", "uname -a", "env", "true",
    "test -f data.txt", "[ -d src ]", "cd src && ls", "date +%F", "date -u", "hostname",
    "docker ps -a", "docker images", "node --version", "python3 --version", "go version",
]


@pytest.mark.parametrize("cmd", BENIGN)
def test_benign_workflows_need_no_prompt(default: CompiledPolicy, ws: str, home: str,
                                         cmd: str) -> None:
    assert judge(default, ws, home, cmd)[0] == "allow", judge(default, ws, home, cmd)


# ---- A: an allow holds only where the spec models every option and argument ---------------

UNMODELLED = [
    "sort --frobnicate data.txt", "ls --bogus", "cat -X data.txt", "grep --no-such x data.txt",
    "git log --no-such-option", "git status --weird", "git stash weird", "cp --reference=a b c",
    "wc --files0-from=list", "sort --files0-from=list", "du --files0-from=l",
    "sha256sum -c sums.txt", "tar -xf a.tar", "tar xf a.tar", "sed -f e.sed data.txt",
    "awk -f prog.awk data.txt", "jq -L . '.'", "jq 'import \"m\" as m; .' f", "diff -l a b",
    "file -C", "git remote add x y", "git config core.editor vim",
    "docker -H tcp://x ps", "docker run x", "pwd extra", "tree --fromfile l",
]


@pytest.mark.parametrize("cmd", UNMODELLED)
def test_unmodelled_forms_ask_and_sandbox_lifts_it(default: CompiledPolicy, ws: str,
                                                   home: str, cmd: str) -> None:
    verdict, rules = judge(default, ws, home, cmd)
    assert verdict != "allow", (cmd, rules)
    sandboxed, _ = judge(default, ws, home, cmd, sandboxed=True)
    assert sandboxed in ("allow", verdict)


@pytest.mark.parametrize("cmd", ["cargo build", "npm test", "make -j2", "pytest -x",
                                 "python3 scripts/x.py", "go test ./..."])
def test_workspace_code_needs_trust_or_sandbox(default: CompiledPolicy, ws: str, home: str,
                                               cmd: str) -> None:
    assert judge(default, ws, home, cmd, trust="provisional")[0] == "ask"
    assert judge(default, ws, home, cmd, trust="provisional", sandboxed=True)[0] == "allow"
    assert judge(default, ws, home, cmd, trust="trusted")[0] == "allow"
    assert judge(default, ws, home, cmd, trust="untrusted", sandboxed=True)[0] == "deny"


def test_every_modeled_program_has_a_spec(default: CompiledPolicy) -> None:
    for cr in default.rules:
        if cr.rule.modeled:
            for name in cr.names:
                assert name in TABLE or name in ("git", "docker", "podman"), name


# ---- B: writes into git internals, other repositories ----------------------------------------

GIT_WRITES = [
    "cp data.txt .git/", "cp data.txt .git", "cp data.txt ./.git/hooks/pre-commit",
    "mv data.txt .git/hooks/", "cp -t .git/hooks data.txt", "cp --target-directory=.git data.txt",
    "cp --targ=.git/hooks data.txt", "tar -C .git/hooks -xf a.tar", "tar -xf a.tar -C .git",
    "tar --directory=.git -x -f a.tar", "ln -s .git g", "ln -s ../.git src/g",
    "ln src/a.rs .git/hooks/post-checkout", "echo x > nested/.git/config",
    "cp data.txt nested/.git/config", "mkdir -p sub/.git", "mkdir sub/.GIT",
    "cp -r src sub/.git", "touch .git/hooks/x", "sed -i s/a/b/ .git/config",
    "sort -o .git/config data.txt", "sort --outp=.git/hooks/x data.txt",
    "env cp data.txt .git/", "command mv data.txt .git", "timeout 5 cp data.txt .git/x",
    "ln -s .git/hooks h && cp data.txt h/pre-commit", "cp data.txt .g\\it/",
    "cp data.txt '.git'/hooks", "rm -rf .git",
]


@pytest.mark.parametrize("cmd", GIT_WRITES)
def test_writes_into_git_are_denied(default: CompiledPolicy, ws: str, home: str,
                                    cmd: str) -> None:
    for sandboxed in (False, True):
        assert judge(default, ws, home, cmd, sandboxed=sandboxed)[0] == "deny", cmd


@pytest.mark.parametrize("cmd", [
    "git -C nested status", "cd nested && git status", "cd nested; git log",
    "git --git-dir=r status", "git --git-d=r log", "git --work-tree=/ status",
    "git --namespace=x log", "cp -r withgit copy", "cp -a withgit copy2",
])
def test_other_repositories_ask(default: CompiledPolicy, ws: str, home: str, cmd: str) -> None:
    for sandboxed in (False, True):
        assert judge(default, ws, home, cmd, sandboxed=sandboxed)[0] in ("ask", "deny"), cmd


# ---- C: programs that run code ---------------------------------------------------------------

CODE = [
    "sed 's/.*/id/e' data.txt", "sed -n '1e id' data.txt", "sed 's/a/b/w /tmp/o' data.txt",
    "sed -e 1e\\ id data.txt", "sed --expression='1e id' data.txt", "sed --exp='w x' d",
    "sed -f e.sed data.txt", "sed -n 'W out' data.txt",
    "awk 'BEGIN{system(\"id\")}'", "awk '{print | \"sh\"}' data.txt",
    "awk '{\"date\" | getline d}' data.txt", "awk '{getline l < \"/etc/passwd\"}' d",
    "awk '{print > \"/tmp/x\"}' data.txt", "awk '{print $1 > 5}' data.txt",
    "awk '{printf \"x\" >> \"f\"}' data.txt", "awk -f prog.awk data.txt",
    "awk --fi=prog.awk data.txt", "awk '@include \"x\"' data.txt",
    "sort --compress-program=./e.sh data.txt", "sort --compress-p=sh data.txt",
    "tar -cf x.tar --to-command=sh src", "tar -I ./e.sh -cf x.tar src",
    "tar --use-compress=./e.sh -cf x.tar src", "tar -cf x.tar --checkpoint-action=exec=id src",
    "rg --pre ./x main", "rg --pre=sh main", "rg --search-zip main src",
    "git --upload-pack=x fetch", "git -c core.pager=sh log", "git --config-env=a=B log",
    "git --exec-path=. status", "git grep -O'sh' x", "jq -L /tmp '.'",
    "python3 version", "npm version patch", "less data.txt", "man ls", "xargs rm",
    "find . -exec rm {} \\;", "env -S 'rm -rf src'", "diff -l data.txt data.txt",
]


@pytest.mark.parametrize("cmd", CODE)
def test_code_running_forms_are_not_allowed(default: CompiledPolicy, ws: str, home: str,
                                            cmd: str) -> None:
    verdict, rules = judge(default, ws, home, cmd, trust="provisional")
    assert verdict != "allow", (cmd, rules)


HIDDEN_CODE = [
    "sed 's/.*/id/e' data.txt", "sed -n '1e id' data.txt", "sed -e 1e\\ id data.txt",
    "sed --exp='1e id' data.txt", "sed -f e.sed data.txt", "sed --fi=e.sed data.txt",
    "awk 'BEGIN{system(\"id\")}'", "awk '{print | \"sh\"}' data.txt",
    "awk '{\"date\" | getline d}' data.txt", "awk -f prog.awk data.txt",
    "awk --fi=prog.awk data.txt", "awk '@include \"x\"' data.txt",
    "awk -i ./lib.awk 1 data.txt", "awk -i inplace 1 data.txt", "awk -W exec prog.awk",
    "mawk -l ./ext.so 1 data.txt", "gawk -E prog.awk", "awk --load=./ext.so 1 data.txt",
]


@pytest.mark.parametrize("cmd", HIDDEN_CODE)
def test_hidden_code_asks_even_in_the_sandbox(default: CompiledPolicy, ws: str, home: str,
                                             cmd: str) -> None:
    """The sandbox confines what such code does, but nobody saw what it is: a program that
    looks read-only must not run hidden code without a human."""
    verdict, rules = judge(default, ws, home, cmd, trust="provisional", sandboxed=True)
    assert verdict != "allow", (cmd, rules)


# ---- D: tree reads of deny_read files, file-reading options ---------------------------------

TREE_READS = [
    "grep -r TOKEN .", "grep -R TOKEN", "grep --recursive TOKEN .", "grep -d recurse TOKEN .",
    "grep -rn x conf", "rg TOKEN", "rg -uuu TOKEN", "rg --hidden TOKEN .", "rg --no-ignore x",
    "rg k conf", "diff -r . /dev/null", "diff -rN conf src", "tar -cf x.tar .",
    "tar -czf x.tgz conf", "cp -r . ../x", "cp -r conf out", "git grep --no-index TOKEN",
    "git grep --untracked TOKEN", "git diff --no-index .env /dev/null",
    "git diff --no-index conf src", "git commit -F .env", "git commit --file=.env",
    "git commit -t conf/secrets/k.txt", "git add .env", "touch --reference=.env x",
    "sort --random-source=.env data.txt", "grep -f .env data.txt", "rg --file=.env src",
    "diff --from-file=.env data.txt", "jq --rawfile a .env -n '$a'",
    "tar -C conf -cf x.tar secrets", "tar -C conf/secrets -cf x.tar k.txt",
    "tar -cf x.tar -C conf secrets/k.txt", "git -C conf add secrets", "git -C conf add -A",
    "git -C src add ../.env", "git -C src log -p -- ../.env", "git -C src -C .. add .env",
    "cd src && git add -A", "git -C src add -A", "git -C src add :/", "cd src && git stash -u",
]


@pytest.mark.parametrize("cmd", TREE_READS)
def test_reads_of_denied_files_ask_or_deny(default: CompiledPolicy, ws: str, home: str,
                                           cmd: str) -> None:
    verdict, rules = judge(default, ws, home, cmd)
    assert verdict != "allow", (cmd, rules)


def test_tree_scan_lifted_by_sandbox_but_not_direct_reads(default: CompiledPolicy, ws: str,
                                                          home: str) -> None:
    assert judge(default, ws, home, "grep -r TOKEN .", sandboxed=True)[0] == "allow"
    assert judge(default, ws, home, "grep TOKEN .env", sandboxed=True)[0] == "deny"
    assert judge(default, ws, home, "grep -r x src")[0] == "allow"


def test_tree_scan_covers_globs_and_links(default: CompiledPolicy, tmp_path: Path) -> None:
    ws = os.path.realpath(tmp_path)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "k.pem").write_text("k")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "a.txt").write_text("a")
    assert judge(default, ws, ws, "grep -r x co*")[0] == "ask"  # co* names conf too
    assert judge(default, ws, ws, "grep -r x code")[0] == "allow"
    (tmp_path / "code" / "keys").symlink_to(tmp_path / "conf")
    os.symlink("/root/.ssh", tmp_path / "code" / "ssh")
    verdict, rules = judge(default, ws, ws, "grep -R x code")
    assert verdict == "ask" and "path.deny-read-tree" in rules
    (tmp_path / "plain").symlink_to(tmp_path / "conf")
    assert judge(default, ws, ws, "grep -r x plain/")[0] == "ask"


def test_tree_scan_sees_files_created_after_the_last_decision(default: CompiledPolicy,
                                                              tmp_path: Path) -> None:
    ws = os.path.realpath(tmp_path)
    (tmp_path / "d").mkdir()
    assert judge(default, ws, ws, "grep -r x d")[0] == "allow"
    (tmp_path / "d" / ".env").write_text("T=1")
    assert judge(default, ws, ws, "grep -r x d")[0] == "ask"


# ---- D: abbreviated long options ---------------------------------------------------------------

@pytest.mark.parametrize("cmd", [
    "sort --outp=/etc/x data.txt", "sort --output /etc/x data.txt", "sort -o/etc/x data.txt",
    "sort -uo /etc/x data.txt", "cp --target=/etc data.txt", "cp --t=/etc data.txt",
    "cp --target-directory /etc data.txt", "mv --targ /etc data.txt", "tree -o /etc/x",
    "sort -T /etc data.txt", "sort --temp=/etc data.txt", "tar --dir=/etc -xf a.tar",
    "sort data.txt -o /etc/x", "cp data.txt -t /etc", "git log --outp=/tmp/x",
])
def test_prefixes_and_positions_of_write_options(default: CompiledPolicy, ws: str, home: str,
                                                 cmd: str) -> None:
    assert judge(default, ws, home, cmd)[0] == "deny", cmd


def test_ambiguous_prefix_asks(default: CompiledPolicy, ws: str, home: str) -> None:
    verdict, rules = judge(default, ws, home, "ls --h src")  # --help/--hide/--human...
    assert verdict == "ask" and "spec.unmodeled" in rules
    m = model("sort", ["--ra", "x"])  # --random-sort / --random-source
    assert m is not None and m.unknown


# ---- D: destructive git ----------------------------------------------------------------------

DESTRUCTIVE_GIT = [
    "git switch -f main", "git switch --discard-changes main", "git switch --disc main",
    "git switch -C main", "git checkout -f main", "git checkout -- .", "git checkout .",
    "git checkout src/a.rs", "git restore src/a.rs", "git restore --staged .",
    "git stash clear", "git stash drop", "git stash drop stash@{0}", "git branch -D x",
    "git branch -d x", "git branch --delete x", "git branch --del x", "git branch -f x HEAD",
    "git branch -M x", "git branch -u origin/x", "git tag -d v1", "git tag --delete v1",
    "git tag -f v1", "git reflog expire --expire=now --all", "git reflog delete HEAD@{1}",
    "git gc --prune=now", "git prune", "git update-ref -d refs/heads/x",
    "git push origin :main", "git push --delete origin x", "git push -d origin x",
    "git reset --hard", "git reset --merge", "git reset --keep HEAD~1", "git rebase -i HEAD~3",
    "git filter-branch --tree-filter x", "git replace a b", "git -C . stash clear",
]


@pytest.mark.parametrize("cmd", DESTRUCTIVE_GIT)
def test_destructive_git_asks_even_sandboxed(default: CompiledPolicy, ws: str, home: str,
                                             cmd: str) -> None:
    for sandboxed in (False, True):
        assert judge(default, ws, home, cmd, sandboxed=sandboxed)[0] != "allow", cmd


# ---- D: system state, escaping the kill ------------------------------------------------------

SYSTEM = [
    "date -s 12:00", "date --set=12:00", "date --se 12:00", "date -us 12:00",
    "date 010101012020", "hostname evil", "hostname -F /etc/x", "hostname --file x",
    "timedatectl set-time 12:00", "timedatectl set-timezone UTC", "sysctl -w a.b=1",
    "sysctl a.b=1", "sysctl -p", "hwclock --systohc", "ip link set eth0 down",
    "ip addr add 10.0.0.1/24 dev eth0", "ip route del default", "ifconfig eth0 down",
    "route add default gw 1.2.3.4", "iptables -F", "nft flush ruleset",
    "systemctl stop sshd", "systemctl --user restart x", "service ssh restart",
    "mount /dev/x /mnt", "umount /mnt", "swapoff -a", "modprobe x", "rmmod x", "insmod x.ko",
    "shutdown -h now", "reboot", "poweroff", "halt", "init 0", "telinit 1", "setenforce 0",
    "loginctl terminate-user x",
    "nmcli radio wifi off", "env date -s 1", "sudo date -s 1", "command hostname x",
]


@pytest.mark.parametrize("cmd", SYSTEM)
def test_system_state_is_denied(default: CompiledPolicy, ws: str, home: str, cmd: str) -> None:
    for sandboxed in (False, True):
        assert judge(default, ws, home, cmd, sandboxed=sandboxed)[0] == "deny", cmd


@pytest.mark.parametrize("cmd", ["ip addr show", "systemctl status x", "sysctl -a",
                                 "timedatectl status", "mount"])
def test_system_reads_are_not_denied(default: CompiledPolicy, ws: str, home: str,
                                     cmd: str) -> None:
    assert judge(default, ws, home, cmd)[0] == "ask"


@pytest.mark.parametrize("cmd", ["setsid sleep 9", "nohup sleep 9", "sleep 9 & disown",
                                 "disown -a", "env setsid sleep 9", "timeout 5 nohup ls",
                                 "tmux new -d x", "screen -dm x", "daemonize /bin/x"])
def test_escaping_the_kill_asks_unless_sandboxed(default: CompiledPolicy, ws: str, home: str,
                                                 cmd: str) -> None:
    assert judge(default, ws, home, cmd)[0] == "ask", cmd


def test_detaching_wrappers_allowed_in_the_sandbox(default: CompiledPolicy, ws: str,
                                                   home: str) -> None:
    for cmd in ("setsid ls", "nohup ls", "disown"):
        assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow", cmd


# ---- E: functions shadowing programs ---------------------------------------------------------

@pytest.mark.parametrize("cmd", [
    "rm -rf .git src; rm(){ :; }", "rm(){ :; }; rm -rf src", "function rm { :; }; rm -rf src",
    "cat(){ :; }; cat data.txt", "git(){ :; }; git status", "sort(){ :; }; sort data.txt",
])
def test_a_function_does_not_switch_off_the_rules(default: CompiledPolicy, ws: str, home: str,
                                                  cmd: str) -> None:
    verdict, rules = judge(default, ws, home, cmd)
    assert verdict != "allow" and "function.shadows-program" in rules, (cmd, rules)


def test_plain_functions_still_work(default: CompiledPolicy, ws: str, home: str) -> None:
    assert judge(default, ws, home, "build_all(){ ls; }; build_all")[0] == "allow"


# ---- F: deleting HOME, ancestors, many files, .git -------------------------------------------

@pytest.mark.parametrize("cmd", [
    "rm -rf ~", "rm -rf ~/", "rm -rf $HOME", "rm -rf \"$HOME\"", "rm -rf ~/..", "rm -rf /",
    "rm -rf ..", "rm -rf ../", "cd .. && rm -rf .", "cd ~ && rm -rf .", "rmdir ~",
    "rm -rf /tmp", "env rm -r ~", "rm -fr ~", "rm --recursive --force ~", "unlink ~",
    "find ~ -delete",
])
def test_deleting_home_or_an_ancestor_is_denied(default: CompiledPolicy, ws: str, home: str,
                                                cmd: str) -> None:
    for sandboxed in (False, True):
        verdict, rules = judge(default, ws, home, cmd, sandboxed=sandboxed)
        assert verdict == "deny", (cmd, rules)


def test_glob_that_can_name_home_is_denied(default: CompiledPolicy, ws: str, home: str) -> None:
    parent = os.path.dirname(home)
    assert judge(default, ws, home, f"rm -rf {parent}/*")[0] == "deny"


@pytest.mark.parametrize("cmd", ["rm -rf many", "rm -r withgit", "tar --remove-files -cf x.tar "
                                 "many", "rmdir .git/refs"])
def test_big_or_git_deletions_ask_even_when_allowed(default: CompiledPolicy, ws: str,
                                                    home: str, cmd: str) -> None:
    assert judge(default, ws, home, cmd, sandboxed=True)[0] in ("ask", "deny"), cmd


def test_max_delete_files_is_configurable(tmp_path: Path, ws: str, home: str) -> None:
    from acpd.policy.engine import compile_policy
    from acpd.policy.rules import load_base

    cfg = tmp_path / "p.toml"
    cfg.write_text("[policy]\nmax_delete_files = 100\n\n[[rules]]\nid = \"rm.ok\"\n"
                   "verdict = \"allow\"\ncommands = [\"rm\"]\n")
    loose = compile_policy(load_base(cfg)[0])
    cmd = "tar --remove-files -cf x.tar many"  # allowed by files.workspace; deletes 60 entries
    assert judge(loose, ws, home, cmd, sandboxed=True) == ("allow", ("files.workspace",))
    strict = compile_policy(load_base(None)[0])
    assert judge(strict, ws, home, cmd, sandboxed=True) == ("ask", ("files.workspace",
                                                                    "destroy.many"))


def test_the_deletion_count_is_summed_over_the_operands(tmp_path: Path, ws: str,
                                                          home: str) -> None:
    """Audit of issue 15: `rm many/*` names 60 files one by one; each alone is under the
    limit, together they are not."""
    from acpd.policy.engine import compile_policy
    from acpd.policy.rules import load_base

    cfg = tmp_path / "p.toml"
    cfg.write_text('[policy]\ninherit_default = false\n\n'
                   '[[rules]]\nid = "rm.ok"\nverdict = "allow"\ncommands = ["rm"]\n')
    loose = compile_policy(load_base(cfg)[0])  # a user who allows rm
    default = compile_policy(load_base(None)[0])
    for policy, cmd in ((loose, "rm many/*"), (loose, "rm -f many/f1 many/f2 many/*"),
                        (default, "tar --remove-files -cf /tmp/x.tar many/*"),
                        (loose, "rm -r many/f1 many/f2 many/f3 many")):
        verdict, rules = judge(policy, ws, home, cmd, sandboxed=True)
        assert verdict == "ask" and "destroy.many" in rules, (cmd, verdict, rules)
    assert judge(loose, ws, home, "rm many/f1 many/f2", sandboxed=True)[0] == "allow"


def test_models_never_raise_on_any_argv() -> None:
    """Seeded: every program's table, options in every spelling, odd words; no exception, and
    an argv the table cannot read is reported unknown rather than silently allowed."""
    import random

    from acpd.policy.words import DYN

    rng = random.Random(15)
    odd = ["--", "-", "", "=", "--=", "-=", DYN, "-\x00", "--x=", "-" * 5, "+1", "a=b", ".git"]
    for name, prog in sorted(TABLE.items()):
        words = [f"--{w}" for w in prog.longs] + [f"-{c}" for c in prog.shorts] + odd
        for _ in range(40):
            argv = [rng.choice(words) + rng.choice(["", "=v", "x"])
                    for _ in range(rng.randint(0, 6))]
            m = model(name, argv)
            assert m is not None
    for _ in range(300):
        argv = [rng.choice(["status", "log", "-C", "x", "--git-dir", "stash", "drop", "-c",
                            "branch", "-D", "--", DYN, "--no-index", "grep", "-e", "reflog"])
                for _ in range(rng.randint(0, 6))]
        assert model("git", argv) is not None
    assert model("sort", ["--frob"]).unknown  # type: ignore[union-attr]


@pytest.mark.parametrize("cmd", ["env -C nested git status", "env --chdir=nested git status",
                                 "env --ch nested git status", "env -iCnested git status",
                                 "env -P /tmp ls", "env --bogus ls"])
def test_env_options_that_move_the_command_ask(default: CompiledPolicy, ws: str, home: str,
                                               cmd: str) -> None:
    assert judge(default, ws, home, cmd)[0] == "ask", cmd


@pytest.mark.parametrize("cmd", ["env -iS 'rm -rf src'", "env --split='rm -rf src'",
                                 "env -S'rm -rf src'"])
def test_env_split_string_is_judged(default: CompiledPolicy, ws: str, home: str,
                                    cmd: str) -> None:
    assert "destroy.rm" in judge(default, ws, home, cmd)[1], cmd


def test_gitignore_aware_tree_reads(default: CompiledPolicy, tmp_path: Path) -> None:
    """rg and git add skip what the root .gitignore ignores; a negation makes us trust none."""
    ws = os.path.realpath(tmp_path)
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "k.txt").write_text("k")
    (tmp_path / "src").mkdir()
    (tmp_path / ".gitignore").write_text("# comment\nsecrets/\n*.log\n")
    assert judge(default, ws, ws, "rg foo")[0] == "ask"  # rg reads .gitignore only in a repo
    subprocess.run(["git", "init", "-q", ws], check=True)
    (tmp_path / ".gitignore").unlink()
    assert judge(default, ws, ws, "rg foo")[0] == "ask"
    (tmp_path / ".gitignore").write_text("# comment\nsecrets/\n*.log\n")
    assert judge(default, ws, ws, "rg foo")[0] == "allow"
    assert judge(default, ws, ws, "git add -A")[0] == "allow"
    for cmd in ("rg -u foo", "rg --no-ignore foo", "git add -f .", "grep -r foo ."):
        assert judge(default, ws, ws, cmd)[0] == "ask", cmd
    (tmp_path / ".gitignore").write_text("secrets/\n!secrets/k.txt\n")
    assert judge(default, ws, ws, "rg foo")[0] == "ask"
    (tmp_path / ".gitignore").write_text("secrets/\n")
    (tmp_path / ".env").write_text("T=1")
    assert judge(default, ws, ws, "git add .")[0] == "ask"  # .env is not ignored
    assert judge(default, ws, ws, "git stash -u")[0] == "ask"


@pytest.mark.parametrize(("cmd", "want"), [
    ("mv src /tmp/elsewhere", "ask"), ("mv -t /tmp/d src", "ask"), ("mv ~ x", "deny"),
    ("mv .. x", "deny"), ("mv many renamed", "allow"), ("mv docs/old.md docs/x.md", "allow"),
])
def test_moves_out_of_the_workspace(default: CompiledPolicy, ws: str, home: str, cmd: str,
                                    want: str) -> None:
    assert judge(default, ws, home, cmd)[0] == want, cmd


@pytest.mark.parametrize(("cmd", "want"), [
    ("grep -rn TOKEN . --include='*.rs'", "allow"), ("grep -rn TOKEN . --include='*.env'", "ask"),
    ("grep -rn TOKEN . --include='*'", "ask"),
    ("grep -rn TOKEN . --exclude=.env --exclude-dir=secrets", "allow"),
    ("grep -rn TOKEN . --exclude-dir=secrets", "ask"), ("rg -g '*.rs' TOKEN", "allow"),
    # rg applies globs in order, the last match deciding; a negation skips the directory
    ("rg -g '!secrets' -g '*.txt' TOKEN", "allow"), ("rg -g 'src/*.rs' TOKEN", "ask"),
    ("rg -t rust TOKEN", "ask"), ("rg --iglob '*.RS' TOKEN", "ask"),
])
def test_search_globs_narrow_the_tree_scan(default: CompiledPolicy, ws: str, home: str,
                                           cmd: str, want: str) -> None:
    assert judge(default, ws, home, cmd)[0] == want, cmd


def test_coproc_asks_unless_sandboxed(default: CompiledPolicy, ws: str, home: str) -> None:
    assert judge(default, ws, home, "coproc sleep 9")[0] == "ask"
    assert judge(default, ws, home, "coproc sleep 9", sandboxed=True)[0] == "allow"


# ---- found by the before-stop attack: orders and links made earlier in the same line ---------

SAME_LINE = [
    # tree-sitter hangs the redirect of `a && b > f` on the whole list: each path is judged
    # from every directory a `cd` of the line may reach, whatever the parse order
    "cd .git && echo x > config", "cd -P .git && printf x > config",
    "cd src && cd ../.git && echo x > config", "pushd .git && echo x >> hooks/pre-commit",
    "cd conf && cat secrets/k.txt", "cd conf/secrets || true; cat k.txt",
    # a link made earlier exposes its target to later reads, and a linked tree all of it
    "ln -s conf/secrets s && cat s/k.txt", "ln -s conf c; cat c/secrets/k.txt",
    "ln -s \"$PWD/conf\" c && grep -r k c", "ln -sfn .env e && cat e",
]


@pytest.mark.parametrize("cmd", SAME_LINE)
def test_what_the_line_itself_changes_is_judged(default: CompiledPolicy, ws: str, home: str,
                                               cmd: str) -> None:
    verdict, rules = judge(default, ws, home, cmd, trust="provisional")
    assert verdict != "allow", (cmd, rules)


@pytest.mark.parametrize("cmd", ["cd src && echo x > ok.txt", "cd src && ls",
                                 "ln -s src/a.rs b && cat b", "ln -s docs d; ls d"])
def test_the_same_shapes_stay_allowed_inside_the_workspace(default: CompiledPolicy, ws: str,
                                                          home: str, cmd: str) -> None:
    verdict, rules = judge(default, ws, home, cmd, trust="provisional")
    assert verdict == "allow", (cmd, rules)
