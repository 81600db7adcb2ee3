// The page's own stopwatch: how long its work takes, for `python -m bench ui` and the curious.
//
// Off unless the page's address asks for it with `?perf=1`: then `perf` below is a `PagePerf` (and
// `window.__kubelabPerf` the same object), otherwise it is null and the page measures nothing. Two
// kinds of work are timed:
//
//   "frame"  handling one websocket frame (stream.js: parsing it, checking its seqs, handing its events
//            to the timeline), i.e. the page's frame handler;
//   "tick"   one step of the timeline (timeline.js: playing the next events into the model, the
//            diagram and the narration);
//   "lag"    how long after its arrival each event was drawn (animated, or applied at once).
//
// `drawn` also keeps the wall-clock time (ms since the epoch) each of the last `DRAWN_KEPT` events was
// drawn at, by seq, so the benchmark can set it against when the server emitted it.
//
// Each kind keeps a histogram of durations (0.1 ms buckets up to 100 ms, then one overflow bucket), so
// a ten-minute run at 30 frames a second costs the same few kilobytes as a short one. Counters count
// things (`events`: events received in frames; `summarised`: events the server left out and summed up
// instead). On the console: `__kubelabPerf.summary()`.

const BUCKET_MS = 0.1;
const BUCKETS = 1000; // 0 ... 100 ms; longer durations share the last bucket (their maximum is kept)
const DRAWN_KEPT = 20000;

/** Durations of one kind of work, as a histogram. */
export class Timings {
  /** Buckets of `bucketMs` up to `buckets * bucketMs`; longer durations share one more bucket. */
  constructor({ bucketMs = BUCKET_MS, buckets = BUCKETS } = {}) {
    this.bucketMs = bucketMs;
    this.size = buckets;
    this.reset();
  }

  reset() {
    this.buckets = new Uint32Array(this.size + 1);
    this.count = 0;
    this.total = 0;
    this.max = 0;
  }

  add(ms) {
    this.buckets[Math.min(this.size, Math.floor(ms / this.bucketMs))] += 1;
    this.count += 1;
    this.total += ms;
    if (ms > this.max) this.max = ms;
  }

  /** The q-th percentile (0-100) in ms: the upper edge of the bucket it falls in (the maximum past 100 ms). */
  percentile(q) {
    if (!this.count) return null;
    const rank = Math.ceil((q / 100) * this.count);
    let seen = 0;
    for (let i = 0; i <= this.size; i += 1) {
      seen += this.buckets[i];
      if (seen >= Math.max(rank, 1)) return i === this.size ? this.max : Math.min((i + 1) * this.bucketMs, this.max);
    }
    return this.max;
  }

  summary() {
    return {
      count: this.count,
      mean: this.count ? this.total / this.count : null,
      p50: this.percentile(50),
      p95: this.percentile(95),
      p99: this.percentile(99),
      max: this.count ? this.max : null,
    };
  }
}

export class PagePerf {
  constructor() {
    // Lags run to seconds: 1 ms buckets up to 10 s.
    this.timings = { frame: new Timings(), tick: new Timings(), lag: new Timings({ bucketMs: 1, buckets: 10000 }) };
    this.counters = {};
    /** @type {Map<number, number>} seq -> when it was drawn (ms since the epoch) */
    this.drawnAt = new Map();
  }

  /** An event was drawn (animated or applied at once); `arrived` is when it arrived (performance.now()). */
  drawn(event, arrived) {
    const now = performance.now();
    if (typeof arrived === "number") this.time("lag", now - arrived);
    if (typeof event?.seq !== "number") return;
    this.drawnAt.set(event.seq, performance.timeOrigin + now);
    if (this.drawnAt.size > DRAWN_KEPT) this.drawnAt.delete(this.drawnAt.keys().next().value);
  }

  /** When the events from seq `first` on were drawn: `[[seq, ms since the epoch], ...]`. */
  drawnSince(first = 0) {
    return [...this.drawnAt].filter(([seq]) => seq >= first);
  }

  /** Add one duration (ms) of a kind of work. */
  time(kind, ms) {
    (this.timings[kind] ||= new Timings()).add(ms);
  }

  count(name, n = 1) {
    this.counters[name] = (this.counters[name] || 0) + n;
  }

  /** Start counting afresh (the benchmark does, once the page has warmed up). */
  reset() {
    for (const timings of Object.values(this.timings)) timings.reset();
    this.counters = {};
    this.drawnAt.clear();
  }

  summary() {
    const timings = {};
    for (const [kind, t] of Object.entries(this.timings)) timings[kind] = t.summary();
    return { timings, counters: { ...this.counters } };
  }
}

function wanted() {
  try {
    return new URLSearchParams(window.location.search).get("perf") === "1";
  } catch {
    return false; // no window (a test importing the module elsewhere)
  }
}

/** The page's stopwatch, or null when `?perf=1` did not ask for one. */
export const perf = wanted() ? new PagePerf() : null;
if (perf) window.__kubelabPerf = perf;
