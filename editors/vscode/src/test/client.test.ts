// The ACP client logic against the real acpd: a scripted session reads a file through the fs
// port (the unsaved text of an "open document" wins over the disk), writes one, runs a command
// through the terminal port, is asked for permissions (one allowed, one rejected), and the tool
// status model ends with the right nodes.

import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { FsPort, TerminalPort } from "../core/ports";
import { AcpdClient } from "../core/client";
import { ProcessRunner } from "../core/processRunner";
import { detail, durationMs } from "../core/toolStatus";
import { RecordingPermissions, scriptedClient, tempSetup } from "../testing/daemon";

/** Open documents over the disk: reads prefer unsaved text; writes go to disk and the document. */
class DocumentFs implements FsPort {
  reads: string[] = [];
  writes: string[] = [];
  constructor(readonly open: Map<string, string>) {}
  async readText(path: string): Promise<string> {
    this.reads.push(path);
    return this.open.get(path) ?? readFileSync(path, "utf8");
  }
  async writeText(path: string, content: string): Promise<void> {
    this.writes.push(path);
    writeFileSync(path, content);
    if (this.open.has(path)) this.open.set(path, content);
  }
}

class RecordingRunner implements TerminalPort {
  started: string[] = [];
  calls: string[] = [];
  private readonly runner = new ProcessRunner();
  start(...args: Parameters<TerminalPort["start"]>) {
    this.started.push(args[0].label);
    const running = this.runner.start(...args);
    return {
      kill: () => { this.calls.push("kill"); running.kill(); },
      release: () => { this.calls.push("release"); running.release(); },
    };
  }
}

async function until(what: () => boolean, ms = 30000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("a scripted session through the ports", async () => {
  const setup = tempSetup();
  const hello = join(setup.workspace, "hello.txt");
  writeFileSync(hello, "on disk\n");
  const fs = new DocumentFs(new Map([[hello, "unsaved text\n"]]));
  const terminals = new RecordingRunner();
  const permissions = new RecordingPermissions(["allow_once", "allow_once", "reject_once"]);
  const client = scriptedClient(
    setup,
    [
      { text: "Reading.", tool_calls: [{ name: "read", arguments: { path: "hello.txt" } }] },
      { tool_calls: [{ name: "write", arguments: { path: "out.txt", content: "a\nb" } }] },
      { tool_calls: [{ name: "bash", arguments: { command: "echo vscode-bash; printf 'h\\xc3\\xa9\\n'; python3 -c 'print(7)'" } }] },
      { tool_calls: [{ name: "bash", arguments: { command: "python3 -c \"open('rejected.txt', 'w')\"" } }] },
      { text: "done" },
    ],
    { fs, terminals, permissions },
  );
  const text: string[] = [];
  client.onUpdate((u) => {
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") text.push(u.content.text);
  });
  try {
    const init = await client.start();
    assert.equal(init.protocolVersion, 1);
    const session = await client.newSession();
    assert.ok(session.sessionId);
    const done = await client.prompt("read, write and run");
    assert.equal(done.stopReason, "end_turn");
  } catch (err) {
    throw new Error(`${err}\n--- acpd stderr ---\n${client.stderr}`);
  } finally {
    await client.dispose();
  }

  // fs: the read came through the port and saw the unsaved text; the write is byte-exact.
  assert.deepEqual(fs.reads, [hello]);
  assert.deepEqual(fs.writes, [join(setup.workspace, "out.txt")]);
  assert.equal(readFileSync(join(setup.workspace, "out.txt"), "utf8"), "a\nb");
  // terminal: the allowed command ran through the port; the rejected one never started.
  assert.equal(terminals.started.length, 1, JSON.stringify(terminals.started));
  assert.match(terminals.started[0]!, /echo vscode-bash/);
  assert.equal(existsSync(join(setup.workspace, "rejected.txt")), false);
  // permissions: the write showed its diff, the commands showed themselves.
  const [write, bash, rejected] = permissions.asks;
  assert.equal(permissions.asks.length, 3);
  assert.match(write!.detail, /\+b/);
  assert.match(bash!.detail, /echo vscode-bash/);
  assert.match(rejected!.detail, /open\('rejected\.txt'/);

  // the tool status model: one node per call, in order, with final statuses and durations.
  const nodes = client.tools.order.map((id) => client.tools.nodes[id]!);
  assert.deepEqual(nodes.map((n) => [n.kind, n.status]), [
    ["read", "completed"], ["edit", "completed"], ["execute", "completed"], ["execute", "failed"],
  ]);
  for (const node of nodes) {
    assert.notEqual(node.endedAt, null);
    assert.ok(durationMs(node, Number.MAX_SAFE_INTEGER) >= 0);
  }
  assert.match(nodes[0]!.text, /unsaved text/);
  assert.equal(nodes[1]!.diffs[0]!.newText, "a\nb");
  assert.match(detail(nodes[1]!), /\+b/);
  assert.match(nodes[2]!.text, /vscode-bash\nhé\n7\n/);
  assert.match(detail(nodes[3]!), /^reason:\n.+/m);
  assert.equal(text.join(""), "Reading.done");
});

test("cancel kills the command in its terminal; the call ends failed and the terminal released", async () => {
  const setup = tempSetup();
  const terminals = new RecordingRunner();
  const client = scriptedClient(
    setup,
    [{ text: "Waiting.", tool_calls: [{ name: "bash", arguments: { command: "echo started; sleep 60" } }] }],
    { fs: new DocumentFs(new Map()), terminals, permissions: new RecordingPermissions([]) },
  );
  let outcome;
  try {
    await client.start();
    await client.newSession();
    const turn = client.prompt("wait");
    await until(() => Object.values(client.tools.nodes).some((n) => n.status === "in_progress") && terminals.started.length === 1);
    await client.cancel();
    outcome = await turn;
  } catch (err) {
    throw new Error(`${err}\n--- acpd stderr ---\n${client.stderr}`);
  } finally {
    await client.dispose();
  }
  assert.equal(outcome.stopReason, "cancelled");
  assert.ok(terminals.calls.includes("kill") || terminals.calls.includes("release"), JSON.stringify(terminals.calls));
  assert.equal(terminals.calls.filter((c) => c === "release").length, 1);
  const [node] = client.tools.order.map((id) => client.tools.nodes[id]!);
  assert.equal(node!.status, "failed");
  assert.notEqual(node!.endedAt, null);
});

test("a daemon that cannot start, or dies mid-turn, is an error and not a hang", async () => {
  const setup = tempSetup();
  const ports = { fs: new DocumentFs(new Map()), terminals: new RecordingRunner(), permissions: new RecordingPermissions([]) };
  const missing = new AcpdClient({ command: join(setup.home, "no-such-acpd"), args: [], cwd: setup.workspace, ...ports });
  await assert.rejects(missing.start(), /cannot start .*no-such-acpd/);

  const client = scriptedClient(setup, [{ text: "slow", delay: 60 }], ports);
  await client.start();
  await client.newSession();
  const turn = client.prompt("wait");
  const pid = (client as unknown as { daemon: { pid: number } }).daemon.pid;
  process.kill(pid, "SIGKILL");
  await assert.rejects(turn);
  assert.equal(await client.exited, "SIGKILL");
  await client.dispose();
});

test("modes and config options: read-only set through session/set_config_option refuses a write", async () => {
  const setup = tempSetup();
  const fs = new DocumentFs(new Map());
  const permissions = new RecordingPermissions(["allow_once"]);
  const client = scriptedClient(
    setup,
    [{ tool_calls: [{ name: "write", arguments: { path: "ro.txt", content: "no" } }] }, { text: "ok" }],
    { fs, terminals: new RecordingRunner(), permissions },
  );
  try {
    await client.start();
    const session = await client.newSession();
    const ids = (session.configOptions ?? []).map((o) => o.id);
    assert.deepEqual(ids.slice(0, 2), ["mode", "model"]);
    assert.ok(ids.includes("confirm_commands"), JSON.stringify(ids));
    assert.deepEqual(session.modes?.availableModes.map((m) => m.id), ["read-only", "ask", "auto"]);
    const changed = await client.setConfigOption("mode", "read-only");
    const mode = changed.configOptions.find((o) => o.id === "mode");
    assert.equal(mode?.currentValue, "read-only");
    assert.equal(client.configOptions.find((o) => o.id === "mode")?.currentValue, "read-only");
    await assert.rejects(client.setConfigOption("mode", "no-such-mode"));
    assert.equal((await client.prompt("write")).stopReason, "end_turn");
  } catch (err) {
    throw new Error(`${err}\n--- acpd stderr ---\n${client.stderr}`);
  } finally {
    await client.dispose();
  }
  assert.deepEqual(fs.writes, []);
  assert.equal(permissions.asks.length, 0);
  const [node] = client.tools.order.map((id) => client.tools.nodes[id]!);
  assert.equal(node!.status, "failed");
  assert.match(detail(node!), /reason:\n.*read-only/is);
});
