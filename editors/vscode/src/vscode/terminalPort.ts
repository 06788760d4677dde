// terminal/* in a visible VS Code terminal: each command runs as a real process (ProcessRunner)
// and its output is mirrored into a Pseudoterminal named after the command. Closing that
// terminal kills the command; releasing it (the agent is done) leaves it open for the user.

import { StringDecoder } from "node:string_decoder";
import * as vscode from "vscode";
import type { CommandSink, CommandSpec, RunningCommand, TerminalPort } from "../core/ports";
import { ProcessRunner } from "../core/processRunner";

export class PseudoterminalRunner implements TerminalPort {
  private readonly runner = new ProcessRunner();

  start(spec: CommandSpec, sink: CommandSink): RunningCommand {
    const write = new vscode.EventEmitter<string>();
    const close = new vscode.EventEmitter<number | void>();
    const decoder = new StringDecoder("utf8");
    const pending: string[] = [];
    let opened = false;
    const show = (text: string) => {
      const crlf = text.replace(/\r?\n/g, "\r\n");
      if (opened) write.fire(crlf);
      else pending.push(crlf);
    };
    let running: RunningCommand | null = null;
    const pty: vscode.Pseudoterminal = {
      onDidWrite: write.event,
      onDidClose: close.event,
      open: () => {
        opened = true;
        for (const text of pending.splice(0)) write.fire(text);
      },
      close: () => running?.kill(),
    };
    const terminal = vscode.window.createTerminal({ name: `acpd: ${spec.label.slice(0, 40)}`, pty });
    terminal.show(true);
    show(`$ ${spec.label}\n`);
    running = this.runner.start(spec, {
      data: (chunk) => {
        sink.data(chunk);
        show(decoder.write(Buffer.from(chunk)));
      },
      exit: (status) => {
        show(decoder.end());
        show(`\n[${status.signal ? `killed by ${status.signal}` : `exit code ${status.exitCode}`}]\n`);
        sink.exit(status);
      },
    });
    return {
      kill: () => running?.kill(),
      release: () => {
        running?.release();
        write.dispose();
      },
    };
  }
}
