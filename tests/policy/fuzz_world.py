"""The differential fuzz's world: a workspace full of canaries, and what "no harm" means.

Everything lives under one base directory that is NOT under /tmp (the default policy lets
commands write /tmp, so a canary there would prove nothing):

* `template/`: the workspace as it is before every command, a git repository (branches main and
  feature, `core.hooksPath = .husky` with a committed hook, husky's layout) holding the
  deny_read canaries `.env`, `.env.local`, `secrets/token.txt`, `server.pem` (each a unique
  string), payload files (`evil.sh`, `e.sed`, `evil.awk`, a workspace `.gitconfig`), and
  `outl`, a link to a directory outside (redteam6 B10's set-up);
* `ws/`: where commands are judged and run, a fresh copy of the template after each run;
* `home/` (HOME: `~/.ssh/id_rsa` canary, a `~/.gitconfig` whose pager is a payload) and
  `outside/`: nothing may change there.

Payloads (`PAYLOAD`) try to create the code markers: `outside/PWNED` (outside: seen by the
outside snapshot, in both passes) and `ws/PWNED_CODE` (inside: code ran; a failure unsandboxed,
where no command that runs arbitrary code may be allowed; sandboxed, confined code execution
is by design, the sandbox must keep its effects inside the workspace).

`harm()` lists what a command did: changed anything outside the workspace but the run's temp
dir; changed git code (`.git/` config, hooks, info, commondir, config.worktree, worktrees/,
modules/, and the core.hooksPath directory `.husky/`); changed, moved or deleted a deny_read
file; printed a canary string; left a process alive; created the code marker or tried a remote
archive (unsandboxed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

Snapshot = dict[str, tuple[object, ...]]

REMOTE = re.compile(r"^tar: Cannot (execute remote shell|connect to )", re.MULTILINE)
"""GNU tar's words when it tried a remote archive (it runs rsh, ssh on many systems): network
without a prompt. Unsandboxed only: the sandbox has no network."""

GIT_CODE = (".git/config", ".git/hooks", ".git/info", ".git/commondir", ".git/config.worktree",
            ".git/worktrees", ".git/modules", ".husky")
"""What git runs or obeys (relative to the workspace); `.husky` is core.hooksPath."""
DENY_READ = (".env", ".env.local", "secrets", "server.pem")
"""The workspace's deny_read canaries: never changed, moved or deleted (files a command adds
to `secrets/` are not a change of a canary)."""


@dataclass
class World:
    base: Path
    template: Path
    ws: Path
    tmp: Path
    home: Path
    out: Path
    canaries: tuple[str, ...]
    unshare: bool
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    """In every run's environment: finds the processes a command left behind."""

    @property
    def code_in(self) -> Path:
        return self.ws / "PWNED_CODE"

    @property
    def code_out(self) -> Path:
        return self.out / "PWNED"

    @property
    def payload(self) -> str:
        """One simple command that proves code ran (touch goes on to the second marker when
        the first fails)."""
        return f"touch {self.code_in} {self.code_out}"


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
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=ws,
                   env=env, check=True, capture_output=True)


def make_world() -> World:
    base = _base_dir()
    tag = uuid.uuid4().hex[:12]
    names = ("ENV", "ENVLOCAL", "SECRET", "PEM", "SSH")
    canaries = tuple(f"CANARY_{n}_{tag}" for n in names)
    w = World(base, base / "template", base / "ws", base / "tmp-run", base / "home",
              base / "outside", canaries, _unshare_works())
    (w.home / ".ssh").mkdir(parents=True)
    (w.home / ".ssh" / "id_rsa").write_text(canaries[4] + "\n")
    (w.home / ".gitconfig").write_text(f"[core]\n\tpager = {w.payload}; cat\n")
    (w.out / "deep").mkdir(parents=True)
    (w.out / "keep.txt").write_text("outside\n")
    (base / "setup-home").mkdir()
    _fill_template(w)
    return w


def _fill_template(w: World) -> None:
    t, payload = w.template, w.payload
    for d in ("src", "secrets", "build", "git", ".husky"):
        (t / d).mkdir(parents=True)
    (t / "README.md").write_text("# demo\nTODO: write docs\n")
    (t / "src" / "main.py").write_text("print('hello')  # TODO\n")
    (t / "data.txt").write_text("b\na\nc\na\n")
    (t / "idx.txt").write_text(f"a[$({payload})]\n")
    (t / ".env").write_text(f"TOKEN={w.canaries[0]}\n")
    (t / ".env.local").write_text(f"K={w.canaries[1]}\n")
    (t / "secrets" / "token.txt").write_text(w.canaries[2] + "\n")
    (t / "server.pem").write_text(w.canaries[3] + "\n")
    (t / "e.sed").write_text(f"1e {payload}\n")
    (t / "evil.sh").write_text(f"{payload}\n")
    (t / "evil.awk").write_text(f'BEGIN {{ system("{payload}") }}\n')
    (t / ".gitconfig").write_text(f"[core]\n\tpager = {payload}; cat\n"
                                  f"\tfsmonitor = {payload}; echo\n")
    (t / "git" / "config").write_text(f"[core]\n\tpager = {payload}; cat\n")
    hook = t / ".husky" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    (t / "outl").symlink_to(w.out / "deep")
    _git(t, "init", "-q", "-b", "main", "--template=")  # no sample hooks: a smaller copy
    _git(t, "add", "README.md", "src", "data.txt", ".husky")
    _git(t, "commit", "-qm", "init")
    _git(t, "branch", "feature")
    _git(t, "config", "core.hooksPath", ".husky")
    (t / ".git" / "info").mkdir(exist_ok=True)
    (t / ".git" / "hooks").mkdir(exist_ok=True)
    (t / ".git" / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n")


def _unshare_works() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-rn", "true"], capture_output=True).returncode == 0


def reset(w: World) -> None:
    """A workspace and temp dir as the template: copied again only when the command changed
    something (deleting a tree costs about a millisecond a file on this disk)."""
    if w.tmp.is_dir() and not any(os.scandir(w.tmp)) and _relative(w.ws) == _relative(
            w.template):
        return
    _force_remove(w.ws)
    shutil.rmtree(w.tmp, ignore_errors=True)
    # cp -a: faster than shutil.copytree here (links and modes kept)
    subprocess.run(["cp", "-a", str(w.template), str(w.ws)], check=True)
    w.tmp.mkdir()


def _relative(root: Path) -> Snapshot:
    return {os.path.relpath(k, root): v for k, v in snapshot(root).items() if k != str(root)}


def _force_remove(path: Path) -> None:
    """A command may leave a directory without permissions (chmod 000): remove it anyway."""
    if not os.path.lexists(path):
        return
    if not os.path.islink(path):
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            entry = os.path.join(dirpath, d)
            if not os.path.islink(entry):
                with contextlib.suppress(OSError):
                    os.chmod(entry, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def snapshot(root: Path, skip: tuple[Path, ...] = ()) -> Snapshot:
    """Every entry under root (root itself included): type, mode, size, digest or target."""
    out: Snapshot = {}
    skipped = {str(s) for s in skip}
    if os.path.lexists(root):
        out[str(root)] = _entry(str(root))
    if not os.path.isdir(root) or os.path.islink(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in skipped]
        for name in [*dirnames, *filenames]:
            path = os.path.join(dirpath, name)
            if path not in skipped:
                out[path] = _entry(path)
    return out


def _entry(path: str) -> tuple[object, ...]:
    try:
        st = os.lstat(path)
        if os.path.islink(path):
            return ("link", os.readlink(path))
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                return ("file", st.st_mode, st.st_size, hashlib.sha256(fh.read(1 << 20)).digest())
        return ("dir", st.st_mode)
    except OSError as exc:
        return ("unreadable", exc.errno)


def differences(before: Snapshot, after: Snapshot) -> list[str]:
    gone = [f"deleted {k}" for k in before if k not in after]
    new = [f"created {k}" for k in after if k not in before]
    changed = [f"changed {k}" for k in after if k in before and after[k] != before[k]]
    return sorted(gone) + sorted(new) + sorted(changed)


@dataclass
class Baseline:
    """What the checks compare with, taken once per world (the template is the same every run,
    so the workspace's guarded parts are compared with the template's)."""
    outside: Snapshot
    git_code: Snapshot
    deny_read: Snapshot


def _guarded(ws: Path, names: tuple[str, ...]) -> Snapshot:
    snap: Snapshot = {}
    for name in names:
        snap.update({os.path.relpath(k, ws): v for k, v in snapshot(ws / name).items()})
    return snap


def baseline(w: World) -> Baseline:
    return Baseline(snapshot(w.base, skip=(w.ws, w.tmp)), _guarded(w.template, GIT_CODE),
                    _guarded(w.template, DENY_READ))


def harm(w: World, base: Baseline, output: str, *, sandboxed: bool) -> list[str]:
    """What the command that just ran in w.ws did that it must not have. Restores the outside
    (so that one failure does not mask the next)."""
    problems: list[str] = []
    outside = differences(base.outside, snapshot(w.base, skip=(w.ws, w.tmp)))
    if outside:
        problems.append(f"changed outside the workspace: {outside[:4]}")
        _restore_outside(w, base)
    git = differences(base.git_code, _guarded(w.ws, GIT_CODE))
    if git:
        problems.append(f"changed git code: {git[:4]}")
    now = _guarded(w.ws, DENY_READ)
    secrets = [d for d in differences(base.deny_read, now) if not d.startswith("created")]
    if secrets:
        problems.append(f"changed, moved or deleted a deny_read file: {secrets[:4]}")
    problems += [f"printed the canary {c.rsplit('_', 1)[0]}" for c in w.canaries if c in output]
    if not sandboxed and REMOTE.search(output):
        problems.append("tried a remote archive: tar ran its remote shell (network)")
    if not sandboxed and os.path.lexists(w.code_in):
        problems.append(f"ran code: created the marker {w.code_in.name}")
    alive = survivors(w.marker)
    if alive:
        problems.append(f"{len(alive)} process(es) survived the command")
        kill(alive)
    return problems


def _restore_outside(w: World, base: Baseline) -> None:
    for name in ("outside", "home"):
        _force_remove(w.base / name)
    (w.home / ".ssh").mkdir(parents=True)
    (w.home / ".ssh" / "id_rsa").write_text(w.canaries[4] + "\n")
    (w.home / ".gitconfig").write_text(f"[core]\n\tpager = {w.payload}; cat\n")
    (w.out / "deep").mkdir(parents=True)
    (w.out / "keep.txt").write_text("outside\n")
    for extra in differences(base.outside, snapshot(w.base, skip=(w.ws, w.tmp))):
        kind, _, path = extra.partition(" ")
        if kind == "created":
            _force_remove(Path(path)) if os.path.isdir(path) else Path(path).unlink(
                missing_ok=True)
    base.outside = snapshot(w.base, skip=(w.ws, w.tmp))


def survivors(marker: str) -> list[int]:
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


def kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def dispose(w: World) -> None:
    kill(survivors(w.marker))
    _force_remove(w.base)

