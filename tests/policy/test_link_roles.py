"""A command acts on a symbolic link itself or writes through it, as its spec says.

Removing or renaming a link (`rm lnk`, `unlink lnk`, `mv lnk x`, `ln -sfn T lnk`) touches the
link, not its target: a link to a file outside the workspace may be removed. Writing through
it (`echo x > lnk`, `cp a lnk`, `tee lnk`) writes the target; a trailing `/` (`rm -r lnk/`) or a
destination that points to a directory (`mv a dlnk`, `ln -s T dlnk`) goes through it too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy, compile_policy
from acpd.policy.rules import load_base


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> CompiledPolicy:
    """The default policy with no write root outside the workspace (tmp is one by default,
    and the link targets of these tests live there)."""
    path = tmp_path_factory.mktemp("policy") / "p.toml"
    path.write_text("[paths]\nwrite_roots = []\n")
    return compile_policy(load_base(path)[0])


@pytest.fixture()
def ws(tmp_path: Path) -> str:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "f").write_text("o\n")
    work = tmp_path / "ws"
    (work / "d").mkdir(parents=True)
    (work / "a").write_text("a\n")
    os.symlink(outside / "f", work / "lnk")
    os.symlink(outside / "dir", work / "dlnk")
    os.symlink(os.path.expanduser("~"), work / "homelnk")
    return os.path.realpath(work)


ON_THE_LINK = ["mv lnk x", "mv lnk d/", "mv -f lnk renamed", "mv a lnk", "mv -T a dlnk",
               "mv --no-target-directory a dlnk", "ln -sf a lnk", "ln -sfn a dlnk",
               "ln -sf --no-dereference a dlnk", "ln -f a lnk", "mv dlnk d/",
               "command mv lnk y", "rmdir dlnk"]


@pytest.mark.parametrize("cmd", ON_THE_LINK)
def test_acting_on_the_link_is_inside_the_workspace(strict: CompiledPolicy, ws: str,
                                                    cmd: str) -> None:
    d = strict.judge(cmd, cwd=ws, trust="trusted")
    assert d.verdict == "allow", (cmd, d)


@pytest.mark.parametrize("cmd", ["rm lnk", "rm -f lnk", "unlink lnk", "rm -rf dlnk",
                                 "rm -rf homelnk", "rm -r -- lnk"])
def test_removing_a_link_is_not_a_write_outside(strict: CompiledPolicy, ws: str,
                                                cmd: str) -> None:
    d = strict.judge(cmd, cwd=ws, trust="trusted")
    assert not {"path.outside-write", "destroy.home-or-ancestor"} & set(d.rules), (cmd, d)
    assert d.verdict == "ask"  # rm asks in the default policy anyway, never deny here


@pytest.mark.parametrize("cmd", ["echo x > lnk", "echo x >> lnk", "cp a lnk", "tee lnk < a",
                                 "mv a dlnk", "cp a dlnk", "ln -s /x dlnk", "ln -sf a dlnk",
                                 "rm -rf dlnk/", "rm dlnk/x", "touch dlnk/new", "sed -i s/o/x/ lnk",
                                 "mv a dlnk/", "dd if=a of=lnk"])
def test_writing_through_the_link_is_outside(strict: CompiledPolicy, ws: str, cmd: str) -> None:
    d = strict.judge(cmd, cwd=ws, trust="trusted")
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)
    assert "path.outside-write" in d.rules or "spec.unmodeled" in d.rules, (cmd, d)


@pytest.mark.parametrize("cmd", ["rm -rf homelnk/", "rm -rf homelnk/*", "rm -rf ~"])
def test_deleting_home_through_a_link_is_denied(strict: CompiledPolicy, ws: str,
                                                cmd: str) -> None:
    assert strict.judge(cmd, cwd=ws, trust="trusted").verdict == "deny", cmd


def test_removing_a_link_to_a_denied_file_is_fine_writing_it_is_not(
        strict: CompiledPolicy, ws: str) -> None:
    Path(ws, ".git").mkdir()
    Path(ws, ".git", "config").write_text("[core]\n")
    os.symlink(os.path.join(ws, ".git", "config"), os.path.join(ws, "cfg"))
    assert strict.judge("mv cfg other", cwd=ws, trust="trusted").verdict == "allow"
    d = strict.judge("echo '[core]' > cfg", cwd=ws, trust="trusted")
    assert d.verdict == "deny" and "path.deny-write" in d.rules
