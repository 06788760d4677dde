"""Red-team 14: the round-13 relies by other spellings. A glob word (written, read or a
copy's source) that bash expands only when the command runs, through an entry the same line
makes; a checkout or a stash that puts a tracked link where a file or a directory is now; a
link that already exists giving one path two spellings; backups made inside a recursive copy.
Each attack is shown to work under real bash, and the policy tests fail on 2977706; the last
tests check that ordinary lines still run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from acpd.policy import globs
from acpd.policy.engine import CompiledPolicy
from acpd.policy.linectx import may_name
from tests.policy import test_redteam6_more as rt6
from tests.policy import test_redteam12 as rt12
from tests.policy.test_redteam6_more import bash, git, judge

home = rt6.home
ws = rt6.ws
repo_dirs = rt12.repo_dirs
verdicts = rt12.verdicts

MARK = "FSMONITOR_MARK"


def unsandboxed(policy: CompiledPolicy, ws: Path, home: Path, cmd: str) -> set[str]:
    """The verdicts where nothing but the judge stands between the line and the disk."""
    return {judge(policy, ws, home, cmd, trust=t)[0] for t in ("provisional", "trusted")}


def gd_config_written(ws: Path, home: Path, cmd: str) -> bool:
    """Run `cmd` with real bash and tell whether it reached the nested git directory's
    config (the attack is real: git would run what it says)."""
    before = (ws / "gd" / "config").read_text()
    bash(ws, home, cmd)
    return (ws / "gd" / "config").read_text() != before


# ---- R1: a glob in a written or read path, through a link the line makes ------------------

GLOB_WRITES = [
    "ln -s gd lx && cp evil/config l*/config",
    "ln -s $PWD/gd lx && printf '%s' " + MARK + " >> l?/config",
    "ln -s gd lx && cat evil/config > l[x]/config",
    "mkdir -p a && ln -s ../gd a/lx && cp evil/config a/l*/config",
    "ln -s gd/hooks lx && cp evil/pre-commit l*/",
]


@pytest.mark.parametrize("cmd", GLOB_WRITES)
def test_a_glob_through_a_link_the_line_makes_asks(default: CompiledPolicy, repo_dirs: Path,
                                                   home: Path, cmd: str) -> None:
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd
    assert "line.rewrites-checked-file" in judge(default, repo_dirs, home, cmd)[1], cmd


def test_the_glob_attack_is_real(repo_dirs: Path, home: Path) -> None:
    assert gd_config_written(repo_dirs, home, GLOB_WRITES[1])


@pytest.fixture
def in_home(home: Path) -> Path:
    """A project directly inside HOME, whose ~/.ssh holds a key."""
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_x").write_text("PRIVATE_KEY\n")
    project = home / "proj"
    (project / "x").mkdir(parents=True)
    (project / "a").symlink_to("x")
    return project


GOING_UP = [
    "mkdir -p a/b c && ln -s $PWD/c a/b/lx && cat a/b/l?/../../.ssh/id_x",
    "mkdir -p a/b c/d && ln -s $PWD/c/d a/b/lx && cat a/b/l*/../../../.ssh/id_x",
    # R3: the link is made under one spelling and gone through under another (a -> x)
    "mkdir -p x/p/q c && ln -s $PWD/c x/p/q/l && cat a/p/q/l/../../.ssh/id_x",
    "mkdir -p a/p/q c && ln -s $PWD/c a/p/q/l && cat x/p/q/l/../../.ssh/id_x",
]


@pytest.mark.parametrize("cmd", GOING_UP)
def test_a_path_that_goes_up_through_a_new_link_asks(default: CompiledPolicy, in_home: Path,
                                                     home: Path, cmd: str) -> None:
    assert "allow" not in unsandboxed(default, in_home, home, cmd), cmd


@pytest.mark.parametrize("cmd", GOING_UP)
def test_the_going_up_attack_is_real(in_home: Path, home: Path, cmd: str) -> None:
    assert "PRIVATE_KEY" in bash(in_home, home, cmd).stdout


# ---- R4: a glob source expanded before the line makes a link there ------------------------

GLOB_SOURCES = [
    "ln -s $PWD/gd evil/lx && mv evil/* src/ && printf x >> src/lx/config",
    "mkdir -p out && ln -s $PWD/gd evil/lx && cp -a evil/* out/ && cp evil/config out/lx/config",
    "ln -s $PWD/gd evil/lx && cp -P evil/* src/ && cp evil/config src/lx/config",
    "echo x > e2/pre-commit && mv e2/* scripts/",
    "echo x > e2/pre-commit && cp e2/* scripts/",
    "cp evil/pre-commit e2/ && mv e2/* scripts/",
]


@pytest.mark.parametrize("cmd", GLOB_SOURCES)
def test_a_glob_source_the_line_adds_to_asks(default: CompiledPolicy, repo_dirs: Path,
                                             home: Path, cmd: str) -> None:
    (repo_dirs / "src").mkdir(exist_ok=True)
    (repo_dirs / "e2").mkdir()
    (repo_dirs / "e2" / "a").write_text("x\n")
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd


def test_the_glob_source_attack_is_real(repo_dirs: Path, home: Path) -> None:
    (repo_dirs / "src").mkdir(exist_ok=True)
    assert gd_config_written(repo_dirs, home, GLOB_SOURCES[0])


# ---- R3: one path, two spellings through a link that exists now ---------------------------

@pytest.fixture
def aliased(repo_dirs: Path) -> Path:
    """x/ and x/y/ with a -> x and b -> x/y (monorepos have such links)."""
    (repo_dirs / "x" / "y").mkdir(parents=True)
    (repo_dirs / "a").symlink_to("x")
    (repo_dirs / "b").symlink_to("x/y")
    return repo_dirs


ALIASES = [
    "ln -s $PWD/gd a/l && cp evil/config x/l/config",
    "ln -s $PWD/gd x/l && cp evil/config a/l/config",
    "ln -s $PWD/gd x/l && cp evil/config b/../l/config",
    "ln -s $PWD/gd x/l && printf x >> a/./l/config",
]


@pytest.mark.parametrize("cmd", ALIASES)
def test_a_link_made_under_another_spelling_asks(default: CompiledPolicy, aliased: Path,
                                                 home: Path, cmd: str) -> None:
    assert "allow" not in unsandboxed(default, aliased, home, cmd), cmd


def test_the_alias_attack_is_real(aliased: Path, home: Path) -> None:
    assert gd_config_written(aliased, home, ALIASES[0])


# ---- R2: a checkout or a stash puts a tracked link where something is now -----------------

def _commit(ws: Path, home: Path, message: str, *paths: str) -> None:
    git(ws, home, "add", "--", *paths)
    git(ws, home, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", message)


@pytest.fixture
def link_branch(repo_dirs: Path, home: Path) -> Path:
    """main tracks a directory m/ and a file l; branch br tracks m -> gd and l -> gd."""
    (repo_dirs / "m").mkdir()
    (repo_dirs / "m" / "keep").write_text("x\n")
    (repo_dirs / "l").write_text("x\n")
    _commit(repo_dirs, home, "main", "m", "l")
    git(repo_dirs, home, "switch", "-q", "-c", "br")
    git(repo_dirs, home, "rm", "-rq", "m", "l")
    (repo_dirs / "m").symlink_to("gd")
    (repo_dirs / "l").symlink_to("gd")
    _commit(repo_dirs, home, "links", "m", "l")
    git(repo_dirs, home, "switch", "-q", "main")
    assert (repo_dirs / "m").is_dir() and not (repo_dirs / "m").is_symlink()
    return repo_dirs


CHECKOUTS = [
    "git switch br && printf x >> m/config",
    "git switch -q br; printf x >> l/config",
    "git switch -d br && cp evil/config m/config",
    "git restore -s br . && printf x >> m/config",
]


@pytest.mark.parametrize("cmd", CHECKOUTS)
def test_a_checkout_that_replaces_what_is_there_asks(default: CompiledPolicy,
                                                     link_branch: Path, home: Path,
                                                     cmd: str) -> None:
    assert "allow" not in unsandboxed(default, link_branch, home, cmd), cmd


def test_the_checkout_attack_is_real(link_branch: Path, home: Path) -> None:
    assert gd_config_written(link_branch, home, CHECKOUTS[0])


@pytest.mark.parametrize("cmd", [
    "git stash && printf x >> m/config", "git stash push -q && printf x >> m/config",
    "git stash save wip; cp evil/config m/config", "git stash -u && printf x >> m/config",
])
def test_a_stash_that_puts_back_a_tracked_link_asks(default: CompiledPolicy, repo_dirs: Path,
                                                    home: Path, cmd: str) -> None:
    (repo_dirs / "m").symlink_to("gd")
    _commit(repo_dirs, home, "link", "m")
    (repo_dirs / "m").unlink()
    (repo_dirs / "m").mkdir()  # the work tree has a directory where HEAD has the link
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd
    assert gd_config_written(repo_dirs, home, "git stash && printf x >> m/config")


# ---- R5: backups inside a recursive copy ---------------------------------------------------

@pytest.mark.parametrize("cmd", [
    "cp -rb -S -commit e2/. scripts", "cp -r --backup=simple --suffix=-commit e2/. scripts/",
    "cp -ab --suffix=-commit e2/. scripts/.", "cp -Rb e2/. scripts",
])
def test_backups_in_a_recursive_copy_ask(default: CompiledPolicy, repo_dirs: Path,
                                         home: Path, cmd: str) -> None:
    (repo_dirs / "e2").mkdir()
    (repo_dirs / "e2" / "pre").write_text("x\n")
    (repo_dirs / "scripts" / "pre").write_text("#!/bin/sh\n")
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd
    bash(repo_dirs, home, "cp -rb -S -commit e2/. scripts")
    assert (repo_dirs / "scripts" / "pre-commit").read_text() == "#!/bin/sh\n"  # renamed


# ---- what ordinary lines still do -----------------------------------------------------------

@pytest.mark.parametrize("cmd", [
    "git switch -c feature && mkdir -p out && echo hi > out/log.txt",
    "git switch --create=feature -q && echo hi > notes.txt",
    "mkdir -p dist && cp -r src dist/ && echo v1 > dist/src/VERSION",
    "cp -r src/ build/ && echo x > build/src/y",
    "cp -r src/. out/ && echo x > out/extra.py",
    "mkdir -p out && cp -a src/* out/ && echo x > out/extra.py",
    "sed -i s/a/b/ src/*.py && echo x > src/new.py",
    "cat *.md && echo x > notes.md",
    "ls src/*.py && touch src/z.py",
    "mkdir -p out && cp src/*.py out/ && ls out/*.py",
    "cp -b src/m.py src/n.py",
    "git stash list && echo x > out.txt",
])
def test_ordinary_lines_still_run(default: CompiledPolicy, ws: Path, home: Path,
                                  cmd: str) -> None:
    assert verdicts(default, ws, home, cmd) == {"allow"}, cmd


def test_may_name_is_a_superset_of_bash(tmp_path: Path) -> None:
    root = str(tmp_path)
    assert may_name(f"{root}/l*/config", f"{root}/lx")
    assert may_name(f"{root}/l*/config", f"{root}/lx/config")
    assert may_name(f"{root}/a/./l[[:alpha:]]/x", f"{root}/a/lz")
    assert may_name(f"{root}/a/l?/../../k", f"{root}/a/lq")
    assert may_name(f"{root}/src/**/x", f"{root}/src/a/b/c")
    assert not may_name(f"{root}/l*/config", f"{root}/m")
    assert not may_name(f"{root}/src/*.py", f"{root}/out/a.py")
    assert not may_name(f"{root}/src/*.py", f"{root}/src")  # the directory it lists
    assert not may_name(f"{root}/plain/config", f"{root}/plain/config")  # no glob: no pattern
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to("real")
    assert may_name(f"{root}/alias/l*", f"{root}/real/lx")  # the start through its link


# ---- 14b: the same classes past the first fixes ----------------------------------------------

@pytest.mark.parametrize("cmd", [
    # bracket equivalence classes and collating symbols are one character to bash
    "ln -s gd lx && cp evil/config l[[=x=]]/config",
    "ln -s gd lx && cp evil/config l[[.x.]]/config",
    "ln -s gd lx && cat evil/config > l[[=x=]]/config",
    "ln -s $PWD/gd evil/lx && mv evil/[[=l=]]* src/ && printf x >> src/lx/config",
    "ln -s gd lx && cp evil/config l[![:upper:]]/config",
    "ln -s gd lx && cp evil/config \\l*/config",
])
def test_every_bracket_form_is_read_as_bash_reads_it(default: CompiledPolicy,
                                                     repo_dirs: Path, home: Path,
                                                     cmd: str) -> None:
    (repo_dirs / "src").mkdir(exist_ok=True)
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd


def test_the_bracket_attack_is_real(repo_dirs: Path, home: Path) -> None:
    assert gd_config_written(repo_dirs, home, "ln -s gd lx && cp evil/config l[[=x=]]/config")


@pytest.mark.parametrize("cmd", [
    "ln -s gd g3 && cat evil/config >> n2", "ln -s gd g3 && echo x >> n2",
    "ln -s gd g3 && sed -i --follow-symlinks s/a/b/ n2", "ln -s gd g3 && tee -a n2 < evil/config",
    "ln -s gd g3 && printf x >> n3",  # two hops: n3 -> n2 -> g3/config
])
def test_a_link_that_points_through_what_the_line_makes_asks(
        default: CompiledPolicy, repo_dirs: Path, home: Path, cmd: str) -> None:
    (repo_dirs / "n2").symlink_to("g3/config")  # an earlier line's dangling link
    (repo_dirs / "n3").symlink_to("n2")
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd


def test_the_dangling_link_attack_is_real(repo_dirs: Path, home: Path) -> None:
    (repo_dirs / "n2").symlink_to("g3/config")
    assert gd_config_written(repo_dirs, home, "ln -s gd g3 && printf x >> n2")


@pytest.mark.parametrize("cmd", [
    "mkdir -p p && ln -s $PWD p/g3 && cat p/n2",
    "ln -s .. p/g3 && cat p/n2",
])
def test_a_read_through_a_link_to_what_the_line_makes_asks(
        default: CompiledPolicy, in_home: Path, home: Path, cmd: str) -> None:
    (in_home / "p").mkdir()
    (in_home / "p" / "n2").symlink_to("g3/../.ssh/id_x")  # judged as p/.ssh/id_x now
    assert "allow" not in unsandboxed(default, in_home, home, cmd), cmd
    assert "PRIVATE_KEY" in bash(in_home, home, cmd).stdout


@pytest.fixture
def file_branch(repo_dirs: Path, home: Path) -> Path:
    """main tracks a plain file n at the top; branch brf tracks n -> gd/config."""
    (repo_dirs / "n").write_text("x\n")
    _commit(repo_dirs, home, "n", "n")
    git(repo_dirs, home, "switch", "-q", "-c", "brf")
    (repo_dirs / "n").unlink()
    (repo_dirs / "n").symlink_to("gd/config")
    _commit(repo_dirs, home, "link", "n")
    git(repo_dirs, home, "switch", "-q", "main")
    return repo_dirs


@pytest.mark.parametrize("cmd", [
    "git switch -q brf && printf x >> n", "git switch brf && echo hi > n",
    "git switch brf; tee -a n < evil/config",
])
def test_a_checkout_that_puts_a_link_at_the_top_asks(default: CompiledPolicy,
                                                     file_branch: Path, home: Path,
                                                     cmd: str) -> None:
    assert "allow" not in unsandboxed(default, file_branch, home, cmd), cmd


def test_the_top_link_attack_is_real(file_branch: Path, home: Path) -> None:
    assert gd_config_written(file_branch, home, "git switch -q brf && printf x >> n")


@pytest.mark.parametrize("cmd", [
    "mv src/m.py src/old.py && ls src/*", "cp -r src out && ls out/*",
    "echo x > f.tmp && mv f.tmp f", "mv src/m.py old.py && cat src/*",
])
def test_ordinary_lines_after_14b_still_run(default: CompiledPolicy, ws: Path, home: Path,
                                            cmd: str) -> None:
    assert verdicts(default, ws, home, cmd) == {"allow"}, cmd


def test_checkouts_ask_only_where_the_sandbox_would_not_hold(default: CompiledPolicy,
                                                             ws: Path, home: Path) -> None:
    for cmd in ("git stash pop && echo x >> src/m.py", "git switch main && echo x >> README.md"):
        assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow", cmd
        assert judge(default, ws, home, cmd)[0] == "ask", cmd


CHARS = "ab.-_[]!^*?\\:=xA"
CLASSES = ["[[:alpha:]]", "[[=a=]]", "[[.a.]]", "[!a]", "[^b]", "[]a]", "[a-c]", "[[:upper:]]"]


def test_may_name_agrees_with_bash_on_generated_patterns(tmp_path: Path) -> None:
    """Whatever name bash's own matching takes a one-component pattern to name, may_name
    names it too (a superset), for generated patterns and names."""
    import random

    rng = random.Random(14)
    pairs = []
    for _ in range(2000):
        pattern = "".join(rng.choice(CLASSES) if rng.random() < 0.2 else rng.choice(CHARS)
                          for _ in range(rng.randint(1, 5)))
        name = "".join(rng.choice("ab.-_xA[]") for _ in range(rng.randint(1, 4)))
        if globs.has_glob(pattern) and name not in (".", ".."):
            pairs.append((pattern, name))
    listing = tmp_path / "pairs"
    listing.write_text("".join(f"{p}\t{n}\n" for p, n in pairs))
    # an unquoted variable on the right of == is a pattern: no shell syntax gets in the way
    script = 'while IFS=$\'\\t\' read -r p n; do [[ $n == $p ]] && echo 1 || echo 0; done'
    out = subprocess.run(["bash", "-c", script], stdin=listing.open(), capture_output=True,
                         text=True, check=True).stdout.split()
    assert len(out) == len(pairs)
    root = str(tmp_path)
    missed = [(p, n) for (p, n), hit in zip(pairs, out, strict=True)
              if hit == "1" and not may_name(f"{root}/{p}", f"{root}/{n}")]
    assert sum(hit == "1" for hit in out) > 50  # the generator makes matches
    assert missed == []


# ---- 14c: a link in the middle of a chain; a link renamed, then gone through ---------------

@pytest.fixture
def chained(repo_dirs: Path) -> Path:
    """q -> s -> t, made by two earlier lines; m2 -> g3/config, a dangling link."""
    (repo_dirs / "t").mkdir()
    (repo_dirs / "s").symlink_to("t")
    (repo_dirs / "q").symlink_to("s")
    (repo_dirs / "n").symlink_to("s")
    return repo_dirs


CHAINS = [
    "ln -sfn gd s && printf x >> q/config", "ln -sfn gd s && cp evil/config q/",
    "ln -sfn gd s && cd q && echo x >> config", "ln -sfn gd s && mv evil/config n",
    "ln -sfn $PWD/gd s; sed -n p evil/config > q/config",
]


@pytest.mark.parametrize("cmd", CHAINS)
def test_a_link_in_the_middle_of_a_chain_is_relied_on(default: CompiledPolicy,
                                                      chained: Path, home: Path,
                                                      cmd: str) -> None:
    assert "allow" not in unsandboxed(default, chained, home, cmd), cmd


def test_the_chain_attack_is_real(chained: Path, home: Path) -> None:
    assert gd_config_written(chained, home, CHAINS[0])


RENAMED = [
    "mv m2 zz && echo x >> zz", "mv -T m2 m && printf x >> m", "cp -P m2 zz && echo x >> zz",
    "cp -a m2 zz && echo x >> zz", "mv m2 zz; sed -i --follow-symlinks '$r evil/config' zz",
]


@pytest.mark.parametrize("cmd", RENAMED)
def test_a_link_renamed_then_written_through_asks(default: CompiledPolicy, repo_dirs: Path,
                                                  home: Path, cmd: str) -> None:
    (repo_dirs / "g3").symlink_to("gd")  # two earlier lines: m2 -> g3/config, g3 -> gd
    (repo_dirs / "m2").symlink_to("g3/config")
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd


def test_the_rename_attack_is_real(repo_dirs: Path, home: Path) -> None:
    (repo_dirs / "g3").symlink_to("gd")
    (repo_dirs / "m2").symlink_to("g3/config")
    assert gd_config_written(repo_dirs, home, RENAMED[0])


@pytest.mark.parametrize("cmd", [
    "mv m mm && cat mm/id_x", "mv -T m mm && head mm/id_x", "mkdir d && mv m d/ && cat d/m/id_x",
])
def test_a_link_renamed_then_read_through_asks(default: CompiledPolicy, in_home: Path,
                                               home: Path, cmd: str) -> None:
    (in_home / "m").symlink_to(home / ".ssh")  # a hostile repository's tracked link
    assert "allow" not in unsandboxed(default, in_home, home, cmd), cmd
    assert "PRIVATE_KEY" in bash(in_home, home, cmd).stdout


@pytest.mark.parametrize("cmd", [
    "mv src lib && cat lib/m.py", "cp -r src out && cat out/m.py", "touch a && cat a",
    "sed -i s/x/y/ src/m.py && cat src/m.py", "cp README.md notes.md && cat notes.md",
])
def test_reads_of_what_the_line_wrote_still_run(default: CompiledPolicy, ws: Path, home: Path,
                                                cmd: str) -> None:
    assert verdicts(default, ws, home, cmd) == {"allow"}, cmd


# ---- 14d: a hard link of a symbolic link; a loop that runs one command twice ---------------

@pytest.mark.parametrize("cmd", [
    "ln m2 d/zz && echo x >> d/zz", "ln -P m2 d/zz && echo x >> d/zz",
    "ln -f m2 d/zz && cat evil/config >> d/zz",
])
def test_a_hard_link_of_a_symbolic_link_is_not_ln_s(default: CompiledPolicy, repo_dirs: Path,
                                                    home: Path, cmd: str) -> None:
    (repo_dirs / "d").mkdir()
    (repo_dirs / "d" / "g3").symlink_to(repo_dirs / "gd")
    (repo_dirs / "m2").symlink_to("g3/config")  # dangling here; d/zz -> g3/config is gd's
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd
    assert gd_config_written(repo_dirs, home, "ln m2 d/zz && echo x >> d/zz")


@pytest.mark.parametrize("cmd", [
    "ln -s gd g3 && for f in g3 evil/config; do cp -P $f zz; done",
    "ln -s gd g3; for f in g3 evil/config; do cp -d $f zz; done",
    "ln -s gd g3 && for p in 'g3 zz' 'evil/config zz'; do cp -P $p; done",
    "ln -s gd g3 && while read f; do cp -P $f zz; done <<< 'g3'",
    # the loop spelled so that the line's text does not show it (red-team 14e)
    "ln -s gd g3 && bash -c 'f'or' f in g3 evil/config; do cp -P $f zz; done'",
    "ln -s gd g3 && eval 'f'or' f in g3 evil/config; do cp -P $f zz; done'",
    "ln -s gd g3 && sh -c $'\\x66or f in g3 evil/config; do cp -P $f zz; done'",
])
def test_a_command_a_loop_runs_twice_is_not_its_own_writer(default: CompiledPolicy,
                                                           repo_dirs: Path, home: Path,
                                                           cmd: str) -> None:
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd), cmd


def test_the_loop_attack_is_real(repo_dirs: Path, home: Path) -> None:
    assert gd_config_written(
        repo_dirs, home, "ln -s gd g3 && for f in g3 evil/config; do cp -P $f zz; done")


@pytest.mark.parametrize("cmd", [
    "ln -sfn src current && cat current/m.py", "mv src lib && cat lib/m.py",
    "for f in src/*.py; do cp $f $f.bak; done", "for f in *.md; do sed -i s/a/b/ $f; done",
])
def test_lines_through_new_links_run_under_the_sandbox(default: CompiledPolicy, ws: Path,
                                                       home: Path, cmd: str) -> None:
    assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow", cmd


def test_a_chain_as_long_as_the_kernel_follows_is_walked_whole(default: CompiledPolicy,
                                                               repo_dirs: Path,
                                                               home: Path) -> None:
    """`_steps` follows as many links as the kernel does (40): a link replaced at the far
    end of a 39-link chain is still seen; a longer chain fails in the kernel (ELOOP)."""
    (repo_dirs / "t").mkdir()
    (repo_dirs / "c38").symlink_to("t")
    for k in range(37, -1, -1):
        (repo_dirs / f"c{k}").symlink_to(f"c{k + 1}")
    cmd = "ln -sfn gd c38 && printf x >> c0/config"
    assert "allow" not in unsandboxed(default, repo_dirs, home, cmd)
    assert gd_config_written(repo_dirs, home, cmd)  # 39 links: the kernel follows them
