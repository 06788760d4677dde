import assert from "node:assert/strict";
import { test } from "node:test";
import { permissionDetail, sliceLines } from "../core/client";

test("fs/read_text_file line and limit: 1-based, endings kept, out of range is empty", () => {
  const text = "one\ntwo\r\nthree\nfour";
  assert.equal(sliceLines(text, null, null), text);
  assert.equal(sliceLines(text, 2, null), "two\r\nthree\nfour");
  assert.equal(sliceLines(text, 2, 2), "two\r\nthree\n");
  assert.equal(sliceLines(text, null, 1), "one\n");
  assert.equal(sliceLines(text, 4, 9), "four");
  assert.equal(sliceLines(text, 9, 1), "");
  assert.equal(sliceLines(text, 1, 0), "");
  assert.equal(sliceLines("", 1, 5), "");
});

test("a permission prompt shows every diff, the text, and the command", () => {
  const shown = permissionDetail({
    toolCallId: "t", title: "Edit a and b",
    content: [
      { type: "diff", path: "/w/a", oldText: "x", newText: "y" },
      { type: "diff", path: "/w/b", oldText: null, newText: "new" },
      { type: "content", content: { type: "text", text: "two files" } },
    ],
    rawInput: { command: "rm -rf build" },
  });
  assert.match(shown, /--- \/w\/a\n\+\+\+ \/w\/a\n-x\n\+y/);
  assert.match(shown, /--- \/dev\/null\n\+\+\+ \/w\/b\n\+new/);
  assert.match(shown, /two files/);
  assert.match(shown, /\$ rm -rf build/);
  assert.equal(permissionDetail({ toolCallId: "t", title: "Just a title" }), "Just a title");
});
