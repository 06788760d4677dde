"""`acpd demo`: a real `acpd serve`, a scripted model and a built-in editor, shown live.

The demo spawns the daemon exactly as an editor would (stdio, ACP v1), acts as that editor
with `AcpClient` (files, terminals, permissions) and renders the session with rich as it
happens. Without a TTY rich prints plain text, so the same command works in CI and pipes.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.markdown import Markdown
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text

import acpd
from acpd.daemon.demo_client import AcpClient, AgentError, AgentExited, ClientEvent
from acpd.daemon.demo_lockdown import ActFailed, plugin_config, second_act

PROMPT = (
    "Give me a quick tour of this project: what is in it, how big it is, and what is left to do."
)
DEMO_TIMEOUT = 60.0
MAX_CARD_LINES = 16

SAMPLE_FILES = {
    "README.md": (
        "# fruit-stand\n\nA tiny inventory tool, used by the acpd demo.\n\n"
        "Run: `python src/inventory.py data/stock.csv`\n"
    ),
    "src/inventory.py": '''"""Report fruit that is running low."""

import csv
import sys

LOW_STOCK = 10  # TODO: make the threshold a command-line flag


def load(path):
    with open(path, newline="") as handle:
        return {row["fruit"]: int(row["count"]) for row in csv.DictReader(handle)}


def low(stock, threshold=LOW_STOCK):
    return sorted(name for name, count in stock.items() if count < threshold)


if __name__ == "__main__":
    print("running low:", ", ".join(low(load(sys.argv[1]))) or "nothing")
''',
    "data/stock.csv": "fruit,count\napple,32\nbanana,7\ncherry,21\nkiwi,4\npear,10\n",
    "notes/todo.md": (
        "# Notes\n\n- TODO: tests for load()\n- Ask the shop which fruit sells fastest.\n"
    ),
}


def bundled_script() -> Path:
    return Path(acpd.__file__).parent / "data" / "demo.json"


def make_workspace(root: Path) -> Path:
    for name, text in SAMPLE_FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def run_demo(script: str | None, workspace: str | None, *, terminal: bool = True) -> int:
    """Run the demo; returns the process exit code (0 when the session completed)."""
    from acpd.providers.scripted import ScriptError, load_script

    console = _QuietOnBrokenPipe(highlight=False)
    script_path = Path(script).resolve() if script else bundled_script()
    try:
        load_script(script_path)
    except ScriptError as exc:
        console.print(Text(f"acpd demo: cannot use the script: {exc}", style="red"))
        return 2
    if workspace is not None and not Path(workspace).is_dir():
        console.print(Text(f"acpd demo: --workspace {workspace} is not a directory", style="red"))
        return 2
    with tempfile.TemporaryDirectory(prefix="acpd-demo-") as temp:
        scratch = Path(temp)
        root = Path(workspace).resolve() if workspace else make_workspace(scratch / "workspace")
        # An empty config and a throwaway data dir: the demo must not depend on (or write
        # into) the user's own setup.
        # Only the plugin directory it watches, for the second act (demo_lockdown.py).
        plugins = scratch / "plugins" if script is None else None
        config = plugin_config(plugins) if plugins is not None else ""
        (scratch / "config.toml").write_text(config, encoding="utf-8")
        argv = [
            sys.executable, "-m", "acpd", "serve",
            "--model", f"scripted:{script_path}",
            "--config", str(scratch / "config.toml"),
            "--data-dir", str(scratch / "data"),
        ]
        return anyio.run(_drive, argv, root, terminal, console, workspace is None, plugins)


async def _drive(
    argv: list[str], root: Path, terminal: bool, console: Console, temporary: bool,
    plugins: Path | None = None,
) -> int:
    view = SessionView(console)
    failure: Exception | None = None
    console.print(Rule(f"acpd demo · acpd {acpd.__version__}"))
    where = f"{root} (temporary)" if temporary else str(root)
    console.print(Text.assemble(("workspace  ", "dim"), where))
    offered = "fs read/write, terminal" if terminal else (
        "fs read/write (no terminal: bash runs locally)"
    )
    console.print(Text.assemble(("editor     ", "dim"), f"this demo client, offering {offered}"))
    async with AcpClient.start(argv, root, terminal=terminal, on_event=view.on_event,
                               on_update=view.on_update) as client:
        view.client = client
        try:
            with anyio.fail_after(DEMO_TIMEOUT):
                started = time.perf_counter()
                info = await client.initialize()
                agent = info.get("agentInfo") or {}
                console.print(Text.assemble(
                    ("agent      ", "dim"),
                    f"{agent.get('title', 'acpd')} {agent.get('version', '')}, spawned as "
                    f"`acpd serve`; initialize answered in {_ms(started)}",
                ))
                session_id = await client.new_session()
                console.print()
                console.print(Text.assemble(("you > ", "bold cyan"), PROMPT))
                started = time.perf_counter()
                with _working(console):
                    stop = await client.prompt(session_id, PROMPT)
                view.flush_message()
                view.finish(stop, time.perf_counter() - started)
                if plugins is not None:
                    started = time.perf_counter()
                    stop = await second_act(client, session_id, view, console, plugins)
                    view.finish(stop, time.perf_counter() - started)
        except (AgentError, AgentExited, TimeoutError, OSError, ActFailed) as exc:
            failure = exc
    if failure is None:
        return 0
    view.flush_message()
    _report_failure(console, failure, client.stderr_text())
    return 1


class _QuietOnBrokenPipe(Console):
    """rich exits with SystemExit on a broken pipe (`acpd demo | head`); raised inside an
    update callback that would tear through the event loop. Go quiet and let the session
    end normally instead, so the daemon is still shut down cleanly."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _report_failure(console: Console, failure: Exception, stderr: str) -> None:
    if isinstance(failure, TimeoutError):
        message = f"the session did not finish within {DEMO_TIMEOUT:g} s"
    else:
        message = str(failure) or type(failure).__name__
    console.print(Text(f"acpd demo failed: {message}", style="bold red"))
    if stderr.strip():
        tail = "\n".join(stderr.strip().splitlines()[-20:])
        console.print(Panel(Text(tail), title="acpd serve stderr (last lines)", border_style="red"))


def _working(console: Console) -> contextlib.AbstractContextManager[Any]:
    """A spinner while the turn runs, on a TTY only: piped output stays plain lines."""
    return console.status("acpd is working…") if console.is_terminal else contextlib.nullcontext()


def _ms(started: float) -> str:
    return f"{(time.perf_counter() - started) * 1000:.0f} ms"


class SessionView:
    """Turns ACP updates and the client's own actions into printed lines and cards."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.client: AcpClient | None = None
        self.cards: dict[str, dict[str, Any]] = {}
        self._message: list[str] = []
        unicode = (console.encoding or "").lower().startswith("utf")
        self.glyph = {
            "pending": "◌" if unicode else "o", "in_progress": "▶" if unicode else ">",
            "completed": "✔" if unicode else "+", "failed": "✘" if unicode else "x",
            "editor": "⇄" if unicode else "<>", "permission": "?",
        }

    # --- updates from the agent ----------------------------------------------------------------

    def on_update(self, session_id: str, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            content = update.get("content") or {}
            if isinstance(content.get("text"), str):
                self._message.append(content["text"])
            return
        self.flush_message()
        if kind in ("tool_call", "tool_call_update"):
            self._tool_call(update, first=kind == "tool_call")
        elif kind == "plan":
            self._plan(update.get("entries") or [])
        elif kind == "usage_update":
            self._note(f"usage: {update.get('used')} of {update.get('size')} tokens")
        elif kind == "agent_thought_chunk":
            text = (update.get("content") or {}).get("text", "")
            self._line(Text(f"  thinking: {text}", style="dim italic"))
        elif kind == "available_commands_update":
            names = [f"/{c.get('name')}" for c in update.get("availableCommands") or []]
            self._note(f"acpd offers {len(names)} slash commands: {' '.join(names)}")

    def flush_message(self) -> None:
        if not self._message:
            return
        text, self._message = "".join(self._message), []
        self.console.print(Text("acpd >", style="bold magenta"))
        self.console.print(Padding(Markdown(text), (0, 0, 0, 2), expand=False))

    def _tool_call(self, update: dict[str, Any], *, first: bool) -> None:
        call_id = str(update.get("toolCallId"))
        card = self.cards.setdefault(call_id, {"status": "pending"}) if first else (
            self.cards.setdefault(call_id, {})
        )
        before = card.get("status") if not first else None
        card.update({k: v for k, v in update.items() if k != "sessionUpdate"})
        status = str(card.get("status", "pending"))
        if status == before:
            return  # content-only update (streamed output, terminal embed): shown at the end
        if status in ("completed", "failed"):
            self._final_card(card, status)
            return
        self._line(Text.assemble(
            f"  {self.glyph.get(status, '·')} ", (f"{status:<11} ", "yellow"),
            (f"{card.get('kind', 'other'):<8} ", "cyan"), str(card.get("title", "")),
        ))

    def _final_card(self, card: dict[str, Any], status: str) -> None:
        body = Text(str(card.get("title", "")), style="bold")
        shown_terminal = ""
        for item in card.get("content") or []:
            if item.get("type") == "terminal":
                terminal_id = str(item.get("terminalId"))
                shown_terminal = self._terminal_text(terminal_id)
                body.append(f"\n$ terminal {terminal_id}", style="dim")
                body.append(f"\n{_clip(shown_terminal.rstrip())}")
            elif item.get("type") == "content":
                text = str((item.get("content") or {}).get("text", ""))
                if shown_terminal and text.startswith(shown_terminal):
                    text = text[len(shown_terminal):]  # the terminal above already shows it
                body.append("\n" + _clip(text.strip("\n")), style="dim" if shown_terminal else "")
            elif item.get("type") == "diff":
                body.append(f"\n(diff of {item.get('path')})", style="dim")
        style = "green" if status == "completed" else "red"
        title = f"{self.glyph[status]} {status} · {card.get('kind', 'other')}"
        self.console.print(Padding(Panel(body, title=title, title_align="left",
                                         border_style=style), (0, 0, 0, 2)))

    def _terminal_text(self, terminal_id: str) -> str:
        # The card embeds a terminal: show what this client's terminal holds, as an editor
        # would. The daemon releases it only after this final update.
        terminal = self.client.terminals.get(terminal_id) if self.client else None
        return terminal.text() if terminal is not None else "(this terminal is gone)"

    def _plan(self, entries: list[dict[str, Any]]) -> None:
        marks = {"completed": self.glyph["completed"], "in_progress": self.glyph["in_progress"]}
        lines = Text("Plan", style="bold")
        for entry in entries:
            mark = marks.get(str(entry.get("status")), "○" if self.glyph["editor"] == "⇄" else "-")
            lines.append(f"\n  {mark} {entry.get('content', '')}")
        self.console.print(Padding(lines, (0, 0, 0, 2), expand=False))

    def _note(self, text: str) -> None:
        self._line(Text(f"  {text}", style="dim"))

    def _line(self, text: Text) -> None:
        # Soft wrap: one event stays one line in a pipe or log, the terminal wraps it.
        self.console.print(text, soft_wrap=True)

    # --- what the editor side did ---------------------------------------------------------------

    def on_event(self, event: ClientEvent) -> None:
        self.flush_message()
        if event.kind == "permission":
            raw = event.data.get("raw_input")
            command = raw.get("command") if isinstance(raw, dict) else None
            shown = command if isinstance(command, str) else event.data.get("title")
            choice = "no allow option, cancelled" if event.data.get("option") is None else (
                "allow once (auto-approved by the demo editor)"
            )
            self._line(Text.assemble(
                f"  {self.glyph['permission']} ", ("permission  ", "magenta"),
                f"{shown}  → {choice}",
            ))
        elif event.kind in ("read", "write", "terminal"):
            self._line(Text.assemble(
                f"  {self.glyph['editor']} ", ("editor      ", "blue"), event.text,
            ))

    def user_action(self, text: str) -> None:
        """What the demo does as the user, between prompts."""
        self._line(Text.assemble(("  ! ", "bold"), ("you         ", "bold cyan"), text))

    def policy_reloaded(self, params: dict[str, Any]) -> None:
        """The daemon's `_acpd/policy_reloaded` notification, as an acpd-aware editor shows it."""
        self._line(Text.assemble(
            f"  {self.glyph['editor']} ", ("editor told ", "blue"),
            f"_acpd/policy_reloaded: policy {str(params.get('hash', ''))[:12]} in force",
        ))
        summary = params.get("summary")
        if isinstance(summary, str):
            self.console.print(Padding(Text(summary, style="yellow"), (0, 0, 0, 4)))

    def finish(self, stop: str, seconds: float) -> None:
        done = sum(1 for c in self.cards.values() if c.get("status") == "completed")
        failed = sum(1 for c in self.cards.values() if c.get("status") == "failed")
        self.console.print(Rule())
        self.console.print(
            f"stop reason {stop} · {len(self.cards)} tool calls ({done} completed, "
            f"{failed} failed) · {seconds:.1f} s"
        )


def _clip(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_CARD_LINES:
        return text
    return "\n".join([*lines[:MAX_CARD_LINES], f"… {len(lines) - MAX_CARD_LINES} more lines"])
