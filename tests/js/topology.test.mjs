// The topology module mounts only when a page asks: importing it starts nothing (no document needed),
// and `start(root)` is what a page's module script calls on its own root element.
import assert from "node:assert/strict";
import { test } from "node:test";

test("importing topology.js starts nothing and exports start(root)", async () => {
  assert.equal(globalThis.document, undefined);
  const topology = await import("../../static/topology/topology.js");
  assert.equal(typeof topology.start, "function");
  assert.equal(topology.start.length, 1);
  assert.equal(globalThis.kubelabTopology, undefined);
});
