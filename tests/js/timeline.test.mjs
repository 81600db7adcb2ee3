// The timeline keeps the page live: nothing is drawn more than MAX_LAG after it arrived (at 1×),
// background traffic is folded, and what people do always animates, in order.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MAX_LAG, Timeline } from "../../static/topology/timeline.js";

function harness(kinds = {}) {
  let now = 0;
  const played = [];
  const skipped = [];
  const timeline = new Timeline(
    {
      play: (event) => played.push({ seq: event.seq, at: now }),
      skip: (events, { kinds: given }) => skipped.push(...events.map((e, i) => ({ seq: e.seq, kind: given[i], at: now }))),
      changed: () => {},
      kind: (event) => kinds[event.seq] ?? null,
    },
    { now: () => now },
  );
  // Drive its timer by hand: run whatever is due, advancing the clock.
  const run = (until) => {
    while (timeline.timer !== null && now < until) {
      clearTimeout(timeline.timer);
      const delay = timeline.queue.length ? Math.max(timeline.delay(), 8) : 0;
      now += delay;
      timeline._tick();
    }
  };
  return { timeline, played, skipped, run, setNow: (t) => (now = t), get now() { return now; } };
}

const events = (n, from = 1) => Array.from({ length: n }, (_, i) => ({ seq: from + i, type: "request.stage" }));

test("a burst is drawn within the lag budget: animated while there is time, the rest at once", () => {
  const h = harness();
  h.timeline.push(events(400));
  h.run(5000);
  const drawn = [...h.played, ...h.skipped];
  assert.equal(drawn.length, 400);
  assert.ok(drawn.every((d) => d.at <= MAX_LAG + 40), `an event was drawn ${Math.max(...drawn.map((d) => d.at))} ms late`);
  assert.ok(h.played.length >= 20, "nothing was animated");
  assert.ok(h.skipped.length > 0, "a burst that cannot be animated in time must be drawn at once");
  assert.deepEqual(drawn.map((d) => d.seq).sort((a, b) => a - b), events(400).map((e) => e.seq));
});

test("what people do animates even when late; background is folded unless asked for", () => {
  const kinds = {};
  for (let seq = 1; seq <= 50; seq += 1) kinds[seq] = seq % 2 ? "own" : "background";
  const h = harness(kinds);
  h.timeline.push(events(50));
  h.run(10000);
  assert.deepEqual(h.played.map((p) => p.seq), events(25).map((_, i) => 2 * i + 1));
  assert.ok(h.skipped.every((s) => s.kind === "background"));
  // In order: each background event was applied before the next own event played.
  const order = [...h.played.map((p) => [p.at, p.seq]), ...h.skipped.map((s) => [s.at, s.seq])];
  order.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  assert.deepEqual(order.map(([, seq]) => seq), events(50).map((e) => e.seq));

  const shown = harness({ 1: "background", 2: "background" });
  shown.timeline.setShowBackground(true);
  shown.timeline.push(events(2));
  shown.run(1000);
  assert.deepEqual(shown.played.map((p) => p.seq), [1, 2]);
});

test("paused, events wait; a step folds background on the way to the next event", () => {
  const h = harness({ 1: "background", 2: "background" });
  h.timeline.setPaused(true);
  h.timeline.push(events(3));
  assert.equal(h.timeline.waiting(), 1);
  const event = h.timeline.step();
  assert.equal(event.seq, 3);
  assert.deepEqual(h.skipped.map((s) => s.seq), [1, 2]);
});

test("a burst of a person's requests (kubectl's discovery) all animate and hold up little behind them", () => {
  const kinds = {};
  for (let seq = 1; seq <= 150; seq += 1) kinds[seq] = "own";
  const h = harness(kinds);
  h.timeline.push(events(150));
  h.timeline.push(events(1200, 151));
  h.run(20000);
  const own = h.played.filter((p) => p.seq <= 150);
  assert.equal(own.length, 150, "every event of a person's requests is animated");
  const drawn = [...h.played, ...h.skipped].map((d) => d.at).sort((a, b) => a - b);
  const p95 = drawn[Math.floor(drawn.length * 0.95)];
  assert.ok(p95 <= 1000, `p95 ${p95} ms behind`);
});
