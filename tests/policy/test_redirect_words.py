"""Words tree-sitter hangs on a redirect are still the command's arguments.

tree-sitter-bash reads `cat 2>/dev/null .env` as a redirect with two destinations and a
command `cat` with no argument; bash runs `cat .env`. Likewise a here-document's words and
redirects after its delimiter (`cat <<E >/etc/x .env`). The judge must see them all.
"""

from __future__ import annotations

import pytest

from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy
from acpd.policy.parse import parse

READS_OF_ENV = [
    "cat 2>/dev/null .env",
    "cat >/dev/null .env",
    "cat >&2 .env",
    "cat 2>&1 .env",
    "cat &>/dev/null .env",
    "cat >out.txt .env",
    "cat >out.txt README.md .env",
    "cat >a b >c .env",
    "cat <README.md .env",
    "cat <<E .env\nx\nE\n",
    "cat <<'E' 2>/dev/null .env\nx\nE\n",
    "head -n1 2>/dev/null .env",
    "true && cat 2>/dev/null .env",
]


@pytest.mark.parametrize("cmd", READS_OF_ENV)
def test_a_word_after_a_redirect_is_read(default: CompiledPolicy, workspace: str,
                                          cmd: str) -> None:
    d = default.judge(cmd, cwd=workspace)
    assert d.verdict == "deny" and "path.deny-read" in d.rules, (cmd, d)


@pytest.mark.parametrize("cmd", [
    "cat <<E >/etc/acpd-x\nx\nE\n",
    "cat <<E 2>/dev/null >/etc/acpd-x\nx\nE\n",
    "cat <<E >>~/.bashrc\nx\nE\n",
])
def test_a_redirect_after_a_heredoc_delimiter_is_judged(default: CompiledPolicy,
                                                        workspace: str, cmd: str) -> None:
    d = default.judge(cmd, cwd=workspace)
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)
    assert {"path.outside-write", "path.deny-write"} & set(d.rules), (cmd, d)


@pytest.mark.parametrize(("line", "words"), [
    ("cat 2>/dev/null .env", ["cat", ".env"]),
    ("ls >x a 'b c' \"d\"", ["ls", "a", "'b c'", '"d"']),
    ("cat >a b >c d", ["cat", "b", "d"]),
    ("cat <<E x y\nbody\nE\n", ["cat", "x", "y"]),
])
def test_words_in_bash_order(line: str, words: list[str]) -> None:
    cmds = [c for c in parse(line).commands if c.words]
    assert [c.words for c in cmds] == [words]


@pytest.mark.parametrize("cmd", [
    "echo a | cat 2>x .env",
    "{ cat; } >x .env",
    "f() { cat; } >x .env",
])
def test_words_after_a_redirect_of_a_compound_ask(default: CompiledPolicy, workspace: str,
                                                   cmd: str) -> None:
    d = default.judge(cmd, cwd=workspace)
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)


def test_benign_redirects_still_allowed(default: CompiledPolicy, workspace: str) -> None:
    for cmd in ("ls -la 2>/dev/null", "grep -rn x src 2>/dev/null", "cat README.md >out.txt",
                "ls >listing.txt src"):
        assert default.judge(cmd, cwd=workspace).verdict == "allow", cmd


@pytest.mark.parametrize("cmd", [
    "f() { echo; } >/etc/acpd-x; f",
    "function f { echo; } 2>/etc/acpd-x; f",
    "f() ( echo ) >>/etc/acpd-x",
])
def test_a_function_definitions_redirect_is_judged(default: CompiledPolicy, workspace: str,
                                                   cmd: str) -> None:
    d = default.judge(cmd, cwd=workspace)
    assert RANK[d.verdict] >= RANK["ask"] and "path.outside-write" in d.rules, (cmd, d)
