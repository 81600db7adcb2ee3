// The timeline: events wait in a buffer and are played into the model at a pace people can follow,
// but never far behind the cluster.
//
// The control plane makes dozens of events in a few milliseconds; shown at that speed nothing could
// be seen, and shown one by one at a readable pace the page would fall minutes behind. So the timeline
// keeps two promises at once:
//
// - **Live means live.** At 1×, no event is drawn more than `MAX_LAG` (about a second) after it
//   arrived, unless the student paused. Each event gets `BASE_DELAY / speed` when there is time; when
//   events pile up the pace quickens so that what waits still plays by its deadline, down to
//   `MIN_DELAY`; and what still cannot be played in time is applied at once, without animation, and
//   summarised in the narration ("the ReplicaSet controller created 20 pods"), never queued further.
// - **What the student did plays in full, in order.** Each event comes with a kind, given by the page
//   when it arrives: `own` (a request a person made, such as kubectl's: always animated, even late,
//   and faster when it is behind, down to `OWN_MIN_DELAY`, so that a burst of them holds up little),
//   `background` (the cluster's own periodic traffic, background.js: applied at once, quietly, while
//   `showBackground` is off), or null (everything else: animated when there is time).
//
// Paused, events keep arriving into the buffer and `step()` plays one. The page's rewind (rewind.js)
// replays recorded history with a second timeline that never skips (`maxLag` and `maxBacklog`
// Infinity): everything after the revision it rewound to, one event per step.
//
// With `?perf=1` in the page's address, the time each step takes, and how long after its arrival each
// event was drawn, are measured (perf.js).

import { perf } from "./perf.js";

export const BASE_DELAY = 140; // ms per event at speed 1, when there is time
export const MIN_DELAY = 30; // ms per event at least, however much waits (at speed 1) ...
export const OWN_MIN_DELAY = 2; // ... except a person's events that are behind: they never fold, so they hurry
// ms: at speed 1, no event waits longer than this after it arrived. Below a second, so that with the
// server's framing (up to 33 ms) and the browser's timers an event is drawn within a second of the
// cluster emitting it.
export const MAX_LAG = 750;
export const MAX_BACKLOG = 1500; // events; past this the timeline skips ahead whatever their kind
export const KEEP_AFTER_SKIP = 100;
export const MIN_SPEED_EXP = -3; // slider runs on log2(speed): 1/8× ...
export const MAX_SPEED_EXP = 4; // ... 16×

/** The speed of a slider position (log scale): 0 -> 1×, 1 -> 2×, -1 -> 0.5×. */
export function speedOf(exponent) {
  return 2 ** Number(exponent);
}

export function speedLabel(speed) {
  if (speed >= 1) return `${Number(speed.toFixed(2))}×`;
  return `1/${Math.round(1 / speed)}×`;
}

export class Timeline {
  /**
   * @param {{play: (event, options) => void, skip: (events, options) => void, changed: () => void,
   *          kind?: (event) => ("own"|"background"|null), recheck?: (event) => ("own"|"background"|null)}} sinks
   *   play one event (animated); apply many at once (`{restoring}`: history from before the page
   *   opened; `{behind}`: to keep up, or background traffic; `kinds`: each one's kind); report
   *   buffer/pause changes; say what kind an event is when it arrives (`kind`, once per event, in
   *   order), and again, once its whole batch is in, for one that had none (`recheck`)
   */
  constructor(
    sinks,
    { paused = false, speed = 1, maxBacklog = MAX_BACKLOG, maxLag = MAX_LAG, now = () => performance.now() } = {},
  ) {
    this.sinks = sinks;
    this.maxBacklog = maxBacklog;
    this.maxLag = maxLag;
    this.now = now;
    this.queue = [];
    this.arrived = []; // when each queued event arrived (this.now())
    this.kinds = []; // each queued event's kind
    this.paused = paused;
    this.speed = speed;
    this.showBackground = false;
    this.holdUntil = null; // a seq: play silently up to it, then pause (deep links)
    this.timer = null;
    this.pace = BASE_DELAY / speed;
  }

  push(events) {
    const now = this.now();
    const start = this.queue.length;
    for (const event of events) {
      this.queue.push(event);
      this.arrived.push(now);
      this.kinds.push(this.sinks.kind ? this.sinks.kind(event) : null);
    }
    // An event's kind may depend on one after it in the same batch (the store tells the API server's
    // watch cache of a write before the write's store.txn is traced): ask again for those with none.
    if (this.sinks.recheck) {
      for (let i = start; i < this.queue.length; i += 1) {
        if (this.kinds[i] === null) this.kinds[i] = this.sinks.recheck(this.queue[i]);
      }
    }
    this._restoreUpTo();
    if (!this.paused && !this.timer) this._schedule(0);
    this.sinks.changed();
  }

  /** Forget what waits (the page starts again from a state that holds it). */
  clear() {
    this.queue = [];
    this.arrived = [];
    this.kinds = [];
    this.holdUntil = null;
    this.sinks.changed();
  }

  /** Play everything up to `seq` at once, then pause there (a deep link's moment). */
  pauseAt(seq) {
    this.holdUntil = seq;
    this.paused = true;
    this._restoreUpTo();
  }

  /** Apply everything up to `seq` at once (history from before the page opened), then play on. */
  catchUp(seq) {
    this.holdUntil = seq;
    this._restoreUpTo();
  }

  _take(n) {
    this.arrived.splice(0, n);
    this.kinds.splice(0, n);
    return this.queue.splice(0, n);
  }

  /** Apply the first `n` waiting events at once, each with its kind. */
  _apply(n, options) {
    const kinds = this.kinds.slice(0, n);
    const arrived = this.arrived.slice(0, n);
    const events = this._take(n);
    this.sinks.skip(events, { ...options, kinds });
    if (perf && !options.restoring) events.forEach((event, i) => perf.drawn(event, arrived[i]));
  }

  _restoreUpTo() {
    if (this.holdUntil === null) return;
    let n = 0;
    while (n < this.queue.length && this.queue[n].seq <= this.holdUntil) n += 1;
    if (n) this._apply(n, { restoring: true });
    if (this.queue.length && this.queue[0].seq > this.holdUntil) this.holdUntil = null;
  }

  setPaused(paused) {
    this.paused = paused;
    if (paused) {
      clearTimeout(this.timer);
      this.timer = null;
    } else {
      this.holdUntil = null;
      if (!this.timer) this._schedule(0);
    }
    this.sinks.changed();
  }

  setSpeed(speed) {
    this.speed = speed;
    this.sinks.changed();
  }

  /** Animate the cluster's background traffic too (true), or fold it quietly (false, the default). */
  setShowBackground(show) {
    this.showBackground = Boolean(show);
    this.sinks.changed();
  }

  /**
   * Play the next event (while paused); background traffic before it, while folded, is applied
   * quietly on the way. Returns the event played, or null if nothing waits.
   */
  step() {
    let n = 0;
    while (n < this.queue.length && this._folded(n)) n += 1;
    if (n) this._apply(n, { behind: true });
    const arrived = this.arrived[0];
    const [event] = this._take(1);
    if (event) {
      this.sinks.play(event, { stepped: true });
      perf?.drawn(event, arrived);
    }
    this.sinks.changed();
    return event ?? null;
  }

  /** Stop for good: no timer left behind, nothing more played. */
  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    this.paused = true;
    this.queue = [];
    this.arrived = [];
    this.kinds = [];
  }

  /** How far behind, at most, an event may be drawn now (ms): more when slowed down, never less. */
  budget() {
    return this.maxLag / Math.min(this.speed, 1);
  }

  /** The pace of the last step (ms per event): what the view's animations last. */
  delay() {
    return this.pace;
  }

  /** Events that wait, not counting folded background traffic (what the controls report). */
  waiting() {
    if (this.showBackground) return this.queue.length;
    let n = 0;
    for (const kind of this.kinds) if (kind !== "background") n += 1;
    return n;
  }

  _folded(i) {
    return this.kinds[i] === "background" && !this.showBackground;
  }

  _schedule(ms) {
    this.timer = setTimeout(() => this._tick(), ms);
  }

  _tick() {
    const started = perf ? performance.now() : 0;
    this._play();
    perf?.time("tick", performance.now() - started);
  }

  _play() {
    this.timer = null;
    if (this.paused) return;
    if (this.queue.length > this.maxBacklog) {
      // Far behind (paused a long while): apply at once what comes before the next event a person made.
      let n = 0;
      while (n < this.queue.length - KEEP_AFTER_SKIP && this.kinds[n] !== "own") n += 1;
      if (n) this._apply(n, { behind: true });
    }
    const now = this.now();
    const budget = this.budget();
    const slowest = BASE_DELAY / this.speed;
    const fastest = Math.min(MIN_DELAY, slowest);
    // Apply at once, in order: folded background traffic; what is too late to animate; and, when more
    // waits than can be animated by the deadline even at the fastest pace, the oldest of it now rather
    // than at its deadline. Never what a person made: that plays, late or not.
    const left = () => this.arrived[this.arrived.length - 1] + budget - now;
    let excess = this.waiting() - Math.max(1, Math.floor(left() / fastest));
    let n = 0;
    while (n < this.queue.length) {
      if (this._folded(n)) n += 1;
      else if (this.kinds[n] !== "own" && (excess > 0 || now - this.arrived[n] > budget)) {
        excess -= 1;
        n += 1;
      } else break;
    }
    if (n) this._apply(n, { behind: true });
    if (!this.queue.length) {
      this.sinks.changed();
      return;
    }
    // The pace that plays everything waiting by its deadline, within [MIN_DELAY, BASE_DELAY] / speed.
    // A person's events never fold: when they are behind (kubectl's discovery burst, many requests in
    // a few milliseconds), they play faster, several a tick, so that what follows them is not held up.
    const hurry = this.kinds[0] === "own" && now - this.arrived[0] > budget / 3;
    const floor = hurry ? Math.min(OWN_MIN_DELAY, fastest) : fastest;
    this.pace = Math.max(floor, Math.min(slowest, left() / Math.max(1, this.waiting())));
    // Below ~8 ms a step, play several events per tick instead of flooding the timer queue.
    const count = this.pace >= 8 ? 1 : Math.ceil(8 / Math.max(this.pace, 0.1));
    for (let i = 0; i < count && this.queue.length; i += 1) {
      const arrived = this.arrived[0];
      const [event] = this._take(1);
      this.sinks.play(event, {});
      perf?.drawn(event, arrived);
    }
    this.sinks.changed();
    if (this.queue.length) this._schedule(Math.max(this.pace, 8));
  }
}
