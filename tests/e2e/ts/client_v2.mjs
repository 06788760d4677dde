// An independent ACP v2 (draft) client on the official TypeScript SDK's experimental v2 API
// (@agentclientprotocol/sdk 2.4.0, "@agentclientprotocol/sdk/experimental/v2").
//
//   node client_v2.mjs CONFIG.json
//
// The SDK parses every message from acpd with its generated v2 schemas before a handler
// sees it. The client registers no fs or terminal handler (v2 has none): acpd must read,
// write and run itself. It answers permission requests "allow_once", and runs: initialize
// (protocolVersion 2), session/new, a scripted prompt (read, write, bash with a permission),
// waits for the idle state update, session/resume with replay from the start, session/list,
// session/close. It prints one JSON summary on stdout.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk/experimental/v2";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const updates = [];
const permissions = [];
const others = [];
let changed = () => {};

function waitFor(predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const check = () => {
      const found = predicate();
      if (found) return resolve(found);
      if (Date.now() > deadline) return reject(new Error("timed out waiting for an update"));
      changed = check;
      setTimeout(check, 50);
    };
    check();
  });
}

const app = client({ name: "acpd-e2e-ts-v2" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push({ sessionId: params.sessionId, ...params.update });
    changed();
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    permissions.push({ title: params.title, subject: params.subject ?? null });
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  })
  .onRequest("*", ({ method }) => {
    others.push(method);
    throw new Error(`no ${method} here`);
  });

const daemon = spawn(config.argv[0], config.argv.slice(1), {
  cwd: config.repo,
  env: { ...process.env, ...config.env },
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = ndJsonStream(Writable.toWeb(daemon.stdin), Readable.toWeb(daemon.stdout));
const summary = {};
const idleCount = (sessionId) =>
  updates.filter((u) => u.sessionId === sessionId && u.sessionUpdate === "state_update" && u.state === "idle").length;

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(methods.agent.initialize, {
      protocolVersion: 2,
      info: { name: "acpd-e2e-ts-v2", version: "0.0.0" },
      capabilities: {},
    });
    summary.initialize = {
      protocolVersion: init.protocolVersion,
      agent: init.info.name,
      session: Object.keys(init.capabilities?.session ?? {}).sort(),
    };

    const created = await ctx.request(methods.agent.session.new, { cwd: config.workspace });
    const sessionId = created.sessionId;
    summary.configIds = (created.configOptions ?? []).map((o) => o.configId);

    const accepted = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "read, write and run" }],
    });
    await waitFor(() => idleCount(sessionId) >= 1, 30000);
    const idle = updates.filter((u) => u.sessionUpdate === "state_update" && u.state === "idle").at(-1);
    const cards = updates.filter((u) => u.sessionUpdate === "tool_call_update");
    summary.prompt = {
      messageId: accepted.messageId,
      echoed: updates.filter((u) => u.sessionUpdate === "user_message").map((u) => u.messageId),
      stopReason: idle.stopReason,
      states: updates.filter((u) => u.sessionUpdate === "state_update").map((u) => u.state),
      toolCalls: [...new Set(cards.map((c) => c.toolCallId))].length,
      completed: cards.filter((c) => c.status === "completed").length,
      diffs: cards.flatMap((c) => c.content ?? []).filter((x) => x.type === "diff").map((d) => d.changes.map((ch) => ch.operation)),
      kinds: [...new Set(updates.map((u) => u.sessionUpdate))].sort(),
      permissions,
      text: updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join(""),
    };

    const before = updates.length;
    await ctx.request(methods.agent.session.resume, {
      sessionId, cwd: config.workspace, replayFrom: { type: "start" },
    });
    // The SDK may run notification handlers after the response resolves (the wire order,
    // state before answer, is checked on the log by the Python side).
    await waitFor(() => updates.slice(before).some((u) => u.sessionUpdate === "state_update"), 10000);
    const replay = updates.slice(before);
    summary.resume = {
      toolCalls: [...new Set(replay.filter((u) => u.sessionUpdate === "tool_call_update").map((u) => u.toolCallId))].length,
      last: replay.at(-1)?.sessionUpdate ?? null,
      lastState: replay.filter((u) => u.sessionUpdate === "state_update").at(-1)?.state ?? null,
    };
    const listed = await ctx.request(methods.agent.session.list, {});
    summary.listed = listed.sessions.map((s) => s.sessionId).includes(sessionId);
    summary.close = await ctx.request(methods.agent.session.close, { sessionId });
  });
} catch (err) {
  summary.error = String(err?.stack ?? err);
} finally {
  summary.otherRequests = others;
  daemon.stdin.end();
  summary.exitCode = await new Promise((resolve) => {
    if (daemon.exitCode !== null) return resolve(daemon.exitCode);
    const timer = setTimeout(() => daemon.kill("SIGKILL"), 5000);
    daemon.on("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
  process.stdout.write(JSON.stringify(summary) + "\n");
}
