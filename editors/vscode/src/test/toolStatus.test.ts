import assert from "node:assert/strict";
import { test } from "node:test";
import { detail, durationMs, emptyToolState, formatDuration, label, reduceToolState } from "../core/toolStatus";

const text = (t: string) => ({ type: "content", content: { type: "text", text: t } });

test("a call runs from first sight to its first final status", () => {
  let s = emptyToolState;
  s = reduceToolState(s, { sessionUpdate: "tool_call", toolCallId: "a", title: "Run", kind: "execute", status: "pending" }, 100);
  s = reduceToolState(s, { sessionUpdate: "tool_call_update", toolCallId: "a", status: "in_progress" }, 150);
  const running = s.nodes["a"]!;
  assert.equal(durationMs(running, 400), 300);
  assert.match(label(running, 400), /^▶ Run \(300 ms\)$/);
  s = reduceToolState(s, { sessionUpdate: "tool_call_update", toolCallId: "a", status: "completed", content: [text("out")] }, 1600);
  s = reduceToolState(s, { sessionUpdate: "tool_call_update", toolCallId: "a", status: "completed", content: [text("out2")] }, 9000);
  const done = s.nodes["a"]!;
  assert.equal(durationMs(done, 99999), 1500);
  assert.equal(done.text, "out2");
  assert.match(label(done, 0), /^✓ Run \(1\.5 s\)$/);
  assert.deepEqual(s.order, ["a"]);
});

test("an update for an unknown id (a replay mid-call) makes a node; other updates change nothing", () => {
  let s = reduceToolState(emptyToolState, { sessionUpdate: "agent_message_chunk" }, 1);
  assert.equal(s, emptyToolState);
  s = reduceToolState(s, { sessionUpdate: "tool_call_update", toolCallId: 7 }, 1);
  assert.equal(s, emptyToolState);
  s = reduceToolState(s, { sessionUpdate: "tool_call_update", toolCallId: "b", status: "bogus" }, 5);
  assert.equal(s.nodes["b"]!.status, "pending");
  s = reduceToolState(s, { sessionUpdate: "tool_call_update", toolCallId: "b", status: "failed", content: [text("denied by policy")] }, 8);
  assert.match(detail(s.nodes["b"]!), /reason:\ndenied by policy/);
  assert.equal(durationMs(s.nodes["b"]!, 100), 3);
});

test("diffs show on click; the previous state is never mutated", () => {
  const before = reduceToolState(emptyToolState, { sessionUpdate: "tool_call", toolCallId: "c", title: "Edit x" }, 0);
  const after = reduceToolState(before, {
    sessionUpdate: "tool_call_update", toolCallId: "c", status: "completed",
    content: [{ type: "diff", path: "/x", oldText: "1\n2", newText: "1\n3" }, { type: "terminal", terminalId: "t" }],
  }, 10);
  assert.equal(before.nodes["c"]!.status, "pending");
  assert.match(detail(after.nodes["c"]!), /--- \/x\n\+\+\+ \/x\n-1\n-2\n\+1\n\+3/);
  assert.deepEqual(after.nodes["c"]!.terminalIds, ["t"]);
});

test("durations read well", () => {
  assert.equal(formatDuration(12.4), "12 ms");
  assert.equal(formatDuration(2500), "2.5 s");
  assert.equal(formatDuration(125_000), "2 min 5 s");
});
