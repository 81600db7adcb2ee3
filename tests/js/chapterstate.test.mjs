// The chapter page's pure parts: what a step does to the topology, how a verdict reads.
import { test } from "node:test";
import assert from "node:assert/strict";

import { nextDelay, stepFocus, verdictView } from "../../static/courses/chapterstate.js";

test("a step's highlight names the student's own box", () => {
  const focus = stepFocus(
    { highlight: { nodes: ["apiserver", "user:$student"], edges: [["user:$student", "apiserver"]] } },
    "student:alice",
  );
  assert.deepEqual(focus.spotlight.nodes, ["apiserver", "user:student:alice"]);
  assert.deepEqual(focus.spotlight.edges, [["user:student:alice", "apiserver"]]);
  assert.equal(focus.narration, null, "no narration list shows every event");
});

test("a step's timeline speed slows the animation, speed 0 pauses it", () => {
  assert.equal(stepFocus({ timeline: { speed: 0.5 } }).speed, 0.5);
  assert.equal(stepFocus({ timeline: { speed: 0 } }).paused, true);
  assert.equal(stepFocus({}).speed, null);
  assert.deepEqual(stepFocus({ narration: ["store.txn"] }).narration, ["store.txn"]);
});

test("a failing verdict lists its failures; others list none", () => {
  const failing = verdictView({ status: "failing", failures: [{ leaf: "a", message: "saw 1" }] }, { failing: "Not yet:" });
  assert.deepEqual(failing, { status: "failing", text: "Not yet:", failures: ["saw 1"] });
  const unknown = verdictView({ status: "unknown", failures: [{ message: "500" }] }, {});
  assert.equal(unknown.failures.length, 0, "an unevaluable check is never shown as the student's failure");
  assert.equal(verdictView({ status: "bogus" }, {}).status, "pending");
});

test("reconnects back off up to 10 s", () => {
  assert.equal(nextDelay(0), 500);
  assert.equal(nextDelay(3), 4000);
  assert.equal(nextDelay(30), 10000);
});
