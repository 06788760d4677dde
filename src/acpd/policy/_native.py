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
import os
import sys

import orjson

# Light on purpose: the package imports this on every start of acpd (the CLI's parser lives in
# acpd.policy), before `initialize` is answered. No pathlib, no hashlib unless a source's time
# changed, orjson (on the wire anyway) for the manifest.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SRC = os.path.dirname(os.path.dirname(PACKAGE_DIR))

# Not compiled: pydantic models and their loaders (rules), the CLI, the watcher and reload
# handle (anyio, watchfiles), overlays, examples (run at compile time only) and the packages'
# __init__ files (they set the search path this module manages).
_PURE = frozenset({"__init__", "_native", "rules", "cli", "cli_args", "reload", "watch",
                   "overlays", "examples"})

MANIFEST = "manifest.json"
ACTIVE = False
"""True when this process runs the compiled policy modules."""


def _module_names() -> tuple[str, ...]:
    names: list[str] = []
    for sub in ("", "programs"):
        here = os.path.join(PACKAGE_DIR, sub) if sub else PACKAGE_DIR
        prefix = "acpd.policy." + (f"{sub}." if sub else "")
        stems = sorted(n[:-3] for n in os.listdir(here) if n.endswith(".py"))
        names.extend(prefix + stem for stem in stems if stem not in _PURE)
    return tuple(names)


COMPILED_MODULES = _module_names()


def native_root() -> str:
    """Where this interpreter's compiled policy lives (one per environment and Python)."""
    return os.path.join(sys.prefix, "acpd-native", sys.implementation.cache_tag)


def _source(module: str) -> str:
    return os.path.join(_SRC, *module.split(".")) + ".py"


def _digest(module: str) -> str:
    import hashlib

    with open(_source(module), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def source_digests() -> dict[str, str]:
    return {m: _digest(m) for m in COMPILED_MODULES}


def write_manifest(root: str | os.PathLike[str], digests: dict[str, str]) -> None:
    entries: dict[str, list[object]] = {}
    for module, digest in digests.items():
        st = os.stat(_source(module))
        entries[module] = [digest, st.st_size, st.st_mtime_ns]
    path = os.path.join(root, MANIFEST)
    with open(path + ".tmp", "wb") as fh:
        fh.write(orjson.dumps({"sources": _SRC, "modules": entries}))
    os.replace(path + ".tmp", path)


def manifest_matches(root: str | os.PathLike[str]) -> bool:
    """Whether `root` holds a build of exactly these sources (same module set, same bytes)."""
    try:
        with open(os.path.join(root, MANIFEST), "rb") as fh:
            recorded = orjson.loads(fh.read())
        modules = recorded["modules"]
        if recorded["sources"] != _SRC or set(modules) != set(COMPILED_MODULES):
            return False
        restamp = False
        for module, (digest, size, mtime_ns) in modules.items():
            st = os.stat(_source(module))
            if st.st_size == size and st.st_mtime_ns == mtime_ns:
                continue
            if _digest(module) != digest:
                return False
            restamp = True  # same bytes, new time (a checkout): skip the reading next time
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if restamp:
        with contextlib.suppress(OSError):  # (read-only: the digests are read again next time)
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
    package_path.insert(0, os.path.join(root, "acpd", "policy"))
    if root not in sys.path:
        sys.path.append(root)  # mypyc's shared library is a top-level module
    ACTIVE = True


def extend(package_path: list[str], sub: str) -> None:
    """The same for a subpackage (`programs`), once the parent package chose."""
    if ACTIVE:
        package_path.insert(0, os.path.join(native_root(), "acpd", "policy", sub))


def compiled() -> bool:
    """Whether the judge running in this process is the compiled one."""
    from acpd.policy import engine

    return str(engine.__file__).endswith((".so", ".pyd"))
