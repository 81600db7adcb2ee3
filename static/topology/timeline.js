// The timeline: events wait in a buffer and are played into the model at a pace people can follow.
//
// The control plane makes dozens of events in a few milliseconds; shown at that speed nothing could
// be seen. The timeline plays one event per step, `BASE_DELAY / speed` apart, a little faster while a
// backlog builds up, and skips ahead (applying without animation, saying so in the narration) when the
// backlog passes `MAX_BACKLOG`. Paused, events keep arriving into the buffer and `step()` plays one.
// The page's rewind (rewind.js) plays recorded history with a second timeline that never skips
// (`maxBacklog: Infinity`): everything after the revision it rewound to, one event per step.
//
// With `?perf=1` in the page's address, the time each step takes is measured (perf.js).

import { perf } from "./perf.js";

export const BASE_DELAY = 140; // ms per event at speed 1
export const MAX_BACKLOG = 1500; // events; past this the timeline skips ahead
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
   * @param {{play: (event, options) => void, skip: (events) => void, changed: () => void}} sinks
   *   play one event (animated or not); apply many at once while skipping; report buffer/pause changes
   */
  constructor(sinks, { paused = false, speed = 1, maxBacklog = MAX_BACKLOG } = {}) {
    this.sinks = sinks;
    this.maxBacklog = maxBacklog;
    this.queue = [];
    this.paused = paused;
    this.speed = speed;
    this.holdUntil = null; // a seq: play silently up to it, then pause (deep links)
    this.timer = null;
  }

  push(events) {
    for (const event of events) this.queue.push(event);
    this._restoreUpTo();
    if (!this.paused && !this.timer) this._schedule(0);
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

  _restoreUpTo() {
    if (this.holdUntil === null) return;
    let n = 0;
    while (n < this.queue.length && this.queue[n].seq <= this.holdUntil) n += 1;
    if (n) this.sinks.skip(this.queue.splice(0, n), { restoring: true });
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

  /** Play the next buffered event (while paused). Returns it, or null if the buffer is empty. */
  step() {
    const event = this.queue.shift() ?? null;
    if (event) this.sinks.play(event, { stepped: true });
    this.sinks.changed();
    return event;
  }

  /** Stop for good: no timer left behind, nothing more played. */
  stop() {
    clearTimeout(this.timer);
    this.timer = null;
    this.paused = true;
    this.queue = [];
  }

  delay() {
    const backlog = Number.isFinite(this.maxBacklog) ? this.queue.length : 0;
    return BASE_DELAY / this.speed / (1 + backlog / 25);
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
      this.sinks.skip(this.queue.splice(0, this.queue.length - KEEP_AFTER_SKIP), { restoring: false });
    }
    // Below ~8 ms a step, play several events per tick instead of flooding the timer queue.
    const delay = this.delay();
    const count = delay >= 8 ? 1 : Math.ceil(8 / Math.max(delay, 0.1));
    for (let i = 0; i < count && this.queue.length; i += 1) this.sinks.play(this.queue.shift(), {});
    this.sinks.changed();
    if (this.queue.length) this._schedule(Math.max(delay, 8));
  }
}
