"""One path policy for every path: the shell and the file tools agree on each path.

For a table of paths (secrets, git internals, case variants, outside files, symlinks in the
workspace to each of them, a symlinked directory, odd spellings), `cat PATH` / `echo x > PATH`
are judged by the shell policy and `read` / `write` run through the real pipeline (built as
the daemon builds it, `build_toolkit`); both must land in the same verdict class: allow, ask
(the permission prompt) or deny (PolicyBlocked, no prompt).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from acpd.daemon.config import ToolsConfig
from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
from acpd.tools.pipeline import CallEnv, MemoryApprovals
from acpd.tools.setup import Toolkit, build_toolkit
from acpd.tools.spec import ToolCallView
from acpd.tools.state import SessionTools

from .conftest import Observer

pytestmark = pytest.mark.anyio

SECRET = "TOP-SECRET-CONTENT"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    (home / "notes.txt").write_text("outside notes\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def ws(tmp_path: Path, home: Path) -> Path:
    ws = tmp_path / "ws"
    for rel in (".env", "sub/.env", ".ENV", "secrets/a.txt", ".git/config", ".git/hooks/x",
                "sub/.git/config", "plain.txt", "hard.txt"):
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SECRET if "plain" not in rel and "hard" not in rel else "plain\n")
    os.link(ws / "hard.txt", ws / "hard2.txt")
    links = {"l_env": ".env", "l_sub_env": "sub/.env", "l_ENV": ".ENV", "l_secret": "secrets/a.txt",
             "l_gitconfig": ".git/config", "l_hook": ".git/hooks/x",
             "l_subgit": "sub/.git/config", "l_passwd": "/etc/passwd",
             "l_ssh": str(home / ".ssh" / "id_rsa"), "s2": "secrets", "l_chain": "l_env",
             "gitdir": ".git"}
    for name, target in links.items():
        (ws / name).symlink_to(target)
    return ws


PATHS = [".env", "sub/.env", ".ENV", ".EnV", "secrets/a.txt", ".git/config", ".git/hooks/x",
         "sub/.git/config", "/etc/passwd", "~/.ssh/id_rsa", "~/notes.txt", "plain.txt",
         "l_env", "l_sub_env", "l_ENV", "l_secret", "l_gitconfig", "l_hook", "l_subgit",
         "l_passwd", "l_ssh", "s2/a.txt", "l_chain", "gitdir/config", "gitdir/hooks/x",
         "./sub/../.env", "secrets//a.txt", "sub/../secrets/a.txt", "SECRETS/a.txt",
         "../ws/.env", "new.txt", "sub/new.txt", ".git/hooks/new"]
HARD_LINKED = "hard.txt"


class PromptObserver(Observer):
    """Keeps the text each permission prompt showed (the view changes after)."""

    def __init__(self, answers: list[Any]) -> None:
        super().__init__(answers)
        self.prompts: list[str] = []

    async def ask(self, view: ToolCallView) -> Any:
        self.prompts.append(" ".join(getattr(c, "text", "") for c in view.content))
        return await super().ask(view)


def toolkit(tmp_path: Path, **tools: Any) -> Toolkit:
    return build_toolkit(ToolsConfig(**tools), None)


def env_for(ws: Path, observer: Observer, mode: str = "auto") -> CallEnv:
    return CallEnv(str(ws), (str(ws),), mode, LocalFileSystem(), LocalCommandRunner(),
                   observer, MemoryApprovals(), SessionTools(), "sess")


async def file_verdict(kit: Toolkit, ws: Path, tool: str, args: dict[str, Any]) -> str:
    """allow / ask / deny for one call through the pipeline (asks are rejected)."""
    observer = Observer(["reject_once"])
    result = await kit.pipeline.run("c1", tool, args, env_for(ws, observer))
    if observer.asked:
        return "ask"
    if result.error is not None and result.error.category.value == "PolicyBlocked":
        return "deny"
    return "allow"


async def shell_verdict(kit: Toolkit, ws: Path, command: str) -> str:
    assert kit.pipeline.shell is not None
    decision = await kit.pipeline.shell.judge(command, cwd=str(ws), roots=(str(ws),))
    return decision.verdict


def private_tmp_only(ws: Path, path: str) -> bool:
    """`path` lies under /tmp outside the workspace (allowed only by the write root /tmp/**)."""
    full = os.path.realpath(os.path.join(ws, os.path.expanduser(path)))
    return full.startswith("/tmp/") and not full.startswith(f"{os.path.realpath(ws)}/")


def quoted(path: str) -> str:
    return path if path.startswith("~") else f"'{path}'"


@pytest.mark.parametrize("path", PATHS)
async def test_shell_and_file_tools_agree(tmp_path: Path, ws: Path, path: str) -> None:
    kit = toolkit(tmp_path)
    for mode, command, tool, args in (
        ("read", f"cat {quoted(path)}", "read", {"path": path}),
        ("write", f"echo x > {quoted(path)}", "write", {"path": path, "content": "x"}),
    ):
        shell = await shell_verdict(kit, ws, command)
        files = await file_verdict(kit, ws, tool, args)
        if mode == "write" and shell == "allow" and private_tmp_only(ws, path):
            # The write root /tmp/** is the sandbox's private /tmp; the file tools write
            # the host's, where such a path is outside the roots (outside_write: deny).
            assert files == "deny", f"{mode} {path}"
            continue
        assert files == shell, f"{mode} {path}: shell {shell}, file tools {files}"
    assert (ws / ".git" / "config").read_text() == SECRET  # never written


async def test_a_hard_linked_file_is_refused_by_the_file_tools(tmp_path: Path, ws: Path) -> None:
    """The file tools refuse any regular file with two links (its other name may be a denied
    file); the shell's path rules cannot see that, so the file tools are the stricter here."""
    kit = toolkit(tmp_path)
    assert await file_verdict(kit, ws, "read", {"path": HARD_LINKED}) == "deny"
    assert await file_verdict(kit, ws, "write", {"path": HARD_LINKED, "content": "x"}) == "deny"
    assert (ws / "hard2.txt").read_text() == "plain\n"


async def test_no_file_tool_returns_denied_content(tmp_path: Path, ws: Path) -> None:
    kit = toolkit(tmp_path)
    observer = Observer()
    env = env_for(ws, observer)
    outputs = []
    for i, (tool, args) in enumerate((
        ("grep", {"pattern": "SECRET", "path": "."}),
        ("grep", {"pattern": "SECRET", "path": "s2"}),
        ("grep", {"pattern": "SECRET", "path": "l_env"}),
        ("list_directory", {"path": "secrets"}),
        ("find_path", {"pattern": "**", "path": "."}),
        ("read", {"path": "s2/a.txt"}),
        ("copy_path", {"source": "secrets", "destination": "open"}),
        ("move_path", {"source": "s2/a.txt", "destination": "open.txt"}),
        ("edit", {"path": "l_env", "old_string": "TOP", "new_string": "x"}),
    )):
        result = await kit.pipeline.run(f"c{i}", tool, args, env)
        outputs.append(result.text)
    text = "\n".join(outputs)
    assert SECRET not in text
    assert "a.txt" in outputs[3]  # a listing shows names
    assert "matches deny_read" in outputs[5]
    assert not (ws / "open").exists() and not (ws / "open.txt").exists()
    assert (ws / ".env").read_text() == SECRET


@pytest.mark.parametrize(("tool", "args"), [
    ("move_path", {"source": "hooksrc", "destination": ".git/hooks/pre-commit"}),
    ("move_path", {"source": "hookdir", "destination": ".git/hooks2/../hooks/sub"}),
    ("move_path", {"source": "hookdir", "destination": "gitdir/hooks/more"}),
    ("copy_path", {"source": "hookdir", "destination": ".git/hooks/more"}),
    ("copy_path", {"source": "hooksrc", "destination": "gitdir/config2/../config"}),
    ("write", {"path": "gitdir//hooks/./pre-push", "content": "#!/bin/sh\ntouch PWNED\n"}),
    ("write", {"path": ".GIT/../.git/hooks/pre-push", "content": "x"}),
    ("edit", {"path": "l_gitconfig", "old_string": "TOP", "new_string": "x"}),
    ("delete_path", {"path": ".git/hooks"}),
    ("move_path", {"source": ".git/config", "destination": "c"}),
    ("move_path", {"source": ".git", "destination": "g2"}),
    ("create_directory", {"path": ".git/hooks/new"}),
])
async def test_git_internals_stay_untouched(
    tmp_path: Path, ws: Path, tool: str, args: dict[str, Any]
) -> None:
    (ws / "hooksrc").write_text("#!/bin/sh\ntouch PWNED\n")
    (ws / "hookdir").mkdir()
    (ws / "hookdir" / "pre-commit").write_text("#!/bin/sh\ntouch PWNED\n")
    before = sorted(str(p.relative_to(ws)) for p in (ws / ".git").rglob("*"))
    kit = toolkit(tmp_path)
    assert await file_verdict(kit, ws, tool, args) == "deny"
    after = sorted(str(p.relative_to(ws)) for p in (ws / ".git").rglob("*"))
    assert after == before
    assert (ws / ".git" / "config").read_text() == SECRET


async def test_an_outside_read_asks_and_runs_once_approved(
    tmp_path: Path, ws: Path, home: Path
) -> None:
    kit = toolkit(tmp_path)
    for path in ("~/notes.txt", str(home / "notes.txt"), "../home/notes.txt"):
        observer = PromptObserver(["allow_once"])
        result = await kit.pipeline.run("c", "read", {"path": path}, env_for(ws, observer))
        (why,) = observer.prompts
        assert "the path policy asks first" in why and "outside the workspace" in why
        assert result.error is None, result.text
        assert result.text == "outside notes\n"
    denied = Observer(["allow_once"])
    result = await kit.pipeline.run("c", "read", {"path": "~/.ssh/id_rsa"}, env_for(ws, denied))
    assert not denied.asked and result.error is not None and SECRET not in result.text


async def test_a_hot_reload_applies_to_the_next_file_call(
    tmp_path: Path, ws: Path, home: Path
) -> None:
    plugins = home / ".config" / "acpd" / "plugins"
    kit = build_toolkit(ToolsConfig(shell={"plugin_dirs": [str(plugins)]}), None)
    assert await file_verdict(kit, ws, "read", {"path": "plain.txt"}) == "allow"
    folder = plugins / "deny-plain"
    folder.mkdir(parents=True)
    os.chmod(folder, 0o755)
    (folder / "plugin.toml").write_text('[shell]\ndeny_read = ["**/plain.txt"]\n')
    assert kit.pipeline.shell is not None
    (handle,) = kit.pipeline.shell.handles()
    report = await handle.arebuild()
    assert not report.errors and report.changed
    assert await file_verdict(kit, ws, "read", {"path": "plain.txt"}) == "deny"
    assert await shell_verdict(kit, ws, "cat plain.txt") == "deny"


# --- [tools.permissions.<tool>] rules meet the real path ------------------------------------


@pytest.fixture
def secret_ws(tmp_path: Path, home: Path) -> Path:
    ws = tmp_path / "sw"
    (ws / "secret").mkdir(parents=True)
    (ws / "secret" / "x.txt").write_text(SECRET)
    (ws / "open").mkdir()
    (ws / "open" / "x.txt").write_text("open\n")
    (ws / "s2").symlink_to("secret")
    (ws / "lx").symlink_to("secret/x.txt")
    (ws / "chain").symlink_to("s2")
    return ws


RULES = {"read": {"deny": ["secret/**"]}, "write": {"deny": ["secret/**"]},
         "grep": {"deny": ["secret/**"]}}


@pytest.mark.parametrize("path", ["secret/x.txt", "s2/x.txt", "lx", "chain/x.txt",
                                  "./s2/../s2/x.txt", "s2//x.txt", "SECRET/x.txt", "s2/./x.txt",
                                  "open/../lx"])
async def test_a_deny_rule_meets_every_spelling_and_link(
    tmp_path: Path, secret_ws: Path, path: str
) -> None:
    kit = toolkit(tmp_path, permissions=RULES)
    observer = Observer()
    result = await kit.pipeline.run("c", "read", {"path": path}, env_for(secret_ws, observer))
    assert result.error is not None and SECRET not in result.text
    if path != "SECRET/x.txt":  # no such file here: it fails either way
        assert result.error.category.value == "PolicyBlocked", result.text
    result = await kit.pipeline.run("w", "write", {"path": path, "content": "x"},
                                    env_for(secret_ws, observer))
    assert result.error is not None
    assert (secret_ws / "secret" / "x.txt").read_text() == SECRET


async def test_links_created_after_an_allowed_read_are_judged_on_what_they_reach(
    tmp_path: Path, secret_ws: Path
) -> None:
    kit = toolkit(tmp_path, permissions=RULES)
    observer = Observer()
    env = env_for(secret_ws, observer)
    first = await kit.pipeline.run("c1", "read", {"path": "later/x.txt"}, env)
    assert first.error is not None  # not there yet
    (secret_ws / "later").mkdir()
    (secret_ws / "later" / "x.txt").write_text("fine\n")
    ok = await kit.pipeline.run("c2", "read", {"path": "later/x.txt"}, env)
    assert ok.error is None and ok.text == "fine\n"
    # the directory becomes a link to the denied one: a directory link, then a file link
    (secret_ws / "later" / "x.txt").unlink()
    (secret_ws / "later").rmdir()
    (secret_ws / "later").symlink_to("secret")
    again = await kit.pipeline.run("c3", "read", {"path": "later/x.txt"}, env)
    assert again.error is not None and SECRET not in again.text
    assert "secret/**" in again.text
    (secret_ws / "f.txt").symlink_to("secret/x.txt")
    file_link = await kit.pipeline.run("c4", "read", {"path": "f.txt"}, env)
    assert file_link.error is not None and SECRET not in file_link.text
    found = await kit.pipeline.run("c5", "grep", {"pattern": "SECRET", "path": "later"}, env)
    assert SECRET not in found.text


async def test_a_link_swapped_in_after_the_decision_is_refused_when_opened(
    tmp_path: Path, secret_ws: Path
) -> None:
    """The run-time check alone: the executor is called as the pipeline would call it after
    an allowed decision on a path that was harmless then and is a link to the secret now."""
    kit = toolkit(tmp_path, permissions=RULES)
    (secret_ws / "later").symlink_to("secret")
    read = kit.pipeline.registry.resolve("read")
    assert read is not None
    from acpd.tools.fs.params import ReadParams
    from acpd.tools.spec import ToolContext

    async def publish(_content: Any) -> None:
        return None

    ctx = ToolContext("t", str(secret_ws), (str(secret_ws),), LocalFileSystem(),
                      LocalCommandRunner(), publish, lambda _cleanup: None)
    from acpd.tools.errors import ToolError

    with pytest.raises(ToolError) as caught:
        await read.execute(ReadParams(path="later/x.txt"), ctx)
    assert caught.value.category.value == "PolicyBlocked"
    assert "secret/**" in caught.value.message
    # and the shell's own deny_read, on the opened fd's real path
    (secret_ws / "later").unlink()
    (secret_ws / "later").symlink_to(str(tmp_path / "home" / ".ssh"))
    with pytest.raises(ToolError) as caught:
        await read.execute(ReadParams(path="later/id_rsa"), ctx)
    assert "deny_read" in caught.value.message


async def test_an_ask_rule_asks_through_a_link(tmp_path: Path, secret_ws: Path) -> None:
    kit = toolkit(tmp_path, permissions={"read": {"ask": ["secret/**"]}})
    observer = Observer(["allow_once"])
    result = await kit.pipeline.run("c", "read", {"path": "s2/x.txt"},
                                    env_for(secret_ws, observer))
    assert len(observer.asked) == 1 and result.text == SECRET


async def test_always_allow_on_an_outside_read_covers_that_path_only(
    tmp_path: Path, ws: Path, home: Path
) -> None:
    (home / "other.txt").write_text("other\n")
    kit = toolkit(tmp_path)
    env = env_for(ws, Observer(["allow_always"]))
    first = await kit.pipeline.run("c1", "read", {"path": "~/notes.txt"}, env)
    assert first.error is None and first.text == "outside notes\n"
    env.observer = observer = Observer(["reject_once"])
    again = await kit.pipeline.run("c2", "read", {"path": "~/notes.txt"}, env)
    assert again.error is None and not observer.asked  # remembered for this path
    other = await kit.pipeline.run("c3", "read", {"path": "~/other.txt"}, env)
    assert observer.asked and other.error is not None  # asked again, and rejected
