"""The demo's second act: a plugin overlay tightens the shell policy mid-session.

After the tour, the demo (acting as the user) drops `demo-lockdown/plugin.toml` into the
daemon's plugin directory. The daemon's watcher rebuilds the policy off the hot path and
swaps it in, announces it (`_acpd/policy_reloaded`, with a summary in words), and tells the
session at its next prompt. The same `wc` command that ran a minute earlier is then refused by
the new rule, in the same session, without a restart. The act fails loudly when the reload is
not announced within RELOAD_WAIT seconds or the command is not refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.padding import Padding
from rich.rule import Rule
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console

    from acpd.daemon.demo import SessionView
    from acpd.daemon.demo_client import AcpClient

PLUGIN = "demo-lockdown"
RELOAD_WAIT = 15.0
SECOND_PROMPT = "Count the lines once more, please."
REFUSED_COMMAND = "wc -l README.md src/*.py data/*.csv"
OVERLAY = f'''# Added by `acpd demo` mid-session: overlays may only tighten the policy.
name = "{PLUGIN}"

[[shell.rules]]
id = "no-wc"
verdict = "deny"
commands = ["wc"]
reason = "the {PLUGIN} plugin forbids wc"
match = ["wc -l README.md"]
not_match = ["grep -rn TODO src"]
'''


class ActFailed(Exception):
    """The second act did not show what it promises (the message says what went wrong)."""


def plugin_config(plugins: Path) -> str:
    """The demo daemon's config: an empty plugin directory it watches."""
    plugins.mkdir(mode=0o700, parents=True, exist_ok=True)
    return f"[tools.shell]\nplugin_dirs = [{json.dumps(str(plugins))}]\n"


def install_overlay(plugins: Path) -> Path:
    folder = plugins / PLUGIN
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / "plugin.toml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(OVERLAY)
    return path


async def second_act(
    client: AcpClient, session_id: str, view: SessionView, console: Console, plugins: Path
) -> str:
    """Add the overlay, wait for the daemon to announce it, prompt again; returns the stop
    reason. Raises ActFailed, and what AcpClient raises."""
    console.print()
    console.print(Rule("mid-session: a plugin tightens the shell policy"))
    seen = len(client.notifications)
    path = install_overlay(plugins)
    view.user_action(f"added the plugin overlay {path} (deny rule: wc), no restart")
    try:
        reloaded = await client.next_notification(
            "_acpd/policy_reloaded", _changed, RELOAD_WAIT, after=seen)
    except TimeoutError:
        raise ActFailed(f"the daemon did not announce the new policy within {RELOAD_WAIT:g} s"
                        ) from None
    view.policy_reloaded(reloaded)
    view.cards.clear()
    console.print()
    console.print(Text.assemble(("you > ", "bold cyan"), SECOND_PROMPT))
    stop = await client.prompt(session_id, SECOND_PROMPT)
    view.flush_message()
    refused = [c for c in view.cards.values()
               if str(c.get("title", "")).startswith(REFUSED_COMMAND)
               and c.get("status") == "failed" and "denies it" in _texts(c)]
    if not refused:
        raise ActFailed(f"`{REFUSED_COMMAND}` was not refused by the new policy")
    console.print(Padding(Text(
        f"The same command ran in the tour; now the {PLUGIN} overlay refuses it, in the same "
        "session, without a restart.", style="bold green"), (0, 0, 0, 2)))
    return stop


def _changed(params: Any) -> bool:
    return isinstance(params, dict) and params.get("changed") is True


def _texts(card: dict[str, Any]) -> str:
    return " ".join(str((c.get("content") or {}).get("text", ""))
                    for c in card.get("content") or [] if c.get("type") == "content")
