// The ACP client logic of the extension, no VS Code: spawns `acpd serve`, speaks ACP v1 through
// the official SDK, and answers the agent's requests (the SDK's client-side methods) through
// injected ports: files (FsPort), commands (TerminalPort), permission prompts (PermissionPort).
//
// Rules: fs/read_text_file answers what the editor shows (the port decides; unsaved text counts),
// applying `line` (1-based) and `limit` here; fs/write_text_file writes exactly the content.
// terminal/* keeps output per TerminalBuffer (outputByteLimit tail at a char boundary); release
// kills a command still running and forgets the id. A dismissed permission prompt answers
// `cancelled`. Every session/update also feeds the tool status model (toolStatus.ts).

import { spawn, type ChildProcess } from "node:child_process";
import { Readable, Writable } from "node:stream";
import type { FsPort, PermissionPort, RunningCommand, TerminalPort } from "./ports";
import { loadSdk, type Acp, type AcpModule } from "./sdk";
import { TerminalBuffer } from "./terminalBuffer";
import { emptyToolState, reduceToolState, unifiedDiff, type ToolState } from "./toolStatus";

export interface ClientOptions {
  command: string;
  args: string[];
  cwd: string;
  env?: Record<string, string>;
  fs: FsPort;
  terminals: TerminalPort;
  permissions: PermissionPort;
  clock?: () => number;
}

interface Terminal {
  buffer: TerminalBuffer;
  running: RunningCommand;
}

type Listener = (update: Acp.SessionUpdate) => void;

export class AcpdClient {
  tools: ToolState = emptyToolState;
  sessionId: string | null = null;
  session: Acp.NewSessionResponse | null = null;
  /** The session's config options, kept current from replies and `config_option_update`. */
  configOptions: Acp.SessionConfigOption[] = [];
  stderr = "";
  /** Resolves with the daemon's exit code (or signal name) once it has exited. */
  exited: Promise<number | string | null> = new Promise(() => {});
  private daemon: ChildProcess | null = null;
  private connection: Acp.ClientConnection | null = null;
  private sdk: AcpModule | null = null;
  private readonly terminals = new Map<string, Terminal>();
  private nextTerminal = 0;
  private readonly listeners = new Set<Listener>();
  private readonly clock: () => number;

  constructor(private readonly options: ClientOptions) {
    this.clock = options.clock ?? Date.now;
  }

  onUpdate(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Spawns the daemon and initializes with fs and terminal capabilities. */
  async start(): Promise<Acp.InitializeResponse> {
    const sdk = (this.sdk = await loadSdk());
    const daemon = spawn(this.options.command, this.options.args, {
      cwd: this.options.cwd,
      env: { ...process.env, ...this.options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.daemon = daemon;
    this.exited = new Promise((resolve) => {
      daemon.once("exit", (code, signal) => {
        // a dead daemon fails every pending request at once instead of leaving them hanging
        this.connection?.close(new Error(`acpd exited (${signal ?? `code ${code}`})`));
        resolve(signal ?? code);
      });
    });
    const spawned = new Promise<void>((resolve, reject) => {
      daemon.once("spawn", resolve);
      daemon.once("error", (err) => reject(new Error(`cannot start ${this.options.command}: ${err.message}`)));
    });
    // writing to a daemon that just died is an EPIPE on stdin: the exit handler reports it
    daemon.stdin!.on("error", () => undefined);
    daemon.stderr!.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-64 * 1024);
    });
    await spawned;
    const stream = sdk.ndJsonStream(
      Writable.toWeb(daemon.stdin!) as WritableStream<Uint8Array>,
      Readable.toWeb(daemon.stdout!) as ReadableStream<Uint8Array>,
    );
    this.connection = this.app(sdk).connect(stream);
    return this.agent.request(sdk.methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      clientInfo: { name: "acpd-vscode", version: "0.1.0" },
    });
  }

  async newSession(cwd: string = this.options.cwd): Promise<Acp.NewSessionResponse> {
    const session = await this.agent.request("session/new", { cwd, mcpServers: [] });
    this.session = session;
    this.sessionId = session.sessionId;
    this.configOptions = session.configOptions ?? [];
    return session;
  }

  async prompt(text: string): Promise<Acp.PromptResponse> {
    return this.agent.request("session/prompt", {
      sessionId: this.requireSession(),
      prompt: [{ type: "text", text }],
    });
  }

  async cancel(): Promise<void> {
    await this.agent.notify("session/cancel", { sessionId: this.requireSession() });
  }

  async setMode(modeId: string): Promise<void> {
    await this.agent.request("session/set_mode", { sessionId: this.requireSession(), modeId });
  }

  async setConfigOption(configId: string, value: string): Promise<Acp.SetSessionConfigOptionResponse> {
    const changed = await this.agent.request("session/set_config_option", {
      sessionId: this.requireSession(), configId, value,
    });
    this.configOptions = changed.configOptions;
    return changed;
  }

  /** Ends the connection, every command still running, and the daemon. */
  async dispose(): Promise<void> {
    for (const id of [...this.terminals.keys()]) this.releaseTerminal({ sessionId: "", terminalId: id });
    this.connection?.close();
    const daemon = this.daemon;
    if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
      daemon.stdin?.end();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => daemon.kill("SIGKILL"), 5000);
        daemon.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  // --- the client side of ACP (what the agent calls) -----------------------------------------

  sessionUpdate(params: Acp.SessionNotification): void {
    if (params.update.sessionUpdate === "config_option_update") {
      this.configOptions = params.update.configOptions;
    }
    this.tools = reduceToolState(this.tools, params.update, this.clock());
    for (const listener of this.listeners) listener(params.update);
  }

  async requestPermission(params: Acp.RequestPermissionRequest): Promise<Acp.RequestPermissionResponse> {
    const call = params.toolCall;
    const chosen = await this.options.permissions.choose({
      toolCallId: call.toolCallId,
      title: call.title ?? call.toolCallId,
      kind: call.kind ?? null,
      detail: permissionDetail(call),
      options: params.options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind })),
    });
    if (chosen === null || !params.options.some((o) => o.optionId === chosen)) {
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: chosen } };
  }

  async readTextFile(params: Acp.ReadTextFileRequest): Promise<Acp.ReadTextFileResponse> {
    let text: string;
    try {
      text = await this.options.fs.readText(params.path);
    } catch (err) {
      throw this.requireSdk().RequestError.resourceNotFound(params.path);
    }
    return { content: sliceLines(text, params.line ?? null, params.limit ?? null) };
  }

  async writeTextFile(params: Acp.WriteTextFileRequest): Promise<Acp.WriteTextFileResponse> {
    await this.options.fs.writeText(params.path, params.content);
    return {};
  }

  createTerminal(params: Acp.CreateTerminalRequest): Acp.CreateTerminalResponse {
    const terminalId = `vscode-term-${++this.nextTerminal}`;
    const buffer = new TerminalBuffer(params.outputByteLimit ?? null);
    const env: Record<string, string> = {};
    for (const variable of params.env ?? []) env[variable.name] = variable.value;
    const running = this.options.terminals.start(
      {
        command: params.command, args: params.args ?? [], cwd: params.cwd ?? null, env,
        label: [params.command, ...(params.args ?? [])].join(" "),
      },
      { data: (chunk) => buffer.append(chunk), exit: (status) => buffer.finish(status) },
    );
    this.terminals.set(terminalId, { buffer, running });
    return { terminalId };
  }

  terminalOutput(params: Acp.TerminalOutputRequest): Acp.TerminalOutputResponse {
    const { buffer } = this.terminal(params.terminalId);
    return { output: buffer.output, truncated: buffer.truncated, exitStatus: buffer.exit ?? null };
  }

  async waitForTerminalExit(params: Acp.WaitForTerminalExitRequest): Promise<Acp.WaitForTerminalExitResponse> {
    return this.terminal(params.terminalId).buffer.waitForExit();
  }

  killTerminal(params: Acp.KillTerminalRequest): Acp.KillTerminalResponse {
    this.terminal(params.terminalId).running.kill();
    return {};
  }

  releaseTerminal(params: Acp.ReleaseTerminalRequest): Acp.ReleaseTerminalResponse {
    const term = this.terminal(params.terminalId);
    term.running.release();
    term.buffer.released = true;
    this.terminals.delete(params.terminalId);
    return {};
  }

  /** The output a terminal keeps now (for a tool node's click), or null once released. */
  terminalText(terminalId: string): string | null {
    return this.terminals.get(terminalId)?.buffer.output ?? null;
  }

  // --- plumbing ------------------------------------------------------------------------------

  private app(sdk: AcpModule): Acp.ClientApp {
    const m = sdk.methods.client;
    return sdk
      .client({ name: "acpd-vscode" })
      .onNotification(m.session.update, ({ params }) => this.sessionUpdate(params))
      .onRequest(m.session.requestPermission, ({ params }) => this.requestPermission(params))
      .onRequest(m.fs.readTextFile, ({ params }) => this.readTextFile(params))
      .onRequest(m.fs.writeTextFile, ({ params }) => this.writeTextFile(params))
      .onRequest(m.terminal.create, ({ params }) => this.createTerminal(params))
      .onRequest(m.terminal.output, ({ params }) => this.terminalOutput(params))
      .onRequest(m.terminal.waitForExit, ({ params }) => this.waitForTerminalExit(params))
      .onRequest(m.terminal.kill, ({ params }) => this.killTerminal(params))
      .onRequest(m.terminal.release, ({ params }) => this.releaseTerminal(params));
  }

  private get agent(): Acp.ClientContext {
    if (!this.connection) throw new Error("acpd is not started");
    return this.connection.agent;
  }

  private requireSdk(): AcpModule {
    if (!this.sdk) throw new Error("acpd is not started");
    return this.sdk;
  }

  private requireSession(): string {
    if (!this.sessionId) throw new Error("no acpd session yet");
    return this.sessionId;
  }

  private terminal(terminalId: string): Terminal {
    const term = this.terminals.get(terminalId);
    if (!term) throw this.requireSdk().RequestError.invalidParams({ terminalId }, "unknown terminal");
    return term;
  }
}

/** Lines `line`.. (1-based) of `text`, at most `limit` of them; line endings kept. */
export function sliceLines(text: string, line: number | null, limit: number | null): string {
  if (line === null && limit === null) return text;
  const lines = text.split(/(?<=\n)/);
  const start = Math.max(0, (line ?? 1) - 1);
  const end = limit === null ? lines.length : start + Math.max(0, limit);
  return lines.slice(start, end).join("");
}

/** What a permission prompt shows: each diff, any text content, the command (raw input). */
export function permissionDetail(call: Acp.ToolCallUpdate): string {
  const parts: string[] = [];
  for (const item of call.content ?? []) {
    if (item.type === "diff") {
      parts.push(unifiedDiff({ path: item.path, oldText: item.oldText ?? null, newText: item.newText }));
    } else if (item.type === "content" && item.content.type === "text") {
      parts.push(item.content.text);
    }
  }
  const raw = call.rawInput as Record<string, unknown> | null | undefined;
  if (raw && typeof raw === "object" && typeof raw["command"] === "string") {
    parts.push(`$ ${raw["command"]}`);
  }
  return parts.join("\n\n") || (call.title ?? "");
}
