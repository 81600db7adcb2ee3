// The controls: pause/resume, step, speed (log scale), animation on/off, rewinding the diagram to a
// store revision (a scrubber from the compaction mark to now, a revision field, "Back to live"), and
// their keyboard keys; and the deep link in the URL hash (`#select=request:<id>&paused=<seq>`, or
// `#revision=<R>` for the cluster as it was at revision R), read on load and kept up to date with
// history.replaceState (no new history entry per click).

import { gettext, interpolate, lazy, ngettext } from "./i18n.js";
import { MAX_SPEED_EXP, MIN_SPEED_EXP, speedLabel, speedOf } from "./timeline.js";

/** The controls' words, looked up once (i18n.js): `update` runs after every step of the timeline. */
const C = lazy(() => ({
  notARevision: gettext("A revision is a whole number from 1 up."),
  live: gettext("live, revision %(revision)s"),
  past: gettext("revision %(revision)s, not now (now %(current)s)"),
  notKept: gettext("Revision %(revision)s is not kept: etcd keeps history only from revision %(compacted)s on."),
  speed: gettext("%(speed)s speed"),
  resume: gettext("Resume"),
  pause: gettext("Pause"),
  noneWaiting: gettext("no events waiting"),
  at: gettext("at event #%(seq)s"),
  noEvents: gettext("no events yet"),
  rewoundAt: gettext("rewound: at event #%(seq)s"),
}));

const say = (template, values) => interpolate(template, values, true);

/** Parse the hash: {select: {request|node|seq|watch}, paused: number|null, revision: number|null}. */
export function readHash(hash = window.location.hash) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ""));
  const number = (name) => {
    const value = params.has(name) ? Number(params.get(name)) : NaN;
    return Number.isInteger(value) && value >= 0 ? value : null;
  };
  const revision = number("revision");
  return { select: parseSelection(params.get("select")), paused: number("paused"), revision: revision || null };
}

export function parseSelection(value) {
  if (!value) return null;
  const colon = value.indexOf(":");
  if (colon < 0) return null;
  const kind = value.slice(0, colon);
  const rest = value.slice(colon + 1);
  if (kind === "request") return { request: rest };
  if (kind === "node") return { node: rest };
  if (kind === "watch") return { watch: rest };
  if (kind === "event" && /^\d+$/.test(rest)) return { seq: Number(rest) };
  return null;
}

export function selectionKey(selection) {
  if (!selection) return "";
  if (selection.request) return `request:${selection.request}`;
  if (selection.node) return `node:${selection.node}`;
  if (selection.watch) return `watch:${selection.watch}`;
  if (typeof selection.seq === "number") return `event:${selection.seq}`;
  return "";
}

export function writeHash({ select, paused, revision = null }) {
  const params = new URLSearchParams();
  const key = selectionKey(select);
  if (key) params.set("select", key);
  if (typeof revision === "number") params.set("revision", String(revision));
  else if (typeof paused === "number") params.set("paused", String(paused));
  const hash = params.toString();
  const url = `${window.location.pathname}${window.location.search}${hash ? `#${hash}` : ""}`;
  window.history.replaceState(null, "", url);
}

function setText(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

export class Controls {
  /**
   * @param {HTMLElement} root the controls' container
   * @param {{timeline, setAnimate: (on) => void, clearSelection: () => void, setSpeed?: (speed) => void,
   *   rewind?: {show: (revision) => void, back: () => void, revision: number|null}}} target
   *   `timeline` is the one the buttons drive: the live one, or the rewound history's
   * @param {{keys?: boolean}} options `keys: false` leaves the keyboard to the page (presenter mode,
   *   present.js, has keys of its own and calls the methods below)
   */
  constructor(root, target, { keys = true } = {}) {
    this.root = root;
    this.target = target;
    this.pauseButton = root.querySelector("[data-control=pause]");
    this.stepButton = root.querySelector("[data-control=step]");
    this.speedInput = root.querySelector("[data-control=speed]");
    this.speedOutput = root.querySelector("[data-control=speed-value]");
    this.animateInput = root.querySelector("[data-control=animate]");
    this.backgroundInput = root.querySelector("[data-control=background]");
    this.buffered = root.querySelector("[data-control=buffered]");
    this.position = root.querySelector("[data-control=position]");
    this.rewindForm = root.querySelector("[data-rewind=form]");
    this.rewindScrub = root.querySelector("[data-rewind=scrub]");
    this.rewindAt = root.querySelector("[data-rewind=at]");
    this.liveButton = root.querySelector("[data-rewind=live]");
    this.banner = root.querySelector("[data-rewind=banner]");
    this.marks = { current: 0, compacted: 0 };
    this.scrubShown = null; // what the scrubber was last drawn for (see `_renderScrub`)
    this.paused = null; // as the pause button shows it

    this.speedInput.min = String(MIN_SPEED_EXP);
    this.speedInput.max = String(MAX_SPEED_EXP);
    this.pauseButton.addEventListener("click", () => this.togglePause());
    this.stepButton.addEventListener("click", () => this.step());
    this.speedInput.addEventListener("input", () => this._speed());
    this.animateInput.addEventListener("change", () => target.setAnimate(this.animateInput.checked));
    this.backgroundInput?.addEventListener("change", () => target.setShowBackground?.(this.backgroundInput.checked));

    const reduced = window.matchMedia?.("(prefers-reduced-motion: reduce)");
    this.animateInput.checked = !(reduced?.matches ?? false);
    reduced?.addEventListener?.("change", () => {
      this.animateInput.checked = !reduced.matches;
      target.setAnimate(this.animateInput.checked);
    });
    target.setAnimate(this.animateInput.checked);
    this._speed();
    this.rewindForm?.addEventListener("submit", (event) => {
      event.preventDefault();
      const revision = Number(this.rewindAt.value);
      if (Number.isInteger(revision) && revision > 0) target.rewind?.show(revision);
      else this.say("error", C().notARevision);
    });
    // The scrubber reads on `change` (released, or each arrow key), not on every pixel of a drag; its
    // right end is now.
    this.rewindScrub?.addEventListener("input", () => {
      this.rewindAt.value = this.rewindScrub.value;
    });
    this.rewindScrub?.addEventListener("change", () => {
      const revision = Number(this.rewindScrub.value);
      if (revision >= this.marks.current) target.rewind?.back();
      else target.rewind?.show(revision);
    });
    this.liveButton?.addEventListener("click", () => target.rewind?.back());
    if (keys) document.addEventListener("keydown", (event) => this._key(event));
  }

  /** The store's marks, from whatever read them last: the scrubber runs from `compacted` to `current`. */
  setMarks({ current, compacted }) {
    if (typeof current === "number") this.marks.current = Math.max(this.marks.current, current);
    if (typeof compacted === "number") this.marks.compacted = Math.max(this.marks.compacted, compacted);
    this._renderScrub();
  }

  /** Draw the scrubber, only when what it shows changed (it is asked after every step). */
  _renderScrub() {
    if (!this.rewindScrub) return;
    const revision = this.target.rewind?.revision ?? null;
    const { current, compacted } = this.marks;
    if (this._scrubKey(revision) === this.scrubShown) return;
    this.rewindScrub.min = String(Math.max(1, compacted || 1));
    this.rewindScrub.max = String(Math.max(1, current, revision ?? 0));
    if (document.activeElement !== this.rewindScrub) this.rewindScrub.value = String(revision ?? current);
    this.rewindScrub.setAttribute(
      "aria-valuetext",
      revision === null ? say(C().live, { revision: current }) : say(C().past, { revision, current }),
    );
    if (this.liveButton) this.liveButton.disabled = revision === null;
    this.scrubShown = this._scrubKey(revision);
  }

  /** What the scrubber shows, drawn for `revision`: it needs drawing again when this changes. */
  _scrubKey(revision) {
    const { current, compacted } = this.marks;
    const focused = document.activeElement === this.rewindScrub;
    return `${revision} ${current} ${compacted} ${this.rewindScrub.value} ${focused}`;
  }

  /** The rewind's banner: what the diagram shows (`live`, `past`, `loading`, `compacted`, `error`). */
  say(state, text) {
    if (!this.banner) return;
    this.banner.dataset.state = state;
    setText(this.banner, text);
  }

  rewindBy(delta) {
    const rewind = this.target.rewind;
    if (!rewind) return;
    const from = rewind.revision ?? this.marks.current;
    const to = from + delta;
    if (to >= this.marks.current && delta > 0) rewind.back();
    else if (to >= Math.max(1, this.marks.compacted)) rewind.show(to);
    else this.say("compacted", say(C().notKept, { revision: to, compacted: this.marks.compacted }));
  }

  /** Show the cluster's background traffic one event at a time (or fold it again), switch and all. */
  setShowBackground(show) {
    if (this.backgroundInput) this.backgroundInput.checked = Boolean(show);
    this.target.setShowBackground?.(Boolean(show));
  }

  togglePause() {
    const { timeline } = this.target;
    timeline.setPaused(!timeline.paused);
  }

  step() {
    const { timeline } = this.target;
    if (!timeline.paused) timeline.setPaused(true);
    timeline.step();
  }

  _speed() {
    const speed = speedOf(this.speedInput.value);
    this.speedOutput.textContent = speedLabel(speed);
    this.speedInput.setAttribute("aria-valuetext", say(C().speed, { speed: speedLabel(speed) }));
    if (this.target.setSpeed) this.target.setSpeed(speed);
    else this.target.timeline.setSpeed(speed);
  }

  /** Set the speed to the nearest step of the slider (a chapter step slowing the animation). */
  setSpeed(speed) {
    const exp = Math.round(Math.log2(speed) * 2) / 2;
    this.speedInput.value = String(Math.min(MAX_SPEED_EXP, Math.max(MIN_SPEED_EXP, exp)));
    this._speed();
  }

  /** Pause (true) or play (false), as the pause button would. */
  setPaused(paused) {
    if (this.target.timeline.paused !== Boolean(paused)) this.togglePause();
  }

  nudgeSpeed(delta) {
    const value = Math.min(MAX_SPEED_EXP, Math.max(MIN_SPEED_EXP, Number(this.speedInput.value) + delta));
    this.speedInput.value = String(value);
    this._speed();
  }

  /**
   * Reflect the timeline's state: pause button, step availability, buffer size, position. Rewound,
   * `liveWaiting` is how many live events wait meanwhile (the timeline is then the history's). Called
   * after every step of the timeline, so it writes only what changed (a write makes the browser lay out
   * and paint the controls again, even with the same text).
   */
  update(lastSeq, { liveWaiting = null } = {}) {
    const { timeline } = this.target;
    const waiting = timeline.waiting ? timeline.waiting() : timeline.queue.length;
    if (this.paused !== timeline.paused) {
      this.paused = timeline.paused;
      this.pauseButton.setAttribute("aria-pressed", String(timeline.paused));
      this.pauseButton.textContent = timeline.paused ? C().resume : C().pause;
    }
    this.stepButton.disabled = timeline.paused && waiting === 0;
    if (liveWaiting === null) {
      const buffered = waiting ? say(ngettext("%(count)s event waiting", "%(count)s events waiting", waiting), { count: waiting }) : C().noneWaiting;
      setText(this.buffered, buffered);
      setText(this.position, lastSeq ? say(C().at, { seq: lastSeq }) : C().noEvents);
    } else {
      const after = say(ngettext("%(count)s recorded event after it", "%(count)s recorded events after it", waiting), { count: waiting });
      const live = say(ngettext("%(count)s live event waiting", "%(count)s live events waiting", liveWaiting), { count: liveWaiting });
      setText(this.buffered, `${after} · ${live}`);
      setText(this.position, say(C().rewoundAt, { seq: lastSeq }));
    }
    this._renderScrub();
  }

  _key(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    const typing = target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    if (typing && target.type !== "checkbox") return;
    switch (event.key) {
      case "p":
      case "k":
        this.togglePause();
        break;
      case ".":
      case "n":
        this.step();
        break;
      case "+":
      case "=":
        this.nudgeSpeed(0.5);
        break;
      case "-":
        this.nudgeSpeed(-0.5);
        break;
      case "a":
        this.animateInput.checked = !this.animateInput.checked;
        this.target.setAnimate(this.animateInput.checked);
        break;
      case "b":
        if (!this.backgroundInput) return;
        this.setShowBackground(!this.backgroundInput.checked);
        break;
      case "Escape":
        this.target.clearSelection();
        break;
      case "[":
        this.rewindBy(-1);
        break;
      case "]":
        this.rewindBy(1);
        break;
      case "l":
        this.target.rewind?.back();
        break;
      default:
        return;
    }
    event.preventDefault();
  }
}
