"""The shortcuts the judge takes for speed give exactly what the general code gives."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acpd.policy import parse as parse_mod
from acpd.policy import pathtext
from acpd.policy.argspec import SPECS, path_args, scan
from acpd.policy.blocklist import BLOCKED_ENV, env_blocked
from acpd.policy.budget import TooComplex
from acpd.policy.sandbox import Prefilter, _normpath, compile_patterns, matches
from acpd.policy.words import expand, expand_segments, simple_value
from acpd.policy.wrappers import WRAPPERS, unwrap

WORD_CHARS = "ab-_./:=,+@%^ '\"$`\\{}*?[]~!#\n\t"


@given(st.text(alphabet=WORD_CHARS, max_size=12))
def test_simple_value_is_what_expansion_gives(word: str) -> None:
    value = simple_value(word)
    try:
        general = expand_segments(word, {}, "/home/u")
    except TooComplex:  # (the judge asks): never a word with a simple value
        assert value is None
        with pytest.raises(TooComplex):
            expand(word, {}, "/home/u")
        return
    if value is not None:
        assert general == (((value,),), False, False)
    assert expand(word, {}, "/home/u") == general


@pytest.mark.parametrize("word,value", [
    ("ls", "ls"), ("'a b'", "a b"), ('"a b"', "a b"), ("''", ""), ('""', ""),
    ('"$X"', None), ('"a\\"b"', None), ("'a'b", None), ("~", None), ("*.py", None),
    ("a{b,c}", None), ("'it''s'", None),
])
def test_simple_value_examples(word: str, value: str | None) -> None:
    assert simple_value(word) == value


def test_names_outside_wrappers_come_back_unchanged() -> None:
    names = {*SPECS, "git", "ls", "rm", "curl", "make", "npm", "unknown-tool", "", "./x.sh",
             "/usr/bin/git", "\x00?"}
    for name in sorted(names - WRAPPERS):
        argv = [name, "-c", "x", "{}", ";"]
        res = unwrap(argv)
        assert res.argv == argv
        assert not (res.assigns or res.payloads or res.extra_argvs or res.reads or res.writes
                    or res.findings or res.chain)


def test_every_wrapper_name_is_known() -> None:
    for name in ("env", "sudo", "timeout", "xargs", "find", "fd", "bash", "sh", "eval", "trap",
                 "watch", "flock", "su", "script", "coproc", "busybox", "parallel"):
        assert name in WRAPPERS


def test_node_limit_counts_skipped_command_names() -> None:
    # program + (command, command_name) per command: 2n + 1 nodes against MAX_NODES.
    limit = parse_mod.MAX_NODES
    assert not parse_mod.parse("a;" * ((limit - 1) // 2)).too_big
    assert parse_mod.parse("a;" * ((limit - 1) // 2 + 1)).too_big


def test_join_and_normpath_match_os_path() -> None:
    rnd = random.Random(7)
    parts = ["a", ".", "..", ".env", "..x", "x.", "", "b.c", "..."]
    for _ in range(20_000):
        path = "/" + "/".join(rnd.choice(parts) for _ in range(rnd.randint(0, 6)))
        assert _normpath(path) == os.path.normpath(path)
        cwd = rnd.choice(["/", "/w", "/w/x", "//w"])
        raw = "/".join(rnd.choice(parts) for _ in range(rnd.randint(1, 4)))
        if raw and not raw.startswith("/"):
            assert pathtext.join(cwd, raw) == os.path.join(cwd, raw)


def test_prefilter_never_hides_a_match() -> None:
    patterns = compile_patterns(("**/.env", "**/.env.*", "~/.ssh/**", "**/*.pem", ".git/hooks/**",
                                 ".git/config", "secrets/[ab]*", "/etc/shadow"), "/home/u")
    roots = ("/w", "/w2/")
    pre = Prefilter(patterns)
    rnd = random.Random(3)
    parts = ["w", "w2", ".git", "hooks", "config", ".env", ".env.x", "x.pem", "home", "u",
             ".ssh", "id", "secrets", "a1", "c1", "etc", "shadow", "X.PEM"]
    for _ in range(20_000):
        path = "/" + "/".join(rnd.choice(parts) for _ in range(rnd.randint(0, 5)))
        if matches(path, patterns, roots) is not None:
            assert pre.may_match(path, roots)


def test_prefilter_literals_never_hide_a_match() -> None:
    """The required-literal shortcut, on random patterns and paths: `**/` that stands for
    nothing, case, and letters `re.IGNORECASE` folds onto ASCII ones (U+017F is `s`)."""
    rnd = random.Random(11)
    glob_bits = ["a", "s", "S", "x", ".", "/", "*", "**", "**/", "?", "[ab]", "\u017f", "K"]
    path_bits = ["a", "s", "S", "x", ".", "/", "\u017f", "\u212a", "k", "b", "\n"]
    roots = ("/w",)
    for _ in range(400):
        globs = tuple(
            rnd.choice(["", "**/", "/", "/w/"]) + "".join(
                rnd.choice(glob_bits) for _ in range(rnd.randint(1, 5)))
            for _ in range(rnd.randint(1, 3)))
        patterns = compile_patterns(globs, "/home/u")
        pre = Prefilter(patterns)
        for _ in range(100):
            path = rnd.choice(["/", "/w/"]) + "".join(
                rnd.choice(path_bits) for _ in range(rnd.randint(0, 8)))
            if matches(path, patterns, roots) is not None:
                assert pre.may_match(path, roots), (globs, path)


def test_env_blocklist_regex() -> None:
    for name in ("LD_PRELOAD", "ld_preload", "PATH", "GIT_DIR", "BASH_FUNC_x%%", "ENV", "HOME"):
        assert env_blocked(name)
    for name in ("PATHX", "XPATH", "ENVX", "HOMEX", "A\nPATH", "PATH\n"):
        assert not env_blocked(name)
    assert env_blocked("FOO_1", ("foo_*",))
    assert len(BLOCKED_ENV) > 10


def test_path_args_reuses_the_scan() -> None:
    for name, spec in SPECS.items():
        for args in (["a", "-", "b"], ["-n", "3", "f"], ["-c", "x.gz"], ["f"], []):
            reused, fresh = path_args(name, args, scan(args, spec.value_options)), \
                path_args(name, args)
            assert (reused.reads, reused.writes) == (fresh.reads, fresh.writes), (name, args)
