"""What the kernel sandbox costs per bash command, next to a plain `bash -c true` in the same run.

Target (issue 15): under 5 ms added per command (median). Printed, each as median and p95
(and for an added cost also the difference of the minimums: the cost when neither run waited
for a CPU), with the load average (2 cores shared with other jobs: figures move with it):
  1. the local path's added cost per command: the daemon's confinement build, the pins and
     bubblewrap around `bash -c true`, against `bash -c true` alone; the argv as it was before
     (masked directories remounted read-only) as a named baseline;
     bubblewrap alone, and with the network namespace shared;
  2. the per-command confinement build (the workspace walk) on a small workspace and on a
     10,000-file one (with a git repository): cold, unchanged since the last command (each
     directory's listing is reused after a stat proves it unchanged), one file added;
  3. the editor-terminal path (build, acpd's sh launcher, daemon/confine.py, then bubblewrap)
     vs `bash -c true` and vs bubblewrap alone, and the named baselines it replaced (the bash
     launcher, `python -P -m acpd.sandbox exec`);
  4. the one-off availability probe (cached per process).
Run: .venv/bin/python benchmarks/sandbox.py [--runs N]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from acpd.daemon import confine
from acpd.daemon.confine import Confined, editor_launch, workspace_tmp
from acpd.sandbox import walk
from acpd.sandbox.build import WALK_LIMIT, build_confinement
from acpd.sandbox.bwrap import bwrap_argv, open_pins
from acpd.sandbox.rules import PathRules
from acpd.sandbox.status import probe, sandbox_status

RULES = PathRules(
    deny_read=("**/.env", "**/.env.*", "~/.ssh/**", "~/.aws/**", "~/.gnupg/**", "~/.netrc",
               "**/secrets/**", "**/*.pem", "**/*.key", "**/id_rsa*", "**/id_ed25519*",
               "/etc/shadow", "/proc/*/environ"),
    deny_write=(".git/hooks/**", ".git/config", ".git/info/**", ".acpd/**", "**/.env"),
    write_roots=("/tmp/**",),
)


def ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return statistics.median(ordered) * 1000, p95 * 1000


def spawn(argv: list[str]) -> Callable[[], None]:
    def once() -> None:
        subprocess.run(argv, stdin=subprocess.DEVNULL, check=True)
    return once


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def interleaved(fns: Mapping[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Alternate the contenders run by run, so machine noise hits them alike."""
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            out[name] += timed(fn, 1)
    return out


def big_workspace(root: Path, files: int = 10_000) -> Path:
    ws = root / "big"
    for i in range(files):
        d = ws / f"pkg{i // 100}" / f"mod{(i // 10) % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text("x")
    git = ws / ".git"
    for name in ("hooks", "info", "refs"):
        (git / name).mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "config").write_text("[core]\n")
    for i in range(256):
        (git / "objects" / f"{i:02x}").mkdir(parents=True)
    (ws / ".env").write_text("S=1")
    (ws / "pkg3" / "secrets").mkdir()
    return ws


def row(name: str, samples: list[float], base: list[float] | None = None) -> None:
    med, p95 = ms(samples)
    line = f"  {name:<44} median {med:7.2f} ms   p95 {p95:7.2f} ms"
    if base is not None:
        bmed, bp95 = ms(base)
        least = (min(samples) - min(base)) * 1000
        line += (f"   added: median {med - bmed:+6.2f} ms, p95 {p95 - bp95:+6.2f} ms, "
                 f"min {least:+6.2f} ms")
    print(line)


def before_argv(argv: list[str]) -> list[str]:
    """The argv as it was before this session (the named baseline): each masked directory
    remounted read-only."""
    out = list(argv)
    i = 0
    while i < len(out):
        if out[i] == "--tmpfs" and i >= 2 and out[i - 2] == "--perms":
            out.insert(i + 2, "--remount-ro")
            out.insert(i + 3, out[i + 1])
            i += 4
        else:
            i += 1
    return out


def local_path(small: Path, status_binary: str, before: bool = False) -> Callable[[], None]:
    """What the local runner adds per command: the confinement build (the daemon's work,
    walk and private /tmp), the pins, then bubblewrap around `bash -c true`."""
    def once() -> None:
        conf = build_confinement((str(small),), RULES, cwd=str(small))
        tmp = workspace_tmp(conf.roots)
        if tmp is not None:
            conf = dataclasses.replace(conf, tmp_dir=tmp)
        pins = open_pins(conf)
        try:
            argv = bwrap_argv(status_binary, conf, ["bash", "-c", "true"], pins)
            subprocess.run(before_argv(argv) if before else argv, stdin=subprocess.DEVNULL,
                           check=True, pass_fds=tuple(pins.values()))
        finally:
            for fd in pins.values():
                os.close(fd)
    return once


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=60)
    runs = parser.parse_args().runs
    status = sandbox_status()
    if not status.available or status.binary is None:
        print(f"no sandbox here: {status.reason}")
        return 1
    bwrap = status.binary
    with tempfile.TemporaryDirectory(prefix="acpd-bench-") as temp:
        small = Path(temp) / "small"
        (small / "src").mkdir(parents=True)
        (small / "src" / "a.py").write_text("x")
        (small / ".env").write_text("S=1")
        git = small / ".git"
        for name in ("hooks", "objects", "refs"):
            (git / name).mkdir(parents=True)
        (git / "HEAD").write_text("ref: refs/heads/main\n")
        (git / "config").write_text("[core]\n")
        conf = build_confinement((str(small),), RULES, cwd=str(small))
        plain = ["bash", "-c", "true"]
        netted = dataclasses.replace(conf, network=True)
        load = os.getloadavg()[0]
        print(f"sandbox: {status.kind} ({status.reason}); {runs} runs each, interleaved; "
              f"{os.cpu_count()} CPUs; load {load:.2f} at the start\n")
        print("1. added cost per command, small workspace with a repository (the target: "
              "< 5 ms median)")
        contenders: dict[str, Callable[[], None]] = {
            "plain": spawn(plain),
            "local": local_path(small, bwrap),
            "before": local_path(small, bwrap, before=True),
            "bwrap": spawn(bwrap_argv(bwrap, conf, plain)),
            "bwrap, network shared": spawn(bwrap_argv(bwrap, netted, plain)),
        }
        got = interleaved(contenders, runs)
        row("bash -c true (baseline)", got["plain"])
        row("local path: build + pins + bwrap (now)", got["local"], got["plain"])
        row("local path, the argv before this session", got["before"], got["plain"])
        row("  bwrap alone (no build)", got["bwrap"], got["plain"])
        row("  same with the network namespace shared", got["bwrap, network shared"],
            got["plain"])
        print(f"  load {os.getloadavg()[0]:.2f} at the end of part 1")

        print("\n2. per-command confinement build (workspace walk)")
        row(f"small workspace ({conf.walked} entries)",
            timed(lambda: build_confinement((str(small),), RULES, cwd=str(small)), runs))
        big = big_workspace(Path(temp))
        time.sleep(walk.RACY_NS / 1e9 + 0.1)  # past the racy window: listings can be reused
        bconf = build_confinement((str(big),), RULES, cwd=str(big))

        def cold() -> None:
            walk._listings.clear()
            walk._wholes.clear()
            build_confinement((str(big),), RULES, cwd=str(big))

        few = max(10, runs // 3)
        row(f"10,000-file workspace, cold ({bconf.walked} entries)", timed(cold, few))
        row("10,000-file workspace, unchanged since last",
            timed(lambda: build_confinement((str(big),), RULES, cwd=str(big)), few))

        def one_new_file() -> None:
            (big / "pkg42" / "mod0" / f"n{time.perf_counter_ns()}.py").write_text("x")
            build_confinement((str(big),), RULES, cwd=str(big))

        row("10,000-file workspace, one file added", timed(one_new_file, few))
        big_plain = ["bash", "-c", "true"]
        big_bwrap = bwrap_argv(bwrap, bconf, big_plain)
        got = interleaved({"plain": spawn(big_plain), "bwrap": spawn(big_bwrap)}, runs)
        row("  spawn in it, plain", got["plain"])
        row(f"  spawn in it, bwrap ({len(big_bwrap)} args)", got["bwrap"], got["plain"])
        print(f"  walk bound: {WALK_LIMIT} entries per command; past it the card says the "
              "profile is incomplete")

        print("\n3. editor-terminal launcher (what the editor's terminal runs)")
        launcher_runs = max(10, runs // 2)
        gitted = Path(temp) / "gitted"
        (gitted / ".git" / "hooks").mkdir(parents=True)
        for name in ("HEAD", "config"):
            (gitted / ".git" / name).write_text("x\n")
        (gitted / ".git" / "objects").mkdir()
        gconf = build_confinement((str(gitted),), RULES, cwd=str(gitted))

        def sh_launcher(pins_in_sh: int = confine.SH_PINS) -> None:
            built = build_confinement((str(gitted),), RULES, cwd=str(gitted))
            kept, confine.SH_PINS = confine.SH_PINS, pins_in_sh
            try:
                launch = editor_launch(Confined(built, status, "bwrap"), "true")
            finally:
                confine.SH_PINS = kept
            try:
                subprocess.run([launch.command, *launch.args], cwd=gitted,
                               stdin=subprocess.DEVNULL, check=True)
            finally:
                launch.cleanup()

        def python_launcher() -> None:
            path = Path(temp) / "profile.json"
            path.write_text(gconf.to_json())
            subprocess.run([sys.executable, "-P", "-m", "acpd.sandbox", "exec", "--profile",
                            str(path), "--", *plain], stdin=subprocess.DEVNULL, check=True)

        def direct() -> None:
            pins = open_pins(gconf)
            try:
                subprocess.run(bwrap_argv(bwrap, gconf, plain, pins), stdin=subprocess.DEVNULL,
                               check=True, pass_fds=tuple(pins.values()))
            finally:
                for fd in pins.values():
                    os.close(fd)

        got = interleaved({"plain": spawn(plain), "bwrap": direct, "launcher": sh_launcher,
                           "bash": lambda: sh_launcher(-1), "python": python_launcher},
                          launcher_runs)
        row("bash -c true (baseline)", got["plain"])
        row("bwrap ... bash -c true (pinned .git)", got["bwrap"], got["plain"])
        row("editor path: build + sh launcher + bwrap (now)", got["launcher"], got["plain"])
        row("  over bwrap alone", got["launcher"], got["bwrap"])
        row("editor path with the bash launcher (before)", got["bash"], got["plain"])
        row("python -P -m acpd.sandbox exec (before)", got["python"], got["plain"])

        print("\n4. availability probe (once per daemon)")
        row("bwrap ... true via posix_spawn", timed(lambda: probe(bwrap), max(10, runs // 3)))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
