// Rewind: the diagram as the cluster was at an earlier store revision, and replaying from there.
//
// etcd keeps every revision back to its compaction mark (MVCC), so "the cluster at revision R" is
// read, not guessed. Two sources, each for what it knows:
// - the store at R: the server reads the Nodes and Pods stored at R
//   (`/lab/<cluster>/etcd/?objects=diagram&revision=R`, courses/etcdpanel.py): which nodes exist and
//   whether they are Ready, which pods exist, on which node, in which phase;
// - the trace up to R: every write is a `store.txn` event naming the revision it wrote, so the page
//   replays the events it holds up to the one that wrote R, for what only the trace knows: the
//   components and their state, the watch lines, the controllers that have worked, the requests.
//   When R is at or after the state the live page started from (the trace socket's `state`:
//   components, controllers and open watches as of one seq), the replay starts from that state.
// The model at R is that replay with the store's objects folded in (`TopologyModel.applySnapshot`):
// the pods drawn are exactly the store's, and a leader Lease held at R draws its component.
//
// While rewound the live diagram waits, as when paused: its model is kept aside untouched and new
// events queue in its timeline. The recorded events after R wait in a second timeline, so pause, step
// and speed replay history from R one event at a time; each write replayed reads the store again at
// its revision. "Back to live" draws the live model again and lets the waiting events play.
// A compacted revision cannot be shown: the server answers 410 and the page says so.

import { readJSON } from "./etcd.js";
import { gettext, interpolate, lazy, ngettext } from "./i18n.js";
import { TopologyModel, isStoreWrite } from "./model.js";
import { Timeline } from "./timeline.js";

const CACHE = 200; // answers kept: a revision's objects never change (until compacted away)

/** The rewind's words, looked up once (i18n.js). */
const R = lazy(() => ({
  compacted: gettext("Revision %(revision)s is compacted: etcd keeps history only from revision %(compacted)s on, so the cluster as it was then cannot be shown."),
  compactedBare: gettext("Revision %(revision)s is compacted: so the cluster as it was then cannot be shown."),
  notWritten: gettext("Revision %(revision)s is not written yet: %(error)s."),
  cannotRead: gettext("The store cannot be read here: %(error)s."),
  reading: gettext("Reading the store at revision %(revision)s …"),
  noObjects: gettext("The server's answer has no objects to draw."),
  stillShowing: gettext("%(problem)s Still showing revision %(revision)s."),
  staysLive: gettext("%(problem)s The diagram stays live."),
  // How the rewound diagram was drawn, for the note below: the trace up to the write, from the
  // state the page started from (`based`) or not.
  exact: gettext("the rest replayed from the trace up to event #%(seq)s, which wrote it"),
  exactBased: gettext("the components and watches the page started from, then the rest replayed from the trace up to event #%(seq)s, which wrote it"),
  before: gettext("the rest replayed from the trace up to event #%(seq)s, the last write the page holds before it"),
  beforeBased: gettext(
    "the components and watches the page started from, then the rest replayed from the trace up to event #%(seq)s, the last write the page holds before it",
  ),
  based: gettext("the components and watches as the page started from them (no write since)"),
  older: gettext(
    "it is older than the state the page started from and the page holds no trace from before it, so only the components that held a leader Lease then, and no watch lines, are drawn",
  ),
  olderFrom: gettext(
    "it is older than the state the page started from and the page holds no trace from before it (its events start at #%(first)s), so only the components that held a leader Lease then, and no watch lines, are drawn",
  ),
  showing: gettext("⏪ Showing revision %(revision)s, not now: the cluster as the store held it then. Live events wait until you go back to live."),
  showingNow: gettext(
    "⏪ Showing revision %(revision)s, not now (now: revision %(current)s): the cluster as the store held it then. Live events wait until you go back to live.",
  ),
  newest: gettext("That was the newest event the page held when it rewound; go back to live to follow on."),
  traceOnly: gettext("%(problem)s The pods drawn follow the trace only."),
  live: gettext("Live: the diagram shows the cluster now."),
}));

const say = (template, values) => interpolate(template, values, true);

/** The events the page holds, oldest first: those the live model has played, then those waiting. */
export function heldEvents(model, queue = []) {
  const played = [...model.events.values()];
  return [...played, ...queue.filter((event) => event.seq > model.lastSeq)];
}

/**
 * Where revision `revision` sits in `events` (oldest first): the seq of the `store.txn` that wrote it
 * (`exact`), else of the newest held write before it; 0 when the page holds no write at or before it.
 */
export function writeSeqOf(events, revision) {
  let seq = 0;
  let exact = false;
  for (const event of events) {
    if (!isStoreWrite(event) || event.revision > revision) continue;
    if (event.seq > seq) {
      seq = event.seq;
      exact = event.revision === revision;
    }
  }
  return { seq, exact };
}

/**
 * The diagram at a revision, as a pure function of the held events, the state the page started from
 * (`base`, or null) and the server's answer for that revision: `{model, seq, exact, based, later}`
 * where `later` are the events after it, to replay, and `based` says whether the replay started from
 * `base` (only when the revision is not older than it: the state is what the lab ran then).
 */
export function modelAt(events, answer, base = null) {
  const { seq, exact } = writeSeqOf(events, answer.revision);
  const model = new TopologyModel();
  const based = Boolean(base) && answer.revision >= (base.revision ?? Infinity);
  if (based) model.applyState(base);
  for (const event of events) {
    if (event.seq > seq) break;
    model.apply(event);
  }
  model.applySnapshot(answer);
  return { model, seq, exact, based, later: events.filter((event) => event.seq > seq) };
}

/** Words for a refused read: a compacted revision, one not written yet, or anything else. */
function refusal(revision, status, data) {
  if (status === 410) {
    const text = data?.compacted ? say(R().compacted, { revision, compacted: data.compacted }) : say(R().compactedBare, { revision });
    return ["compacted", text];
  }
  if (status === 400 && /not written yet/.test(data?.error || "")) {
    return ["error", say(R().notWritten, { revision, error: data.error })];
  }
  return ["error", say(R().cannotRead, { error: data?.error || `HTTP ${status}` })];
}

export class Rewind {
  /**
   * @param {{url: string, fetch?: typeof fetch, live: {model, timeline}, hooks: object}} options
   *   `url` the etcd panel's endpoint; `live` the page's live model and timeline; `hooks`:
   *   draw(model|null) (null: the live model again), shown(revision) (the store revision drawn),
   *   play(event, model, changes), apply(changes), note(text), say(state, text), changed()
   */
  constructor({ url, fetch: fetcher, live, hooks }) {
    this.url = url;
    this.fetch = fetcher || ((...args) => window.fetch(...args));
    this.live = live;
    this.hooks = hooks;
    this.active = false;
    this.model = null; // the rewound model, or null: live
    this.timeline = null; // the recorded events after the revision, to replay
    this.revision = null; // the store revision the drawn nodes and pods were read at
    this.current = null; // the store's revision now, as the last answer said
    this.seq = 0; // the event the replay started after
    this.wasPaused = null; // the live timeline's pause before rewinding (null: not holding it)
    this.generation = 0; // answers to an older show() or back() are dropped
    this.following = null; // the revision a replayed write asked the store for
    this.cache = new Map();
  }

  async _objects(revision) {
    const cached = this.cache.get(revision);
    if (cached) return cached;
    let answer;
    try {
      answer = await readJSON(this.fetch, this.url, [["objects", "diagram"], ["revision", revision]]);
    } catch (error) {
      return { status: 0, data: { error: String(error.message || error) } };
    }
    if (answer.status === 200 && answer.data?.objects) {
      this.cache.set(revision, answer);
      if (this.cache.size > CACHE) this.cache.delete(this.cache.keys().next().value);
    }
    return answer;
  }

  _hold(wasPaused = this.live.timeline.paused) {
    if (this.wasPaused !== null) return;
    this.wasPaused = wasPaused;
    this.live.timeline.setPaused(true);
  }

  _release() {
    if (this.wasPaused === null) return;
    const paused = this.wasPaused;
    this.wasPaused = null;
    this.live.timeline.setPaused(paused);
  }

  /**
   * Show the cluster as it was at `revision`; resolves to true when it is shown. `liveWasPaused`
   * overrides what "Back to live" restores (a deep link pauses the live timeline before it rewinds).
   */
  async show(revision, { liveWasPaused } = {}) {
    const generation = ++this.generation;
    this._hold(liveWasPaused); // live events wait from now on, even while the store is read
    this.hooks.say("loading", say(R().reading, { revision }));
    const { status, data } = await this._objects(revision);
    if (generation !== this.generation) return false;
    if (status !== 200 || !data?.objects) {
      const [state, problem] = status === 200 ? ["error", R().noObjects] : refusal(revision, status, data);
      if (!this.active) this._release();
      this.hooks.say(state, this.active ? say(R().stillShowing, { problem, revision: this.revision }) : say(R().staysLive, { problem }));
      this.hooks.changed();
      return false;
    }
    const events = heldEvents(this.live.model, this.live.timeline.queue);
    const { model, seq, exact, based, later } = modelAt(events, data, this.live.base?.() ?? null);
    this.timeline?.stop();
    this.timeline = new Timeline(
      {
        play: (event) => this._play(event),
        skip: (skipped) => skipped.forEach((event) => this._play(event)),
        changed: () => this.hooks.changed(),
      },
      { paused: true, speed: this.live.timeline.speed, maxBacklog: Infinity, maxLag: Infinity },
    );
    this.active = true;
    this.model = model;
    this.revision = data.revision;
    this.current = data.current_revision ?? null;
    this.seq = seq;
    this.following = null;
    this.timeline.push(later);
    this.hooks.draw(model);
    const first = events[0]?.seq;
    const T = R();
    let trace;
    if (exact) trace = say(based ? T.exactBased : T.exact, { seq });
    else if (seq) trace = say(based ? T.beforeBased : T.before, { seq });
    else if (based) trace = T.based;
    else trace = first ? say(T.olderFrom, { first }) : T.older;
    const count = later.length;
    const rewound = ngettext(
      "⏪ Rewound to revision %(revision)s: nodes and pods as etcd held them then; %(trace)s. %(count)s recorded event after it: step or resume to replay them.",
      "⏪ Rewound to revision %(revision)s: nodes and pods as etcd held them then; %(trace)s. %(count)s recorded events after it: step or resume to replay them.",
      count,
    );
    this.hooks.note(say(rewound, { revision: data.revision, trace, count }));
    this._shown();
    this.hooks.changed();
    return true;
  }

  _shown() {
    this.hooks.shown(this.revision);
    const showing = this.current ? R().showingNow : R().showing;
    this.hooks.say("past", say(showing, { revision: this.revision, current: this.current }));
  }

  _play(event) {
    if (!this.active) return;
    const changes = this.model.apply(event);
    this.hooks.play(event, this.model, changes);
    if (isStoreWrite(event) && event.revision !== this.revision) this._follow(event.revision);
    if (!this.timeline.queue.length) {
      this.hooks.note(R().newest);
    }
  }

  /** A replayed write moved the store on: read its objects at the new revision and draw those. */
  async _follow(revision) {
    const generation = this.generation;
    this.following = revision;
    const { status, data } = await this._objects(revision);
    if (generation !== this.generation || this.following !== revision || !this.active) return;
    if (status !== 200 || !data?.objects) {
      const [, problem] = refusal(revision, status, data);
      this.hooks.note(say(R().traceOnly, { problem }));
      return;
    }
    this.hooks.apply(this.model.applySnapshot(data));
    this.revision = data.revision;
    this.current = data.current_revision ?? this.current;
    this._shown();
    this.hooks.changed();
  }

  /**
   * Back to live: draw the live model again; the events that waited play (unless it was paused, and
   * `play` does not say to play them anyway: presenter mode's Home).
   */
  back({ play = false } = {}) {
    if (play && this.wasPaused !== null) this.wasPaused = false;
    this.generation += 1;
    const wasActive = this.active;
    this.timeline?.stop();
    this.timeline = null;
    this.active = false;
    this.model = null;
    this.revision = null;
    this.following = null;
    if (wasActive) this.hooks.draw(null);
    const waiting = this.live.timeline.queue.length;
    const paused = this.wasPaused;
    this._release();
    if (wasActive) {
      const back = paused
        ? ngettext(
            "Back to live: %(count)s event arrived meanwhile; they wait: resume to play them.",
            "Back to live: %(count)s events arrived meanwhile; they wait: resume to play them.",
            waiting,
          )
        : ngettext("Back to live: %(count)s event arrived meanwhile; they play now.", "Back to live: %(count)s events arrived meanwhile; they play now.", waiting);
      this.hooks.note(say(back, { count: waiting }));
    }
    this.hooks.say("live", R().live);
    this.hooks.changed();
  }
}
