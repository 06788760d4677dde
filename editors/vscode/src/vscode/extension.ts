// The extension: settings → `acpd serve` (AcpdClient from src/core), wired to VS Code through
// the adapters here: documents (fs), Pseudoterminals (terminal), quick picks (permissions), the
// tool status tree and the chat view. One daemon and one session per window, started lazily.

import * as vscode from "vscode";
import { AcpdClient } from "../core/client";
import { detail } from "../core/toolStatus";
import { ChatView } from "./chatView";
import { DocumentFs } from "./fsPort";
import { QuickPickPermissions } from "./permissionPort";
import { PseudoterminalRunner } from "./terminalPort";
import { ToolTree } from "./toolTree";

let client: AcpdClient | null = null;
let starting: Promise<AcpdClient> | null = null;

export function activate(context: vscode.ExtensionContext): void {
  const chat = new ChatView((text) => void prompt(text));
  const tree = new ToolTree(() => client?.tools ?? { order: [], nodes: {} });
  context.subscriptions.push(
    tree,
    vscode.window.registerTreeDataProvider("acpd.tools", tree),
    vscode.window.registerWebviewViewProvider("acpd.chat", chat),
    vscode.commands.registerCommand("acpd.prompt", async () => {
      const text = await vscode.window.showInputBox({ prompt: "Ask acpd" });
      if (text) await prompt(text);
    }),
    vscode.commands.registerCommand("acpd.cancel", () => client?.cancel()),
    vscode.commands.registerCommand("acpd.configure", async () => {
      const running = await ensureStarted();
      await pickConfigOption(running, (text) => chat.append("info", text));
    }),
    vscode.commands.registerCommand("acpd.restart", async () => {
      await stop();
      await ensureStarted();
    }),
    vscode.commands.registerCommand("acpd.showTool", async (id: string) => {
      const node = client?.tools.nodes[id];
      if (!node) return;
      const terminal = node.terminalIds.map((t) => client?.terminalText(t)).filter((t) => t);
      const content = [detail(node), ...terminal].join("\n\n");
      const doc = await vscode.workspace.openTextDocument({ content, language: node.diffs.length ? "diff" : "plaintext" });
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    { dispose: () => void stop() },
  );

  async function ensureStarted(): Promise<AcpdClient> {
    if (client) return client;
    starting ??= start().finally(() => (starting = null));
    return starting;
  }

  async function start(): Promise<AcpdClient> {
    const settings = vscode.workspace.getConfiguration("acpd");
    const args = [...settings.get<string[]>("args", ["serve"])];
    const model = settings.get<string>("model", "");
    if (model) args.push("--model", model);
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
    const fresh = new AcpdClient({
      command: settings.get<string>("command", "acpd"), args, cwd,
      fs: new DocumentFs(), terminals: new PseudoterminalRunner(), permissions: new QuickPickPermissions(),
    });
    fresh.onUpdate((u) => {
      if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") chat.append("agent", u.content.text);
      else if (u.sessionUpdate === "agent_thought_chunk" && u.content.type === "text") chat.append("thought", u.content.text);
      else if (u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") tree.refresh();
    });
    try {
      await fresh.start();
      await fresh.newSession(cwd);
      const mode = settings.get<string>("mode", "");
      if (mode) await fresh.setMode(mode);
    } catch (err) {
      await fresh.dispose();
      const why = fresh.stderr.trim().split("\n").slice(-3).join(" ");
      throw new Error(`acpd did not start: ${(err as Error).message}${why ? ` (${why})` : ""}`);
    }
    client = fresh;
    void fresh.exited.then((how) => {
      if (client !== fresh) return;
      client = null;
      chat.append("info", `acpd exited (${how}); the next prompt starts it again`);
    });
    return fresh;
  }

  async function prompt(text: string): Promise<void> {
    chat.append("user", text);
    try {
      const running = await ensureStarted();
      const result = await running.prompt(text);
      if (result.stopReason !== "end_turn") chat.append("info", `(${result.stopReason})`);
    } catch (err) {
      chat.append("info", (err as Error).message);
      void vscode.window.showErrorMessage((err as Error).message);
    }
  }
}

/** Mode, model and the session's switches, from the config options acpd sent (select type). */
async function pickConfigOption(running: AcpdClient, say: (text: string) => void): Promise<void> {
  const options = running.configOptions.filter((o) => o.type === "select");
  const option = await vscode.window.showQuickPick(
    options.map((o) => ({ label: o.name, description: String(o.currentValue), option: o })),
    { title: "acpd: session settings" },
  );
  if (!option) return;
  const choices = option.option.options.flatMap((c) => ("options" in c ? c.options : [c]));
  const value = await vscode.window.showQuickPick(
    choices.map((c) => ({ label: c.name, description: c.value === option.option.currentValue ? "current" : c.description ?? "", value: c.value })),
    { title: option.option.name },
  );
  if (!value) return;
  await running.setConfigOption(option.option.id, value.value);
  say(`${option.option.name}: ${value.label}`);
}

async function stop(): Promise<void> {
  const old = client;
  client = null;
  await old?.dispose();
}

export function deactivate(): Promise<void> {
  return stop();
}
