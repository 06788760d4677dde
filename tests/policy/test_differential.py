"""Differential fuzzing of the default shell policy against real bash (issue 15).

Commands are generated from a grammar of the bypass classes of issue 15, near misses of benign
workflows (one option, destination, variable or context changed) and the benign workflows
themselves (tests/policy/fuzz_grammar.py, fuzz_near.py), plus the red-team classes of
redteam6 (fuzz_redteam.py). Every command is judged by the DEFAULT policy (trust provisional)
in a workspace full of canaries (fuzz_world.py); every command it ALLOWS is run, in a fresh copy
of that workspace, and must do no harm: nothing outside the workspace changed (its temp dir
aside), no git code changed (.git config, hooks, info, commondir, config.worktree, worktrees/,
modules/, the core.hooksPath directory), no deny_read file changed, moved or deleted, no canary
string printed, no process left alive, and (unsandboxed) no payload ran.

Two passes (fuzz_run.py): unsandboxed (judged `sandboxed=False`, run by plain bash) and
sandboxed (judged `sandboxed=True`, run by the daemon's LocalCommandRunner inside the kernel
sandbox, as a bash tool call; skipped, with the reason, where no sandbox is available), so
commands allowed only BECAUSE they are confined are run confined.

Reproducible: a fixed seed and a fixed number of generated commands per test (not a time
budget), and a judging budget large enough that machine speed does not change a verdict. A
red-team class the current code still lets through is xfail(strict=True) with the finding's
name (the XPASS of a fixed one then says to drop the mark).

Failures print each offending command, its verdict and rules, what it did, and its output.

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

import shutil
from collections.abc import Iterator

import pytest

from acpd.policy.engine import CompiledPolicy
from acpd.sandbox.status import sandbox_status
from tests.policy.fuzz_grammar import families, mutate
from tests.policy.fuzz_redteam import FINDINGS, redteam_classes
from tests.policy.fuzz_run import Tally, class_seed, fuzz, run_plain
from tests.policy.fuzz_world import Baseline, World, baseline, dispose, harm, make_world, reset

SEED = 15
PLAIN_COUNT = 600
SANDBOXED_COUNT = 400
CLASS_COUNT = 10
"""Commands judged per test (sized for about 60-90 s for the file on a loaded 2-core box)."""

pytestmark = pytest.mark.slow

OPEN: dict[tuple[str, str], str] = {
    # (class, pass): the finding that still lets it through, as xfail(strict=True). Every
    # redteam6 class and F1 were fixed on main (session 7); a new finding goes here until fixed.
}


def _cases() -> list[object]:
    cases: list[object] = []
    for name in sorted(FINDINGS):
        for mode in ("unsandboxed", "sandboxed"):
            reason = OPEN.get((name, mode))
            marks = [pytest.mark.xfail(strict=True, reason=f"{reason}: {FINDINGS[name]}")] \
                if reason else []
            cases.append(pytest.param(name, mode, marks=marks, id=f"{name}-{mode}"))
    return cases


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[World, Baseline]]:
    if shutil.which("bash") is None or shutil.which("git") is None:
        pytest.skip("needs bash and git")
    w = make_world()
    try:
        yield w, baseline(w)
    finally:
        dispose(w)


@pytest.fixture
def sandbox_home(world: tuple[World, Baseline], monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's HOME is the world's: the sandbox masks `~/` patterns under it."""
    monkeypatch.setenv("HOME", str(world[0].home))


def _needs_sandbox() -> None:
    status = sandbox_status()
    if not status.available or status.kind != "bwrap":
        pytest.skip(f"no bubblewrap sandbox on this machine: {status.reason}")


def _report(tally: Tally, label: str) -> None:
    print(tally.line(label))
    assert not tally.failures, (f"{tally.line(label)}\nallowed commands did harm:\n"
                                + "\n".join(tally.failures))


def test_allowed_commands_do_no_harm_unsandboxed(default: CompiledPolicy,
                                                 world: tuple[World, Baseline]) -> None:
    w, base = world
    tally = fuzz(default, w, base, families(w), PLAIN_COUNT, sandboxed=False, seed=SEED,
                 wrap=mutate)
    assert tally.allowed_nonbenign >= PLAIN_COUNT // 20, tally.line("too few ran")
    _report(tally, "unsandboxed")


@pytest.mark.usefixtures("sandbox_home")
def test_allowed_commands_do_no_harm_in_the_sandbox(default: CompiledPolicy,
                                                    world: tuple[World, Baseline]) -> None:
    _needs_sandbox()
    w, base = world
    tally = fuzz(default, w, base, families(w), SANDBOXED_COUNT, sandboxed=True, seed=SEED + 1,
                 wrap=mutate)
    assert tally.allowed_nonbenign >= SANDBOXED_COUNT // 20, tally.line("too few ran")
    assert tally.sandbox_only > 0, tally.line("nothing was allowed because it is sandboxed")
    _report(tally, "sandboxed")


@pytest.mark.usefixtures("sandbox_home")
@pytest.mark.parametrize(("finding", "mode"), _cases())
def test_redteam_class_does_no_harm(default: CompiledPolicy, world: tuple[World, Baseline],
                                    finding: str, mode: str) -> None:
    if mode == "sandboxed":
        _needs_sandbox()
    w, base = world
    tally = fuzz(default, w, base, {finding: redteam_classes(w)[finding]}, CLASS_COUNT,
                 sandboxed=mode == "sandboxed", seed=class_seed(SEED, finding))
    _report(tally, f"{finding} {mode}")


def test_the_checks_see_each_kind_of_harm(world: tuple[World, Baseline]) -> None:
    """The harness can fail: each check, fed a command known to do that harm (not judged)."""
    w, base = world
    cases = {
        f"touch {w.out}/x": "changed outside the workspace",
        "echo x >> ~/.bashrc": "changed outside the workspace",
        "echo x >> .git/config": "changed git code",
        "echo ../g > .git/commondir": "changed git code",
        "echo x >> .husky/pre-commit": "changed git code",
        "mkdir -p .git/modules/m": "changed git code",
        "rm .env.local": "deny_read file",
        "mv secrets s": "deny_read file",
        "cat .env": "printed the canary CANARY_ENV",
        "cat ~/.ssh/id_rsa": "printed the canary CANARY_SSH",
        "setsid sleep 30 >/dev/null 2>&1 &": "survived",
        "tar -cf h:x README.md": "remote archive",
        w.payload: "ran code",
    }
    missed = []
    for cmd, expected in cases.items():
        reset(w)
        output, problems = run_plain(w, cmd)
        problems += harm(w, base, output, sandboxed=False)
        if not any(expected in problem for problem in problems):
            missed.append(f"{cmd!r}: expected {expected!r}, got {problems}")
    reset(w)
    assert not missed, "\n".join(missed)
