"""Capabilities served by the editor: `fs/*` for files (unsaved buffers count) and
`terminal/*` for bash in the editor's own terminal."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from acpd.daemon.config import DEFAULT_ENV_BLOCKLIST
from acpd.daemon.confine import Confined, EditorLaunch, RulesSource, confine, editor_launch
from acpd.daemon.errors import PeerError
from acpd.daemon.local import QUIET_ENV, LocalFileSystem, check_cwd, env_matcher
from acpd.daemon.rpc import EditorPeer
from acpd.tools.capabilities import (
    CommandRequest,
    CommandResult,
    CommandRunner,
    OnOutput,
    OnTerminal,
)

if TYPE_CHECKING:
    from acpd.daemon.relay import Relay, Started
    from acpd.sandbox.parent import Pending

log = logging.getLogger("acpd.editor")

FS_TIMEOUT = 30.0
TERMINAL_TIMEOUT = 15.0
KILL_GRACE = 2.0
RELEASE_TIMEOUT = 2.0
POLL_INTERVAL = 0.5
"""How often `terminal/output` is polled while a command runs, to stream it into the card."""


class EditorFileSystem:
    """Reads and writes through the editor where it said it can, locally otherwise."""

    def __init__(
        self, conn: EditorPeer, session_id: str, *, can_read: bool, can_write: bool
    ) -> None:
        self._conn = conn
        self._session_id = session_id
        self._can_read = can_read
        self._can_write = can_write
        self._local = LocalFileSystem()

    async def read_text(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        if not self._can_read:
            return await self._local.read_text(path, line, limit)
        params: dict[str, Any] = {"sessionId": self._session_id, "path": path}
        if line is not None:
            params["line"] = line
        if limit is not None:
            params["limit"] = limit
        result = await self._call("fs/read_text_file", params, path)
        content = result.get("content") if isinstance(result, dict) else None
        if not isinstance(content, str):
            raise OSError(f"the editor sent no text for {path}")
        return content

    async def write_text(self, path: str, content: str) -> None:
        if not self._can_write:
            await self._local.write_text(path, content)
            return
        params = {"sessionId": self._session_id, "path": path, "content": content}
        await self._call("fs/write_text_file", params, path)

    @property
    def serves_reads(self) -> bool:
        return self._can_read

    @property
    def serves_writes(self) -> bool:
        return self._can_write

    async def _call(self, method: str, params: dict[str, Any], path: str) -> Any:
        try:
            return await self._conn.request(method, params, timeout=FS_TIMEOUT)
        except PeerError as exc:
            message = exc.error.message if exc.error is not None else str(exc)
            if exc.error is not None and exc.error.code == -32002:
                raise FileNotFoundError(2, f"not found ({message})", path) from None
            raise OSError(f"the editor refused: {message}") from None


class EditorSilent(OSError):
    """The editor did not answer `terminal/create` in time."""


class EditorTerminalRunner:
    """Runs `bash -c COMMAND` in an editor terminal that the tool call embeds, inside the
    kernel sandbox: the editor runs acpd's launcher (daemon/confine.py `editor_launch`).

    An editor that advertises `terminal` but never answers `terminal/create` (within
    `create_timeout`: `[protocol] request_timeout`, at most TERMINAL_TIMEOUT) does not fail
    the call: it runs on the `fallback` runner (the local path, same policy), and
    `on_silent` is told, so that the session uses the local path from then on instead of
    waiting for the editor on every call. An editor that answers with an error is reported
    in its own words.
    """

    def __init__(
        self, conn: EditorPeer, session_id: str, *, poll_interval: float = POLL_INTERVAL,
        fallback: CommandRunner | None = None, on_silent: Callable[[], None] | None = None,
        create_timeout: float = TERMINAL_TIMEOUT, rules: RulesSource | None = None,
        env_blocklist: Sequence[str] = DEFAULT_ENV_BLOCKLIST,
    ) -> None:
        self._conn = conn
        self._create_timeout = create_timeout
        self._session_id = session_id
        self._poll_interval = poll_interval
        self._fallback = fallback
        self._on_silent = on_silent
        self._silent = False
        self._rules = rules
        self._env_blocklist = tuple(env_blocklist)
        self._blocked = env_matcher(self._env_blocklist) if self._env_blocklist else None

    async def run(
        self, request: CommandRequest, on_terminal: OnTerminal, on_output: OnOutput
    ) -> CommandResult:
        if self._silent and self._fallback is not None:
            return await self._fallback.run(request, on_terminal, on_output)
        try:
            return await self._run_confined(request, on_terminal, on_output)
        except EditorSilent as exc:
            if self._fallback is None:
                raise
            log.warning("%s; running the command locally for the rest of the session", exc)
            self._silent = True
            if self._on_silent is not None:
                self._on_silent()
            return await self._fallback.run(request, on_terminal, on_output)

    async def _run_confined(
        self, request: CommandRequest, on_terminal: OnTerminal, on_output: OnOutput
    ) -> CommandResult:
        check_cwd(request)
        confined = await confine(request, self._rules)
        launch = editor_launch(confined, request.command, self._env_blocklist,
                               keep=request.env)
        variables = {**QUIET_ENV, **launch.env, **request.env}
        exited = False
        try:
            if launch.relay is None:
                result = await self._run(request, launch.command, launch.args, variables,
                                         on_terminal, on_output)
            else:
                result = await self._run_relayed(request, confined, launch, launch.relay,
                                                 variables, on_terminal, on_output)
            exited = result.exit_code is not None  # bubblewrap, and its sandbox, ended
        finally:
            if not exited:
                await launch.end_leftovers()
            launch.cleanup()
        result.sandbox, result.sandbox_notes = confined.label, confined.notes_after()
        return result

    async def _run_relayed(
        self, request: CommandRequest, confined: Confined, launch: EditorLaunch, relay: Relay,
        variables: dict[str, str], on_terminal: OnTerminal, on_output: OnOutput,
    ) -> CommandResult:
        """The editor runs the relay client while the daemon serves it (daemon/relay.py)."""
        # The command's init is set up in the parent while the editor starts the client.
        pending = confined.prestart(launch.shell)
        start = functools.partial(self._start_relayed, confined, request, launch.shell, pending)
        failure: Exception | None = None
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(relay.serve, start)
                try:
                    result = await self._run(request, launch.command, launch.args, variables,
                                             on_terminal, on_output)
                except Exception as exc:  # raised as itself, not in an ExceptionGroup
                    failure = exc
                tg.cancel_scope.cancel()  # a client that never came (or is gone)
        finally:
            if pending is not None:
                pending.abandon()  # unused (no client came): its init ends, nothing ran
        if failure is not None:
            raise failure
        return result

    async def _start_relayed(self, confined: Confined, request: CommandRequest,
                             shell: Sequence[str], pending: Pending | None,
                             stdio: tuple[int, int, int], env: dict[str, str]) -> Started:
        """The judged command with the relay client's descriptors and environment, minus
        the blocked names (those the runner sets itself stay)."""
        if self._blocked is not None:
            env = {k: v for k, v in env.items() if k in request.env or not self._blocked.match(k)}
        return await confined.start_with(shell, request.command, request.cwd, env, stdio,
                                         pending)

    async def _run(
        self, request: CommandRequest, command: str, args: list[str], variables: dict[str, str],
        on_terminal: OnTerminal, on_output: OnOutput,
    ) -> CommandResult:
        env = [{"name": k, "value": v} for k, v in variables.items()]
        created = await self._create(
            "terminal/create",
            {
                "sessionId": self._session_id,
                "command": command,
                "args": args,
                "env": env,
                "cwd": request.cwd,
                "outputByteLimit": request.output_byte_limit,
            },
        )
        terminal_id = created.get("terminalId") if isinstance(created, dict) else None
        if not isinstance(terminal_id, str) or not terminal_id:
            raise OSError("the editor did not return a terminal id")
        released = False

        async def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            await self._request("terminal/release", self._ids(terminal_id), RELEASE_TIMEOUT)

        await on_terminal(terminal_id, release)
        timed_out = False
        try:
            with anyio.move_on_after(request.timeout) as deadline:
                done = anyio.Event()
                failure: OSError | None = None
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._poll, terminal_id, on_output, done)
                    try:
                        exit_status = await self._conn.request(
                            "terminal/wait_for_exit", self._ids(terminal_id), timeout=None
                        )
                    except PeerError as exc:
                        # Raised out of the task group it would reach the model and the card
                        # as "ExceptionGroup: unhandled errors in a TaskGroup".
                        failure = editor_failed(exc)
                    # Stop polling, but let a `terminal/output` in flight finish: cancelling
                    # it would only make the editor do the work for nothing.
                    done.set()
                if failure is not None:
                    raise failure
            if deadline.cancelled_caught:
                timed_out = True
                exit_status = await self._kill(terminal_id)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._kill(terminal_id)
            raise
        output = await self._request("terminal/output", self._ids(terminal_id))
        return _result(terminal_id, output, exit_status, timed_out)

    async def _poll(
        self, terminal_id: str, on_output: OnOutput, done: anyio.Event
    ) -> None:
        """Stream the terminal's output into the card while the command runs (the card also
        embeds the terminal; an editor that does not render it still shows the text).
        Returns once `done` is set."""
        shown = ""
        while True:
            with anyio.move_on_after(self._poll_interval):
                await done.wait()
            if done.is_set():
                return
            try:
                output = await self._request("terminal/output", self._ids(terminal_id))
            except OSError as exc:  # the final read after the exit still gets the output
                log.debug("polling terminal %s failed: %s", terminal_id, exc)
                continue
            text = output.get("output") if isinstance(output, dict) else None
            if isinstance(text, str) and text != shown:
                shown = text
                await on_output(text)

    async def _kill(self, terminal_id: str) -> Any:
        """Kill, then give the process a short grace to report its exit."""
        try:
            await self._request("terminal/kill", self._ids(terminal_id))
            with anyio.move_on_after(KILL_GRACE):
                return await self._request("terminal/wait_for_exit", self._ids(terminal_id))
        except OSError as exc:
            log.warning("could not kill terminal %s: %s", terminal_id, exc)
        return None

    def _ids(self, terminal_id: str) -> dict[str, str]:
        return {"sessionId": self._session_id, "terminalId": terminal_id}

    async def _create(self, method: str, params: dict[str, Any]) -> Any:
        """`terminal/create`; raises EditorSilent when the editor does not answer in time."""
        try:
            return await self._conn.request(method, params, timeout=self._create_timeout)
        except PeerError as exc:
            if exc.error is None and not self._conn.input_closed:
                raise EditorSilent(f"the editor did not answer {method} within "
                                   f"{self._create_timeout:g} s") from None
            raise editor_failed(exc) from None

    async def _request(
        self, method: str, params: dict[str, Any], within: float = TERMINAL_TIMEOUT
    ) -> Any:
        # After stdin EOF the connection still sends (an editor that reads on kills and
        # releases the terminal) but fails the wait at once: no answer can arrive.
        try:
            return await self._conn.request(method, params, timeout=within)
        except PeerError as exc:
            raise editor_failed(exc) from None


def editor_failed(exc: PeerError) -> OSError:
    """The editor's own words, for the model and the card."""
    if exc.error is None:
        return OSError(f"the editor's terminal failed: {exc}")
    said = exc.error.message
    if exc.error.data is not None:
        said += f" ({str(exc.error.data)[:300]})"
    return OSError(f"the editor's terminal failed: {exc.method} answered {exc.error.code} {said}")


def _result(terminal_id: str, output: Any, exit_status: Any, timed_out: bool) -> CommandResult:
    text = output.get("output", "") if isinstance(output, dict) else ""
    status = exit_status if isinstance(exit_status, dict) else {}
    if isinstance(output, dict) and isinstance(output.get("exitStatus"), dict):
        status = status or output["exitStatus"]
    exit_code = status.get("exitCode")
    signal = status.get("signal")
    return CommandResult(
        output=text if isinstance(text, str) else "",
        exit_code=None if timed_out or not isinstance(exit_code, int) else exit_code,
        signal=signal if isinstance(signal, str) else None,
        timed_out=timed_out,
        truncated=bool(output.get("truncated")) if isinstance(output, dict) else False,
        terminal_id=terminal_id,
    )
