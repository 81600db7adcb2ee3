// The console page's pure parts (static/courses/console.js): plain text out of a terminal's control
// sequences, what a screen reader is read, the history, the socket's URL. Run by test_console_js.py
// (or: node --test tests/courses/console/console.test.mjs).

import assert from "node:assert/strict";
import { test } from "node:test";

import { History, SCROLLBACK_CHARS, socketUrl, stripAnsi, tail } from "../../../static/courses/console.js";

test("colours, cursor moves, titles and other controls are stripped; newlines and tabs stay", () => {
  assert.equal(stripAnsi("\x1b[1;31mError\x1b[0m: not found"), "Error: not found");
  assert.equal(stripAnsi("a\x1b]0;owned\x07b"), "ab");
  assert.equal(stripAnsi("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b"), "alinkb");
  assert.equal(stripAnsi("one\r\ntwo\tthree\x00\x08\x7f"), "one\ntwo\tthree");
  assert.equal(stripAnsi("\x1b[2J\x1b[Hclean"), "clean");
  assert.equal(stripAnsi("NAME   DATA\napp    1\n"), "NAME   DATA\napp    1\n");
});

test("a screen reader hears the last lines, from a line's start", () => {
  assert.equal(tail("short"), "short");
  const long = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
  const heard = tail(long, 30);
  assert.ok(heard.length <= 30);
  assert.ok(heard.startsWith("line "), heard);
  assert.ok(heard.endsWith("line 99"));
});

test("the history walks back and forth and keeps what was being typed", () => {
  const history = new History(3);
  for (const command of ["kubectl get pods", "kubectl get nodes", "kubectl get nodes", "kubectl get ns", "kubectl version"]) {
    history.push(command);
  }
  assert.deepEqual(history.items, ["kubectl get nodes", "kubectl get ns", "kubectl version"]); // no repeats, at most 3
  assert.equal(history.up("kubectl ge"), "kubectl version");
  assert.equal(history.up("kubectl version"), "kubectl get ns");
  assert.equal(history.up("kubectl get ns"), "kubectl get nodes");
  assert.equal(history.up("kubectl get nodes"), "kubectl get nodes"); // the oldest stays
  assert.equal(history.down(), "kubectl get ns");
  assert.equal(history.down(), "kubectl version");
  assert.equal(history.down(), "kubectl ge"); // back to the draft
  assert.equal(history.down(), "kubectl ge");
});

test("the socket is on the page's host, wss on an https page", () => {
  assert.equal(socketUrl("/ws/course/c/ch/console/", { protocol: "http:", host: "localhost:8000" }), "ws://localhost:8000/ws/course/c/ch/console/");
  assert.equal(socketUrl("/ws/x/", { protocol: "https:", host: "lab.example.org" }), "wss://lab.example.org/ws/x/");
});

test("the scrollback is bounded", () => {
  assert.ok(SCROLLBACK_CHARS > 10_000 && SCROLLBACK_CHARS <= 1_000_000);
});
