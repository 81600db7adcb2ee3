// The controls: pause/resume, step, speed (log scale), animation on/off, and their keyboard keys;
// and the deep link in the URL hash (`#select=request:<id>&paused=<seq>`), read on load and kept
// up to date with history.replaceState (no new history entry per click).

import { MAX_SPEED_EXP, MIN_SPEED_EXP, speedLabel, speedOf } from "./timeline.js";

/** Parse the hash: {select: {request|node|seq|watch}, paused: number|null}. */
export function readHash(hash = window.location.hash) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ""));
  const paused = params.has("paused") ? Number(params.get("paused")) : null;
  return { select: parseSelection(params.get("select")), paused: Number.isFinite(paused) ? paused : null };
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

export function writeHash({ select, paused }) {
  const params = new URLSearchParams();
  const key = selectionKey(select);
  if (key) params.set("select", key);
  if (typeof paused === "number") params.set("paused", String(paused));
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
   * @param {{timeline, setAnimate: (on) => void, clearSelection: () => void}} target
   */
  constructor(root, target) {
    this.root = root;
    this.target = target;
    this.pauseButton = root.querySelector("[data-control=pause]");
    this.stepButton = root.querySelector("[data-control=step]");
    this.speedInput = root.querySelector("[data-control=speed]");
    this.speedOutput = root.querySelector("[data-control=speed-value]");
    this.animateInput = root.querySelector("[data-control=animate]");
    this.buffered = root.querySelector("[data-control=buffered]");
    this.position = root.querySelector("[data-control=position]");
    this.paused = null; // as the pause button shows it

    this.speedInput.min = String(MIN_SPEED_EXP);
    this.speedInput.max = String(MAX_SPEED_EXP);
    this.pauseButton.addEventListener("click", () => this.togglePause());
    this.stepButton.addEventListener("click", () => this.step());
    this.speedInput.addEventListener("input", () => this._speed());
    this.animateInput.addEventListener("change", () => target.setAnimate(this.animateInput.checked));

    const reduced = window.matchMedia?.("(prefers-reduced-motion: reduce)");
    this.animateInput.checked = !(reduced?.matches ?? false);
    reduced?.addEventListener?.("change", () => {
      this.animateInput.checked = !reduced.matches;
      target.setAnimate(this.animateInput.checked);
    });
    target.setAnimate(this.animateInput.checked);
    this._speed();
    document.addEventListener("keydown", (event) => this._key(event));
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
    this.speedInput.setAttribute("aria-valuetext", `${speedLabel(speed)} speed`);
    this.target.timeline.setSpeed(speed);
  }

  nudgeSpeed(delta) {
    const value = Math.min(MAX_SPEED_EXP, Math.max(MIN_SPEED_EXP, Number(this.speedInput.value) + delta));
    this.speedInput.value = String(value);
    this._speed();
  }

  /**
   * Reflect the timeline's state: pause button, step availability, buffer size, position. Called after
   * every step of the timeline, so it writes only what changed (a write makes the browser lay out and
   * paint the controls again, even with the same text).
   */
  update(lastSeq) {
    const { timeline } = this.target;
    const waiting = timeline.queue.length;
    if (this.paused !== timeline.paused) {
      this.paused = timeline.paused;
      this.pauseButton.setAttribute("aria-pressed", String(timeline.paused));
      this.pauseButton.textContent = timeline.paused ? "Resume" : "Pause";
    }
    this.stepButton.disabled = timeline.paused && waiting === 0;
    setText(this.buffered, waiting ? `${waiting} event${waiting === 1 ? "" : "s"} waiting` : "no events waiting");
    setText(this.position, lastSeq ? `at event #${lastSeq}` : "no events yet");
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
      case "Escape":
        this.target.clearSelection();
        break;
      default:
        return;
    }
    event.preventDefault();
  }
}
