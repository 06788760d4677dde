// An independent ACP client on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0).
//
//   node client.mjs CONFIG.json
//
// CONFIG names the daemon argv (the logging tee in front of `acpd serve`), the repo (its cwd)
// and the workspace. The client serves fs/* from disk and the five terminal/* methods with real
// bash processes in their own process groups, answers permission requests "allow_once", and
// runs: initialize, session/new, a scripted prompt that reads a file and runs bash in our
// terminal (with a permission request), a second prompt cancelled mid-command, session/load
// with replay, session/list, session/delete, and a load of the deleted session. It prints one
// JSON summary on stdout; the pytest side asserts on it and schema-validates the wire log.
//
// SDK 2.4.0 removed `ClientSideConnection`: its stable v1 client API is `client()` +
// `connectWith(ndJsonStream(...), ...)`, used here.

import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, RequestError } from "@agentclientprotocol/sdk";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const events = [];
const updates = [];
const terminals = new Map();
let nextTerminal = 0;

function record(kind, value) {
  events.push({ kind, value });
}

// --- terminals: real processes, output kept up to outputByteLimit (the tail) -----------------

function startTerminal(params) {
  const id = `ts-term-${++nextTerminal}`;
  const env = { ...process.env };
  for (const v of params.env ?? []) env[v.name] = v.value;
  const child = spawn(params.command, params.args ?? [], {
    cwd: params.cwd ?? undefined,
    env,
    detached: true, // its own process group, so kill reaches the whole tree
    stdio: ["ignore", "pipe", "pipe"],
  });
  const term = {
    child,
    limit: params.outputByteLimit ?? null,
    data: Buffer.alloc(0),
    truncated: false,
    exit: null,
    released: false,
  };
  const take = (chunk) => {
    term.data = Buffer.concat([term.data, chunk]);
    if (term.limit !== null && term.data.length > term.limit) {
      let start = term.data.length - term.limit;
      while (start < term.data.length && (term.data[start] & 0xc0) === 0x80) start++;
      term.data = term.data.subarray(start);
      term.truncated = true;
    }
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  term.exited = new Promise((resolve) => {
    child.on("close", (code, signal) => {
      term.exit = { exitCode: code, signal: signal ?? null };
      resolve(term.exit);
    });
  });
  terminals.set(id, term);
  return id;
}

function terminal(method, params) {
  record(method, params.terminalId);
  const term = terminals.get(params.terminalId);
  if (!term || term.released) {
    throw RequestError.invalidParams({ terminalId: params.terminalId }, "unknown terminal");
  }
  return term;
}

function killGroup(term) {
  if (term.exit) return;
  try {
    process.kill(-term.child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

// --- the client app --------------------------------------------------------------------------

const app = client({ name: "acpd-e2e-ts" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params.update);
    record("update", params.update.sessionUpdate);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    record("session/request_permission", {
      title: params.toolCall.title,
      kinds: params.options.map((o) => o.kind),
    });
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  })
  .onRequest(methods.client.fs.readTextFile, ({ params }) => {
    record("fs/read_text_file", params.path);
    if (!existsSync(params.path)) throw RequestError.resourceNotFound(params.path);
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest(methods.client.fs.writeTextFile, ({ params }) => {
    record("fs/write_text_file", params.path);
    writeFileSync(params.path, params.content);
    return {};
  })
  .onRequest(methods.client.terminal.create, ({ params }) => {
    const terminalId = startTerminal(params);
    record("terminal/create", { terminalId, command: params.command, args: params.args });
    return { terminalId };
  })
  .onRequest(methods.client.terminal.output, ({ params }) => {
    const term = terminal("terminal/output", params);
    const answer = { output: term.data.toString("utf8"), truncated: term.truncated };
    if (term.exit) answer.exitStatus = term.exit;
    return answer;
  })
  .onRequest(methods.client.terminal.waitForExit, async ({ params }) => {
    const term = terminal("terminal/wait_for_exit", params);
    return await term.exited;
  })
  .onRequest(methods.client.terminal.kill, ({ params }) => {
    killGroup(terminal("terminal/kill", params));
    return {};
  })
  .onRequest(methods.client.terminal.release, ({ params }) => {
    const term = terminal("terminal/release", params);
    killGroup(term);
    term.released = true;
    return {};
  });

function waitForLines(path, count, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      const lines = existsSync(path)
        ? readFileSync(path, "utf8").split(/\s+/).filter(Boolean)
        : [];
      if (lines.length >= count) return resolve(lines.map(Number));
      if (Date.now() > deadline) return reject(new Error(`${path}: no ${count} lines`));
      setTimeout(poll, 50);
    };
    poll();
  });
}

const daemon = spawn(config.argv[0], config.argv.slice(1), {
  cwd: config.repo,
  env: { ...process.env, ...config.env },
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = ndJsonStream(Writable.toWeb(daemon.stdin), Readable.toWeb(daemon.stdout));
const summary = {};

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      clientInfo: { name: "acpd-e2e-ts", version: "0.0.0" },
    });
    summary.initialize = {
      protocolVersion: init.protocolVersion,
      loadSession: init.agentCapabilities?.loadSession ?? false,
      sessionCapabilities: Object.keys(init.agentCapabilities?.sessionCapabilities ?? {}).sort(),
    };

    const created = await ctx.request(methods.agent.session.new, {
      cwd: config.workspace,
      mcpServers: [],
    });
    const sessionId = created.sessionId;
    summary.sessionId = sessionId;
    summary.modes = created.modes?.availableModes?.map((m) => m.id) ?? [];

    // A scripted prompt: read a file through fs/*, then bash in our terminal (asks first).
    const first = events.length;
    const firstUpdate = updates.length;
    const prompt = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "read hello.txt and run bash" }],
    });
    const turn = updates.slice(firstUpdate);
    const calls = turn.filter((u) => u.sessionUpdate === "tool_call");
    const final = (id) =>
      turn.filter((u) => u.toolCallId === id && ["completed", "failed"].includes(u.status));
    const textOf = (u) => (u.content ?? []).filter((c) => c.type === "content").map((c) => c.content.text).join("");
    summary.prompt = {
      stopReason: prompt.stopReason,
      toolCalls: calls.map((c) => ({
        title: c.title,
        kind: c.kind,
        finals: final(c.toolCallId).map((u) => ({
          status: u.status,
          text: textOf(u),
          terminals: (u.content ?? []).filter((x) => x.type === "terminal").map((x) => x.terminalId),
        })),
      })),
      permissions: events.slice(first).filter((e) => e.kind === "session/request_permission").map((e) => e.value),
      reads: events.slice(first).filter((e) => e.kind === "fs/read_text_file").map((e) => e.value),
      terminalCalls: events.slice(first).filter((e) => e.kind.startsWith("terminal/")).map((e) => e.kind),
      lastEvents: events.slice(first).slice(-3).map((e) => e.kind),
      agentText: turn.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join(""),
    };

    // Cancel mid-command: a process tree that records its pids, cancelled while it sleeps.
    const beforeCancel = events.length;
    const cancelUpdate = updates.length;
    const pending = ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "start the long job" }],
    });
    const pids = await waitForLines(config.pidsFile, 4, 15000);
    await ctx.notify(methods.agent.session.cancel, { sessionId });
    const cancelled = await pending;
    const cancelTurn = updates.slice(cancelUpdate);
    const longCall = cancelTurn.find((u) => u.sessionUpdate === "tool_call");
    summary.cancel = {
      stopReason: cancelled.stopReason,
      pids,
      finalStatus: cancelTurn.filter((u) => u.toolCallId === longCall?.toolCallId && ["completed", "failed"].includes(u.status)).map((u) => u.status),
      terminalCalls: events.slice(beforeCancel).filter((e) => e.kind.startsWith("terminal/")).map((e) => e.kind),
    };

    // Load with replay: updates between the request and its response.
    const beforeLoad = updates.length;
    await ctx.request(methods.agent.session.load, { sessionId, cwd: config.workspace, mcpServers: [] });
    const replay = updates.slice(beforeLoad);
    summary.load = {
      kinds: replay.map((u) => u.sessionUpdate),
      toolCallTitles: replay.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.title),
      terminalContent: replay.flatMap((u) => (u.content && Array.isArray(u.content) ? u.content : [])).filter((c) => c.type === "terminal").length,
      firstText: replay[0]?.content?.text ?? null,
    };

    const listed = await ctx.request(methods.agent.session.list, {});
    summary.list = { ids: listed.sessions.map((s) => s.sessionId), titles: listed.sessions.map((s) => s.title ?? null) };

    summary.delete = await ctx.request(methods.agent.session.delete, { sessionId });
    try {
      await ctx.request(methods.agent.session.load, { sessionId, cwd: config.workspace, mcpServers: [] });
      summary.loadAfterDelete = { ok: true };
    } catch (err) {
      summary.loadAfterDelete = { code: err.code ?? null, message: String(err.message ?? err) };
    }
    const after = await ctx.request(methods.agent.session.list, {});
    summary.listAfterDelete = after.sessions.map((s) => s.sessionId);
  });
} catch (err) {
  summary.error = String(err?.stack ?? err);
} finally {
  for (const term of terminals.values()) killGroup(term);
  daemon.stdin.end();
  summary.exitCode = await new Promise((resolve) => {
    if (daemon.exitCode !== null) return resolve(daemon.exitCode);
    const timer = setTimeout(() => daemon.kill("SIGKILL"), 5000);
    daemon.on("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
  summary.events = events.map((e) => e.kind);
  process.stdout.write(JSON.stringify(summary) + "\n");
}
