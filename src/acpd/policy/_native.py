"""The compiled judge (mypyc, `scripts/build_native.py`), loaded only when it is exactly the
sources beside it.

The build writes the compiled modules into `<sys.prefix>/acpd-native` with a manifest of the
SHA-256 digest of every source it compiled. At import of `acpd.policy`, `activate` puts that
directory first on the package's search path only if every recorded source is still byte for
byte the same (a file whose size and modification time are unchanged is not read again) and
`ACPD_NATIVE` is not `0`. An edited, added-to or deleted source makes the whole policy load
pure: compiled modules call each other directly, so half-compiled sets are never mixed with
sources they were not built from. Kept light: it runs on every start-up.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
_SRC = PACKAGE_DIR.parents[1]

# Not compiled: pydantic models and their loaders (rules), the CLI, the watcher and reload
# handle (anyio, watchfiles), overlays, examples (run at compile time only) and the packages'
# __init__ files (they set the search path this module manages), and the per-thread state
# (threadstate.py says why).
_PURE = frozenset({"__init__", "_native", "rules", "cli", "cli_args", "reload", "watch",
                   "overlays", "examples", "threadstate"})

MANIFEST = "manifest.json"
ACTIVE = False
"""True when this process runs the compiled policy modules."""


def _module_names() -> tuple[str, ...]:
    names: list[str] = []
    for sub in ("", "programs"):
        here = PACKAGE_DIR / sub if sub else PACKAGE_DIR
        prefix = "acpd.policy." + (f"{sub}." if sub else "")
        names.extend(prefix + p.stem for p in sorted(here.glob("*.py")) if p.stem not in _PURE)
    return tuple(names)


COMPILED_MODULES = _module_names()


def native_root() -> Path:
    """Where this interpreter's compiled policy lives (one per environment and Python)."""
    return Path(sys.prefix) / "acpd-native" / sys.implementation.cache_tag


def _source(module: str) -> Path:
    return _SRC / (module.replace(".", "/") + ".py")


def source_digests() -> dict[str, str]:
    return {m: hashlib.sha256(_source(m).read_bytes()).hexdigest() for m in COMPILED_MODULES}


def write_manifest(root: Path, digests: dict[str, str]) -> None:
    entries: dict[str, list[object]] = {}
    for module, digest in digests.items():
        st = _source(module).stat()
        entries[module] = [digest, st.st_size, st.st_mtime_ns]
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps({"sources": str(_SRC), "modules": entries}, indent=0))
    tmp.replace(root / MANIFEST)


def manifest_matches(root: Path) -> bool:
    """Whether `root` holds a build of exactly these sources (same module set, same bytes)."""
    try:
        recorded = json.loads((root / MANIFEST).read_text())
        modules = recorded["modules"]
        if recorded["sources"] != str(_SRC) or set(modules) != set(COMPILED_MODULES):
            return False
        restamp = False
        for module, (digest, size, mtime_ns) in modules.items():
            st = _source(module).stat()
            if st.st_size == size and st.st_mtime_ns == mtime_ns:
                continue
            if hashlib.sha256(_source(module).read_bytes()).hexdigest() != digest:
                return False
            restamp = True  # same bytes, new time (a checkout): skip the reading next time
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if restamp:
        with contextlib.suppress(OSError):
            write_manifest(root, {m: modules[m][0] for m in modules})
    return True


def activate(package_path: list[str]) -> None:
    """Put the compiled modules first on `acpd.policy`'s search path, when they are current."""
    global ACTIVE
    if os.environ.get("ACPD_NATIVE", "1") == "0":
        return
    root = native_root()
    if not manifest_matches(root):
        return
    package_path.insert(0, str(root / "acpd" / "policy"))
    if str(root) not in sys.path:
        sys.path.append(str(root))  # mypyc's shared library is a top-level module
    ACTIVE = True


def extend(package_path: list[str], sub: str) -> None:
    """The same for a subpackage (`programs`), once the parent package chose."""
    if ACTIVE:
        package_path.insert(0, str(native_root() / "acpd" / "policy" / sub))


def compiled() -> bool:
    """Whether the judge running in this process is the compiled one."""
    from acpd.policy import engine

    return str(engine.__file__).endswith((".so", ".pyd"))
