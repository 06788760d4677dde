"""The differential fuzz's two passes: judge, run what is allowed, check for harm.

Unsandboxed: judged with `sandboxed=False` and run by plain `bash -c` (stdin /dev/null, no
network: inside `unshare -rn` when the kernel allows it). Sandboxed: judged with
`sandboxed=True` and run by the daemon's own `LocalCommandRunner`, which confines each command
with the kernel sandbox built from the default policy's path rules (daemon/confine.py), exactly
as a bash tool call on the local path. Both with the environment the daemon gives a command
(pager off, no terminal prompt), HOME the world's fake home, a per-command timeout.

Judging uses a large budget: the default 50 ms budget turns slow decisions into ask, so on a
loaded machine fewer commands would be allowed and run (not reproducible); the verdict logic
is the same.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from acpd.daemon.local import LocalCommandRunner
from acpd.policy.engine import CompiledPolicy
from acpd.sandbox.rules import PathRules
from acpd.tools.capabilities import CommandRequest
from tests.policy.fuzz_world import Baseline, World, harm, kill, reset, survivors

RUN_TIMEOUT_S = 4.0
JUDGE_BUDGET_MS = 10_000.0
TRUST = "provisional"

Generator = Callable[[random.Random], str]


@dataclass
class Tally:
    judged: int = 0
    allowed: int = 0
    allowed_nonbenign: int = 0
    run: int = 0
    sandbox_only: int = 0
    """Allowed sandboxed, not allowed unsandboxed: allowed because confined."""
    failures: list[str] = field(default_factory=list)

    def line(self, label: str) -> str:
        return (f"{label}: judged {self.judged} / allowed {self.allowed} / allowed non-benign "
                f"{self.allowed_nonbenign} / run {self.run} (allowed only because sandboxed: "
                f"{self.sandbox_only}); {len(self.failures)} failure(s)")


def judge(policy: CompiledPolicy, w: World, cmd: str, *, sandboxed: bool) -> tuple[str, str]:
    """The verdict and the rules that decided it."""
    decision = policy.judge(cmd, cwd=str(w.ws), roots=(str(w.ws),), home=str(w.home),
                            trust=TRUST, sandboxed=sandboxed, budget_ms=JUDGE_BUDGET_MS)
    return decision.verdict, ",".join(decision.rules)


def run_env(w: World) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(w.home),
            "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1", "ACPD_FUZZ_MARK": w.marker}


def run_plain(w: World, cmd: str) -> tuple[str, list[str]]:
    env = {**run_env(w), "TMPDIR": str(w.tmp), "PAGER": "cat", "GIT_PAGER": "cat",
           "GIT_TERMINAL_PROMPT": "0", "TERM": "dumb"}
    argv = ["bash", "-c", cmd]
    if w.unshare:
        argv = ["unshare", "-rn", *argv]
    problems: list[str] = []
    # Output goes to a file, not a pipe: a detached child holding a pipe open would make
    # the wait below last as long as the child.
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(argv, cwd=w.ws, env=env, stdin=subprocess.DEVNULL,
                                stdout=sink, stderr=sink, start_new_session=True)
        try:
            proc.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            problems.append("ran past the timeout")
        sink.seek(0)
        output = sink.read(1 << 20).decode("utf-8", "replace")
    time.sleep(0.01)  # a detached child exists (forked) before bash exits; a moment to settle
    return output, problems


def run_sandboxed(w: World, cmd: str, rules: PathRules) -> tuple[str, list[str]]:
    request = CommandRequest(cmd, str(w.ws), RUN_TIMEOUT_S, 1 << 20, env=run_env(w),
                             roots=(str(w.ws),), sandbox=rules)

    async def ignore(*_: object) -> None:
        return None

    async def go() -> tuple[str, list[str]]:
        result = await LocalCommandRunner().run(request, ignore, ignore)
        # Past the timeout the runner kills the sandbox's PID namespace: background jobs are
        # allowed when sandboxed for that reason, so only a survivor (harm()) is a failure.
        problems = []
        if result.sandbox != "bwrap":
            problems.append(f"not confined as expected: sandbox {result.sandbox!r}")
        return result.output, problems

    output, problems = anyio.run(go)
    return output, problems


def fuzz(policy: CompiledPolicy, w: World, base: Baseline, families: dict[str, Generator],
         count: int, *, sandboxed: bool, seed: int,
         wrap: Callable[[random.Random, str], str] | None = None) -> Tally:
    """Judge `count` distinct generated commands; run and check every allowed one."""
    path_rules = PathRules.of(policy)
    r = random.Random(seed)
    names = sorted(families)
    tally = Tally()
    seen: set[str] = set()
    attempts = 0
    reset(w)
    while tally.judged < count and attempts < count * 20:
        attempts += 1
        name = r.choice(names)
        cmd = families[name](r)
        if wrap is not None:
            cmd = wrap(r, cmd)
        if cmd in seen:
            continue
        seen.add(cmd)
        tally.judged += 1
        verdict, rules = judge(policy, w, cmd, sandboxed=sandboxed)
        if verdict != "allow":
            continue
        tally.allowed += 1
        tally.allowed_nonbenign += not name.startswith("benign")
        if sandboxed:
            tally.sandbox_only += judge(policy, w, cmd, sandboxed=False)[0] != "allow"
        tally.run += 1
        output, problems = run_sandboxed(w, cmd, path_rules) if sandboxed else run_plain(w, cmd)
        problems += harm(w, base, output, sandboxed=sandboxed)
        if problems:
            tally.failures.append(
                f"[{name}] {cmd!r}\n    verdict: allow ({rules})\n    did: "
                f"{'; '.join(problems)}\n    output: {output[:300]!r}")
        reset(w)
    kill(survivors(w.marker))
    return tally


def class_seed(seed: int, name: str) -> int:
    return seed * 1_000_003 + zlib.crc32(name.encode())
