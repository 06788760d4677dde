"""What an "always allow" answer for bash is bound to."""

from __future__ import annotations

import pytest

from acpd.policy.binaries import single_binary
from acpd.tools.builtin.shell import SPECS
from acpd.tools.permissions import approval_key

BASH = SPECS[0]


@pytest.mark.parametrize(
    ("command", "binary"),
    [
        ("git status", "git"),
        ("git log --oneline -5", "git"),
        ("cargo test --all", "cargo"),
        ("timeout 5 make test", "timeout>make"),
        ("nice -n 5 git log", "nice>git"),
    ],
)
def test_one_plain_program_binds_to_the_program(command: str, binary: str) -> None:
    assert single_binary(command) == binary


@pytest.mark.parametrize(
    "command",
    [
        "ls; rm -rf ~",  # a list: two programs
        "ls | sh",  # a pipeline
        "ls > out.txt",  # a redirect writes
        "FOO=1 make",  # an assignment changes what runs
        "bash -c 'ls'",  # a payload the approval never saw
        "python3 -c 'print(1)'",  # interpreter code
        "node script.js",  # an interpreter runs whatever it is given
        "sudo ls",  # privilege wrapper
        "xargs rm",  # arguments come from stdin
        "find . -exec rm {} +",  # a second program
        "./run.sh",  # a path names any file
        "echo $HOME",  # not literal
        "ls $(pwd)",  # substitution
        "if true; then ls; fi",  # compound
        "ls \U0010ffff",  # never parsed
        "git stash clear",  # destructive forms never share the program's approval
        "git branch -D x",
        "git checkout -- .",
        "git reset --hard",
        "date -s 12:00",
    ],
)
def test_anything_else_binds_to_the_exact_text(command: str) -> None:
    assert single_binary(command) is None


def test_approval_keys() -> None:
    assert approval_key(BASH, {"command": "git status"}) == approval_key(
        BASH, {"command": "git   log"}
    )
    assert approval_key(BASH, {"command": "git status"}) != approval_key(
        BASH, {"command": "git status; ls"}
    )
    first = approval_key(BASH, {"command": "python3 -c 'print(1)'"})
    assert first != approval_key(BASH, {"command": "python3 -c 'print(2)'"})
    assert first == approval_key(BASH, {"command": "python3 -c 'print(1)'"})
    assert approval_key(BASH, {"command": "ls"}) != approval_key(BASH, {"command": "sudo ls"})
