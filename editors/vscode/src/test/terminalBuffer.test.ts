import assert from "node:assert/strict";
import { test } from "node:test";
import { TerminalBuffer } from "../core/terminalBuffer";

test("no limit keeps everything", () => {
  const b = new TerminalBuffer(null);
  b.append(Buffer.from("héllo "));
  b.append(Buffer.from("world"));
  assert.equal(b.output, "héllo world");
  assert.equal(b.truncated, false);
});

test("the limit keeps the tail, cut at a character boundary, for every cut point", () => {
  const text = "aé€😀b".repeat(7); // 1-, 2-, 3- and 4-byte characters
  const bytes = Buffer.from(text);
  for (let limit = 0; limit <= bytes.length + 1; limit++) {
    // fed whole and fed byte by byte (characters torn across chunks) give the same answer
    for (const chunks of [[bytes], [...bytes].map((x) => Buffer.from([x]))]) {
      const b = new TerminalBuffer(limit);
      for (const chunk of chunks) {
        b.append(chunk);
        // mid-stream reads never show a torn character nor pass the limit
        assert.ok(!b.output.includes("\uFFFD") && Buffer.byteLength(b.output) <= limit, `limit ${limit}`);
      }
      const kept = Buffer.from(b.output);
      assert.ok(kept.length <= limit, `limit ${limit}: kept ${kept.length}`);
      assert.ok(limit - kept.length <= 3, `limit ${limit}: dropped a whole character too many`);
      assert.ok(text.endsWith(b.output), `limit ${limit}: not a tail of the text`);
      assert.ok(!b.output.includes("\uFFFD"), `limit ${limit}: a torn character`);
      assert.equal(b.truncated, bytes.length > limit);
    }
  }
});

test("exit status wakes waiters once; release stops keeping output", async () => {
  const b = new TerminalBuffer(10);
  const waiting = b.waitForExit();
  b.finish({ exitCode: 3, signal: null });
  b.finish({ exitCode: 0, signal: null });
  assert.deepEqual(await waiting, { exitCode: 3, signal: null });
  assert.deepEqual(await b.waitForExit(), { exitCode: 3, signal: null });
  b.released = true;
  b.append(Buffer.from("late"));
  assert.equal(b.output, "");
});

test("a bad limit is refused", () => {
  assert.throws(() => new TerminalBuffer(-1), RangeError);
  assert.throws(() => new TerminalBuffer(1.5), RangeError);
});

test("while running, a character still arriving is left out; after exit everything shows", () => {
  const euro = Buffer.from("€"); // 3 bytes
  const b = new TerminalBuffer(null);
  b.append(Buffer.from("a"));
  for (const cut of [1, 2]) {
    const partial = new TerminalBuffer(null);
    partial.append(Buffer.concat([Buffer.from("a"), euro.subarray(0, cut)]));
    assert.equal(partial.output, "a");
    partial.finish({ exitCode: 0, signal: null });
    assert.equal(partial.output, "a\uFFFD");
  }
  b.append(euro);
  assert.equal(b.output, "a€");
});
