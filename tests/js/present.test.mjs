// Presenter mode's keys (static/topology/present.js `actionFor`): what a presentation clicker and the
// keyboard do, given what is shown (the fault panel, the help, the black screen).
import assert from "node:assert/strict";
import { test } from "node:test";

import { actionFor } from "../../static/topology/present.js";

const key = (name, extra = {}) => ({ key: name, ctrlKey: false, metaKey: false, altKey: false, ...extra });

test("a clicker's keys pause, step, step back and go live", () => {
  for (const name of [" ", "k"]) assert.equal(actionFor(key(name)), "pause");
  for (const name of ["ArrowRight", "PageDown", "l"]) assert.equal(actionFor(key(name)), "step");
  for (const name of ["ArrowLeft", "PageUp"]) assert.equal(actionFor(key(name)), "back");
  assert.equal(actionFor(key("Home")), "live");
  assert.equal(actionFor(key("+")), "faster");
  assert.equal(actionFor(key("=")), "faster");
  assert.equal(actionFor(key("-")), "slower");
  for (const name of ["b", "."]) assert.equal(actionFor(key(name)), "black");
  assert.equal(actionFor(key("F5")), "fullscreen");
  assert.equal(actionFor(key("?")), "help");
  assert.equal(actionFor(key("Escape")), "escape");
});

test("the browser keeps its shortcuts and the keys nobody gave a meaning", () => {
  assert.equal(actionFor(key("l", { ctrlKey: true })), null); // the address bar
  assert.equal(actionFor(key("ArrowLeft", { altKey: true })), null); // history back
  assert.equal(actionFor(key("x")), null);
  assert.equal(actionFor(key("1")), null); // digits choose only in the fault panel
  assert.equal(actionFor(key("Enter")), null);
});

test("the fault panel opens only where it is rendered, and takes digits, Enter, c and Backspace", () => {
  assert.equal(actionFor(key("f")), null);
  assert.equal(actionFor(key("f"), { canBreak: true }), "panel");
  const open = { canBreak: true, panel: true };
  for (const digit of "123456789") assert.equal(actionFor(key(digit), open), "digit");
  assert.equal(actionFor(key("0"), open), null);
  assert.equal(actionFor(key("Enter"), open), "apply");
  assert.equal(actionFor(key("c"), open), "clear");
  assert.equal(actionFor(key("c")), null); // never a clear by accident, without the panel
  assert.equal(actionFor(key("Backspace"), open), "undo");
  assert.equal(actionFor(key("Escape"), open), "panel");
  assert.equal(actionFor(key("f"), open), "panel");
  assert.equal(actionFor(key("ArrowRight"), open), "step"); // the timeline's keys still work
});

test("a black screen comes back on any key that acts; the help closes with ? or Escape", () => {
  const black = { black: true, canBreak: true };
  for (const name of ["b", ".", "Escape", " ", "ArrowRight", "f"]) assert.equal(actionFor(key(name), black), "black");
  assert.equal(actionFor(key("x"), black), null);
  assert.equal(actionFor(key("F5"), black), "fullscreen");
  assert.equal(actionFor(key("?"), { help: true }), "help");
  assert.equal(actionFor(key("Escape"), { help: true }), "help");
  assert.equal(actionFor(key("ArrowRight"), { help: true }), "step");
});

test("back goes to the newest write before the last narrated event the diagram shows", async () => {
  const { backRevision } = await import("../../static/topology/present.js");
  const write = (seq, revision) => ({ seq, type: "store.txn", revision, writes: [{ key: "/registry/x" }] });
  const events = [
    write(1, 10),
    { seq: 2, type: "request.received" },
    write(3, 11), // a Lease renewal: written, not narrated
    { seq: 4, type: "request.stage" },
    write(5, 12),
    { seq: 6, type: "watch.event", revision: 12 },
  ];
  assert.equal(backRevision([2, 4, 5, 6], events, 6), 12); // before #6: the store as #5 wrote it
  assert.equal(backRevision([2, 4, 5, 6], events, 5), 11); // rewound to #5: before it, #3's revision
  assert.equal(backRevision([2, 4], events, 5), 11); // #5 said nothing: before #4
  assert.equal(backRevision([2], events, 6), 10);
  assert.equal(backRevision([1], events, 6), null); // no write held before the first line
  assert.equal(backRevision([], events, 6), null); // nothing narrated yet
  assert.equal(backRevision([6], [{ ...write(5, 12), succeeded: false }, { seq: 6, type: "x" }], 6), null);
});
