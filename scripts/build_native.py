"""Compile the shell-policy judge with mypyc into `<venv>/acpd-native`, beside the sources,
and the C parts: the editor path's relay client (src/acpd/sandbox/relay.c, relaybin.py) and
the checkpoint scanner's directory listing (src/acpd/checkpoint/statdir.c, statdir.py).

    .venv/bin/python scripts/build_native.py [--force] [--jobs N]

The judge is the hot path of every bash call (a decision per command line, cold: nothing of
an earlier decision kept). Compiled, the same modules run about twice as fast. The pure
modules stay the reference: `acpd.policy._native` loads the compiled ones only while every
source file is byte for byte what was compiled (a manifest of SHA-256 digests, checked at
import), and never when `ACPD_NATIVE=0`. So an edited source falls back to the pure module at
once, and a rebuild (this script; `scripts/test` runs it) brings the compiled one back.

Needs a C compiler, the Python headers and mypy (the test extra). Without them, or when the
build fails, it says why and exits 0: acpd runs pure. Re-running with unchanged sources does
nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))

from acpd.cbuild import CBuild  # noqa: E402
from acpd.checkpoint import statdir  # noqa: E402
from acpd.policy._native import (  # noqa: E402
    COMPILED_MODULES,
    manifest_matches,
    native_root,
    source_digests,
    write_manifest,
)
from acpd.sandbox import relaybin  # noqa: E402

# One C file per module (multi_file), compiled `jobs` at a time: a single file of the whole
# judge takes gcc over two minutes on one core. setuptools compiles an extension's files one
# by one, so its compile step is run over a thread pool here (gcc does the work).
_SETUP = """
from concurrent.futures import ThreadPoolExecutor
from setuptools import setup  # first: on Python 3.12+ it provides distutils
from distutils.ccompiler import CCompiler
from mypyc.build import mypycify

_one_by_one = CCompiler.compile

def _parallel(self, sources, *args, **kwargs):
    with ThreadPoolExecutor({jobs}) as pool:
        done = pool.map(lambda src: _one_by_one(self, [src], *args, **kwargs), sources)
        return [obj for objs in done for obj in objs]

CCompiler.compile = _parallel
setup(name="acpd-native", ext_modules=mypycify({sources!r}, opt_level="3", multi_file=True,
                                              strip_asserts=False))
"""


def _compiler() -> str | None:
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


class BuildFailed(Exception):
    """mypyc or the C compiler failed (the output says why)."""


def build(root: Path, jobs: int) -> None:
    sources = [str(SRC / (mod.replace(".", "/") + ".py")) for mod in COMPILED_MODULES]
    digests = source_digests()  # before the build: what is compiled is what is recorded
    with tempfile.TemporaryDirectory(prefix="acpd-native-") as tmp:
        setup = Path(tmp) / "setup.py"
        setup.write_text(_SETUP.format(sources=sources, jobs=jobs))
        env = dict(os.environ, MYPYPATH=str(SRC))
        cmd = [sys.executable, str(setup), "-q", "build_ext", "--build-lib", str(Path(tmp) / "lib"),
               "--build-temp", str(Path(tmp) / "tmp"), "--parallel", str(jobs)]
        done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildFailed(done.stdout[-6000:] + done.stderr[-6000:]
                              + f"\nmypyc failed (exit {done.returncode})")
        staging = root.with_name(root.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(Path(tmp) / "lib", staging)
    write_manifest(staging, digests)
    old = root.with_name(root.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if root.exists():
        root.rename(old)
    staging.rename(root)
    shutil.rmtree(old, ignore_errors=True)


# The C parts: each a second to build, each with a pure fallback (what runs without it).
C_PARTS: tuple[tuple[str, CBuild, str], ...] = (
    ("the relay client", relaybin.CLIENT, "the editor's terminal runs the sh launcher"),
    ("the checkpoint scanner's listing", statdir.extension(), "checkpoints list in Python"),
)


def build_c_parts(cc: str) -> None:
    for what, part, fallback in C_PARTS:
        try:
            built = part.build(cc)
        except subprocess.CalledProcessError as exc:
            print(f"{exc.stdout}{exc.stderr}\nbuild_native: {what} did not compile; "
                  f"{fallback}", file=sys.stderr)
        except OSError as exc:
            print(f"build_native: no {what} ({exc}); {fallback}", file=sys.stderr)
        else:
            if built is not None:
                print(f"build_native: built {what}: {built}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="build even if up to date")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    cc = _compiler()
    if cc is not None:
        build_c_parts(cc)
    root = Path(native_root())
    if not args.force and manifest_matches(root):
        return 0
    if cc is None:
        print("build_native: no C compiler found; acpd runs the pure policy (slower decisions),"
              " the editor's terminal runs the sh launcher and checkpoints list in Python",
              file=sys.stderr)
        return 0
    try:
        import mypyc  # noqa: F401
    except ImportError:
        print("build_native: mypy (mypyc) is not installed; acpd runs the pure policy",
              file=sys.stderr)
        return 0
    print(f"build_native: compiling {len(COMPILED_MODULES)} policy modules with mypyc "
          f"into {root} (a minute or two, once per change of the policy's sources)",
          file=sys.stderr)
    try:
        build(root, args.jobs)
    except BuildFailed as exc:
        # Not fatal: the pure judge is the reference and is complete (a type error mypy
        # reports, or missing Python headers, end here; the static checks still report it).
        kept = ("the earlier build of these same sources stays in use"
                if manifest_matches(root) else "acpd runs the pure policy")
        print(f"{exc}\nbuild_native: the build failed; {kept}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
