"""The compiled judge (mypyc, scripts/build_native.py) decides exactly as the pure one.

The pure modules are the reference: every line of the shared corpus, generated lines of every
fuzz family (the bypass classes, their near misses, the benign workflows, the red-team
classes), brace words checked against bash in test_braces.py and hostile inputs up to the
input cap are judged in two processes, one running the compiled modules and one with
`ACPD_NATIVE=0`, under the default and the reference policy, both trusts, sandboxed or not;
verdicts, rules and reasons must be the same. Hostile inputs run under a 2 s budget: the
compiled process must survive every one, and each that both processes decide within the
budget must be decided the same (one over budget in either is not compared: a faster judge
may finish what a slower one could not).

Also: the loader's guard. A compiled build is used only for the sources it was built from.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acpd.policy import _native
from tests.policy.fuzz_grammar import families
from tests.policy.fuzz_near import near_families
from tests.policy.fuzz_redteam import redteam_classes
from tests.policy.fuzz_world import World, dispose, make_world, reset
from tests.policy.test_braces import bash_text, random_words

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
PER_FAMILY = 12
SEED = 1505


def _hostile() -> list[str]:
    cap = 64 * 1024
    cases = [
        "{ " * 8000 + "ls; " + "} " * 8000, "echo " + "{" * 8000 + "a,b" + "}" * 8000,
        "echo " + "{a,b}" * 6000, "echo " + "${a:-" * 5000 + "x" + "}" * 5000,
        "echo " + "$( " * 3000 + "ls" + " )" * 3000, "(" * 8000 + "ls" + ")" * 8000,
        "echo $((" + "(" * 8000 + "1" + ")" * 8000 + "))", " | ".join(["cat"] * 10000),
        "if true; then " * 3000 + "ls; " + "fi; " * 3000, "echo " + "${a[" * 3000 + "1"
        + "]}" * 3000, "for i in a b c; do " * 2000 + "ls; " + "done; " * 2000,
        "echo {1..2000000000}", "echo " + "{a..z}" * 8, "eval " * 10000 + "ls",
    ]
    return [c[:cap] for c in cases]


def _lines(w: World) -> list[str]:
    corpus = [json.loads(x)["cmd"] for x in
              (HERE / "shell_policy.jsonl").read_text().splitlines() if x.strip()]
    generated: list[str] = []
    r = random.Random(SEED)
    gens = {**families(w), **near_families(w), **redteam_classes(w)}
    for name in sorted(gens):
        generated.extend(gens[name](r) for _ in range(PER_FAMILY))
    braces = [f"echo {bash_text(word)}" for word in random_words(SEED, 300)]
    return [*corpus, *generated, *braces]


def _judge_all(job: dict[str, object], *, native: bool) -> dict[str, object]:
    env = {**os.environ, "ACPD_NATIVE": "1" if native else "0", "HOME": str(job["home"])}
    done = subprocess.run([sys.executable, "-m", "tests.policy.native_judge"], cwd=ROOT,
                          env=env, input=json.dumps(job), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"the judge died (exit {done.returncode}):\n{done.stderr}"
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    if shutil.which("bash") is None or shutil.which("git") is None:
        pytest.skip("needs bash and git")
    w = make_world()
    reset(w)
    try:
        yield w
    finally:
        dispose(w)


def test_the_compiled_judge_decides_as_the_pure_one(request: pytest.FixtureRequest) -> None:
    if not _native.manifest_matches(_native.native_root()):
        pytest.skip("no compiled judge for these sources in this environment "
                    "(scripts/build_native.py; needs a C compiler)")
    world: World = request.getfixturevalue("world")  # (made only when there is a build)
    job = {"workspace": str(world.ws), "home": str(world.home), "lines": _lines(world),
           "reference": str(HERE / "reference-policy.toml"), "hostile": _hostile()}
    compiled = _judge_all(job, native=True)
    pure = _judge_all(job, native=False)
    assert compiled["compiled"] is True and pure["compiled"] is False
    lines = job["lines"]
    assert isinstance(lines, list)
    exact_c, exact_p = compiled["exact"], pure["exact"]
    assert isinstance(exact_c, list) and isinstance(exact_p, list)
    assert len(exact_c) == len(exact_p) == 8 * len(lines)
    differ = [(lines[(i // 4) % len(lines)], c, p)
              for i, (c, p) in enumerate(zip(exact_c, exact_p, strict=True)) if c != p]
    assert differ == [], f"{len(differ)} decisions differ; first: {differ[:3]}"
    hostile_c, hostile_p = compiled["hostile"], pure["hostile"]
    assert isinstance(hostile_c, list) and isinstance(hostile_p, list)
    over = "input.over-budget"
    compared = [(line[:60], c, p) for line, c, p in zip(job["hostile"], hostile_c, hostile_p,
                                                        strict=True)
                if over not in c["rules"] and over not in p["rules"]]
    assert len(compared) >= len(hostile_c) // 2, "most hostile inputs are decided in budget"
    assert [x for x in compared if x[1] != x[2]] == []


def _fake_build(tmp_path: Path) -> Path:
    root = tmp_path / "native"
    root.mkdir()
    _native.write_manifest(root, _native.source_digests())
    return root


def test_a_build_of_these_sources_is_used(tmp_path: Path) -> None:
    assert _native.manifest_matches(_fake_build(tmp_path))


def test_a_build_of_other_sources_is_not_used(tmp_path: Path) -> None:
    root = _fake_build(tmp_path)
    manifest = json.loads((root / _native.MANIFEST).read_text())
    first = sorted(manifest["modules"])[0]
    manifest["modules"][first][0] = "0" * 64  # what an edit of that source does
    manifest["modules"][first][1] = -1
    (root / _native.MANIFEST).write_text(json.dumps(manifest))
    assert not _native.manifest_matches(root)


def test_a_build_missing_a_module_is_not_used(tmp_path: Path) -> None:
    root = _fake_build(tmp_path)
    manifest = json.loads((root / _native.MANIFEST).read_text())
    del manifest["modules"][sorted(manifest["modules"])[-1]]  # a module added since the build
    (root / _native.MANIFEST).write_text(json.dumps(manifest))
    assert not _native.manifest_matches(root)


def test_same_bytes_with_a_new_time_are_used_and_restamped(tmp_path: Path) -> None:
    root = _fake_build(tmp_path)
    manifest = json.loads((root / _native.MANIFEST).read_text())
    for entry in manifest["modules"].values():
        entry[2] = 1  # as after a checkout: the times changed, the bytes did not
    (root / _native.MANIFEST).write_text(json.dumps(manifest))
    assert _native.manifest_matches(root)
    again = json.loads((root / _native.MANIFEST).read_text())
    assert all(entry[2] != 1 for entry in again["modules"].values())


def test_no_manifest_or_a_broken_one_is_not_used(tmp_path: Path) -> None:
    root = tmp_path / "native"
    root.mkdir()
    assert not _native.manifest_matches(root)
    (root / _native.MANIFEST).write_text("{not json")
    assert not _native.manifest_matches(root)


def test_acpd_native_0_runs_the_pure_judge() -> None:
    code = "from acpd.policy import _native; print(_native.ACTIVE, _native.compiled())"
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "ACPD_NATIVE": "0"},
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
