// The ports the ACP client logic talks through. The VS Code adapters (src/vscode/) implement
// them over open documents, Pseudoterminals and quick picks; the tests implement them over
// plain files and recorded answers. Nothing here imports `vscode`.

import type { ExitStatus } from "./terminalBuffer";

/** Files as the editor sees them: an open document's unsaved text counts. */
export interface FsPort {
  /** The whole text; `line` (1-based) and `limit` are applied by the caller. Throws if absent. */
  readText(path: string): Promise<string>;
  /** Writes exactly `content` (no added final newline). */
  writeText(path: string, content: string): Promise<void>;
}

export interface CommandSpec {
  command: string;
  args: string[];
  cwd: string | null;
  env: Record<string, string>;
  /** A short label for the visible terminal. */
  label: string;
}

export interface CommandSink {
  data(chunk: Uint8Array): void;
  exit(status: ExitStatus): void;
}

export interface RunningCommand {
  /** Ends the command (and what it started); its exit is still reported through the sink. */
  kill(): void;
  /** The terminal is no longer needed by the agent (the visible one may stay for the user). */
  release(): void;
}

export interface TerminalPort {
  start(spec: CommandSpec, sink: CommandSink): RunningCommand;
}

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: string;
}

export interface PermissionAsk {
  toolCallId: string;
  title: string;
  kind: string | null;
  /** What the call would do, as text: the command, or the diff of each file. */
  detail: string;
  options: PermissionOption[];
}

export interface PermissionPort {
  /** The chosen optionId, or null when the user dismissed the prompt (cancelled). */
  choose(ask: PermissionAsk): Promise<string | null>;
}
