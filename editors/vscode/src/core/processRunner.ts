// Commands as real processes (node child_process), each in its own process group so a kill
// reaches everything it started. Used by the VS Code Pseudoterminal adapter and the tests.

import { spawn } from "node:child_process";
import type { CommandSink, CommandSpec, RunningCommand, TerminalPort } from "./ports";

export class ProcessRunner implements TerminalPort {
  start(spec: CommandSpec, sink: CommandSink): RunningCommand {
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd ?? undefined,
      env: { ...process.env, ...spec.env },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let done = false;
    child.stdout.on("data", (chunk: Buffer) => sink.data(chunk));
    child.stderr.on("data", (chunk: Buffer) => sink.data(chunk));
    child.on("error", (err) => {
      if (done) return;
      done = true;
      sink.data(Buffer.from(`${spec.command}: ${err.message}\n`));
      sink.exit({ exitCode: 127, signal: null });
    });
    child.on("close", (code, signal) => {
      if (done) return;
      done = true;
      sink.exit({ exitCode: code, signal: signal ?? null });
    });
    let released = false;
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    return {
      kill: () => {
        if (!done) killGroup();
      },
      // Release also ends what the command left running in its group (`sleep 99 &`): the
      // group id cannot be reused while any of its members lives.
      release: () => {
        if (released) return;
        released = true;
        killGroup();
      },
    };
  }
}
