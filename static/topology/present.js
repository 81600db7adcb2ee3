// Presenter mode (templates/courses/lab/present.html): one cluster's live diagram full screen, driven
// by the keyboard alone, as a presentation clicker sends it (PageDown/PageUp, Right/Left, "b" or "."
// for a black screen, F5 and Escape).
//
// The topology is the cluster page's, mounted with `start(root, {keys: false})` (topology.js): its
// controls stay hidden and their keys off, and this module drives the same timeline through what
// `start` returns (`togglePause`, `step`, `nudgeSpeed`, `rewindBy`, `live`, `state`). Nothing of the
// diagram is done twice.
//
// Back (Left, PageUp) is rewind.js's: the diagram goes back to the moment before the last event the
// narration said, that is to the store revision of the newest write before it (`backRevision`), and the
// recorded events after it wait in the rewound timeline, so Right replays them one by one, the
// narration saying each again; Left again goes back one narrated event further. Rewind reads the store
// by revision, so events between two writes go back together. With nothing narrated yet, or no write
// held before it, Left goes one store revision back (the cluster page's "["). Home goes back to live
// and plays on.
//
// The fault panel ("f", rendered only for those who may break the cluster) lists the catalogue's kinds
// with a digit each; a kind that takes a parameter (the node it hits, the component) then lists the
// values it takes on this cluster, a digit each (courses.lab.presenter). Enter applies the
// chosen fault and "c" clears every fault of the cluster, both by a POST to the cluster's faults
// endpoint (courses.lab.views.cluster_faults), whose answer `{ok, message}` is shown in a toast.
//
// `actionFor(event, open)` (the keymap) and `backRevision` are pure functions (tests/js/present.test.mjs).

import { gettext, interpolate, lazy } from "./i18n.js";
import { isStoreWrite } from "./model.js";
import { heldEvents } from "./rewind.js";
import { speedLabel } from "./timeline.js";
import { start } from "./topology.js";

/** The presenter's words, looked up once (i18n.js). */
const W = lazy(() => ({
  live: gettext("▶ live"),
  paused: gettext("‖ paused"),
  past: gettext("◀◀ revision %(revision)s, replaying"),
  pastPaused: gettext("◀◀ revision %(revision)s, paused"),
  speed: gettext("speed %(speed)s"),
  chooseKind: gettext("Press a digit to choose a fault."),
  chooseValue: gettext("%(fault)s: press the digit of its target."),
  ready: gettext("%(fault)s: press Enter to apply it."),
  kindFirst: gettext("Choose a fault first: press its digit."),
  valueFirst: gettext("Choose its target first: press its digit."),
  sending: gettext("Asking the lab …"),
  noAnswer: gettext("The lab did not answer: %(error)s"),
}));

const say = (template, values) => interpolate(template, values, true);

/** How long a toast stays (ms). */
const TOAST_MS = 6000;

/**
 * What a key does in presenter mode: an action's name, or null (the browser does what it does).
 * `open` says what is shown: `{panel, help, black}`, and `canBreak` whether the page has a fault panel.
 */
export function actionFor(event, { panel = false, help = false, black = false, canBreak = false } = {}) {
  if (event.ctrlKey || event.metaKey || event.altKey) return null;
  const { key } = event;
  if (key === "F5") return "fullscreen";
  if (black) {
    // A black screen hides everything: a key that would act first brings the picture back.
    return actionFor(event, { canBreak }) ? "black" : null;
  }
  if (help && (key === "?" || key === "Escape")) return "help";
  if (panel) {
    if (/^[1-9]$/.test(key)) return "digit";
    if (key === "Enter") return "apply";
    if (key === "c") return "clear";
    if (key === "Backspace") return "undo";
    if (key === "Escape" || key === "f") return "panel";
  }
  switch (key) {
    case " ":
    case "k":
      return "pause";
    case "ArrowRight":
    case "PageDown":
    case "l":
      return "step";
    case "ArrowLeft":
    case "PageUp":
      return "back";
    case "Home":
      return "live";
    case "+":
    case "=":
      return "faster";
    case "-":
    case "_":
      return "slower";
    case "f":
      return canBreak ? "panel" : null;
    case "b":
    case ".":
      return "black";
    case "?":
      return "help";
    case "Escape":
      return "escape";
    default:
      return null;
  }
}

/**
 * The store revision "back" shows: that of the newest write in `events` (held, oldest first) before the
 * last narrated event (`narrated`: their seqs) at or before `moment` (the seq the diagram shows now);
 * null when nothing was narrated by then, or no write before it is held.
 */
export function backRevision(narrated, events, moment) {
  let last = null;
  for (const seq of narrated) if (seq <= moment && (last === null || seq > last)) last = seq;
  if (last === null) return null;
  let revision = null;
  for (const event of events) {
    if (event.seq >= last) break;
    if (isStoreWrite(event)) revision = event.revision;
  }
  return revision;
}

/** The fault panel: the chosen kind and its parameters' values, and the POSTs to the faults endpoint. */
class FaultPanel {
  constructor(root, { toast }) {
    this.root = root;
    this.toast = toast;
    this.url = root.dataset.url;
    this.csrf = root.dataset.csrf;
    this.kinds = [...root.querySelectorAll("[data-kind]")];
    // Each parameter a kind may take (`node`, `component`): its list of values, a digit each.
    this.lists = new Map([...root.querySelectorAll("[data-parameter]")].map((list) => [list.dataset.parameter, list]));
    this.chosenLine = root.querySelector("[data-present=chosen]");
    this.kind = null; // the chosen kind's button
    this.values = new Map(); // parameter -> the chosen value's button, in the order chosen
    this.busy = false;
    for (const button of this.kinds) button.addEventListener("click", () => this._click(() => this.chooseKind(button)));
    for (const [name, list] of this.lists) {
      for (const button of list.querySelectorAll("[data-value]")) {
        button.addEventListener("click", () => this._click(() => this.chooseValue(name, button)));
      }
    }
  }

  get open() {
    return !this.root.hidden;
  }

  toggle(open = !this.open) {
    this.root.hidden = !open;
    if (!open) this.reset();
  }

  /** A click chooses as its digit would; the focus goes back to the page, where the keys are. */
  _click(choose) {
    choose();
    document.activeElement?.blur?.();
  }

  /** The chosen kind's parameters, in order. */
  _parameters() {
    return this.kind ? this.kind.dataset.parameters.split(" ").filter(Boolean) : [];
  }

  /** The parameter the next digit chooses a value of (null: none left, the digit chooses a kind). */
  _next() {
    return this._parameters().find((name) => !this.values.has(name)) ?? null;
  }

  /** A digit: a value of the parameter the chosen kind waits for; else a kind. */
  digit(key) {
    const next = this._next();
    if (next) {
      const button = [...(this.lists.get(next)?.querySelectorAll("[data-value]") ?? [])].find((b) => b.dataset.key === key);
      if (button) this.chooseValue(next, button);
      return;
    }
    const kind = this.kinds.find((button) => button.dataset.key === key);
    if (kind) this.chooseKind(kind);
  }

  chooseKind(button) {
    this.kind = button;
    this.values.clear();
    this._render();
  }

  chooseValue(name, button) {
    if (!this._parameters().includes(name)) return;
    this.values.set(name, button);
    this._render();
  }

  undo() {
    const chosen = [...this.values.keys()];
    if (chosen.length) this.values.delete(chosen.at(-1));
    else this.kind = null;
    this._render();
  }

  reset() {
    this.kind = null;
    this.values.clear();
    this._render();
  }

  /** The chosen fault in words: the kind's label, its chosen values filled in, "…" for the others. */
  _label() {
    let text = this.kind.dataset.template;
    for (const name of this._parameters()) text = text.replaceAll(`{${name}}`, this.values.get(name)?.dataset.value ?? "…");
    return text;
  }

  _render() {
    for (const button of this.kinds) button.setAttribute("aria-pressed", String(button === this.kind));
    const wanted = this._parameters();
    const next = this._next();
    for (const [name, list] of this.lists) {
      list.hidden = !wanted.includes(name);
      list.dataset.state = name === next ? "next" : "";
      for (const button of list.querySelectorAll("[data-value]")) {
        button.setAttribute("aria-pressed", String(this.values.get(name) === button));
      }
    }
    const T = W();
    let text = T.chooseKind;
    if (this.kind && next) text = say(T.chooseValue, { fault: this._label() });
    else if (this.kind) text = say(T.ready, { fault: this._label() });
    this.chosenLine.textContent = text;
  }

  async apply() {
    if (!this.kind) return this.toast(W().kindFirst, false);
    if (this._next()) return this.toast(W().valueFirst, false);
    const form = { action: "apply", kind: this.kind.dataset.kind };
    for (const [name, button] of this.values) form[name] = button.dataset.value;
    if (await this._send(form)) this.toggle(false);
    return undefined;
  }

  async clearAll() {
    if (await this._send({ action: "clear-all" })) this.toggle(false);
  }

  /** POST the form; the answer's message in the toast. Resolves to whether it was done. */
  async _send(fields) {
    if (this.busy) return false;
    this.busy = true;
    this.toast(W().sending, true);
    const body = new FormData();
    for (const [name, value] of Object.entries(fields)) body.append(name, value);
    try {
      const response = await fetch(this.url, {
        method: "POST",
        body,
        credentials: "same-origin",
        headers: { "X-CSRFToken": this.csrf, Accept: "application/json" },
      });
      let answer = null;
      try {
        answer = await response.json();
      } catch {
        answer = null;
      }
      const ok = Boolean(response.ok && answer?.ok);
      this.toast(answer?.message || say(W().noAnswer, { error: `HTTP ${response.status}` }), ok);
      return ok;
    } catch (error) {
      this.toast(say(W().noAnswer, { error: String(error?.message || error) }), false);
      return false;
    } finally {
      this.busy = false;
    }
  }
}

/** Mount presenter mode on `root` (the page's `data-topology="root"`); returns the topology and parts. */
export function present(root) {
  const topology = start(root, { keys: false });
  const mode = root.querySelector("[data-present=mode]");
  const speed = root.querySelector("[data-present=speed]");
  const help = root.querySelector("[data-present=help]");
  const black = root.querySelector("[data-present=black]");
  const toastLine = root.querySelector("[data-present=toast]");
  let toastTimer = null;

  const toast = (text, ok) => {
    clearTimeout(toastTimer);
    toastLine.textContent = text;
    toastLine.dataset.state = ok ? "ok" : "error";
    toastLine.setAttribute("role", ok ? "status" : "alert");
    toastLine.hidden = false;
    toastTimer = setTimeout(() => {
      toastLine.hidden = true;
    }, TOAST_MS);
  };

  const panelRoot = root.querySelector("[data-present=faults]");
  const panel = panelRoot ? new FaultPanel(panelRoot, { toast }) : null;

  const render = () => {
    const { paused, speed: now, revision } = topology.state();
    const T = W();
    let state = paused ? "paused" : "live";
    let text = paused ? T.paused : T.live;
    if (revision !== null) {
      state = paused ? "past-paused" : "past";
      text = say(paused ? T.pastPaused : T.past, { revision });
    }
    if (mode.dataset.state !== state || mode.textContent !== text) {
      mode.dataset.state = state;
      mode.textContent = text;
    }
    const speedText = say(T.speed, { speed: speedLabel(now) });
    if (speed.textContent !== speedText) speed.textContent = speedText;
  };

  const fullscreen = () => {
    const done = document.fullscreenElement ? document.exitFullscreen?.() : document.documentElement.requestFullscreen?.();
    done?.catch?.(() => {});
  };

  const narration = root.querySelector("[data-topology=narration]");
  const back = () => {
    const narrated = [...narration.querySelectorAll("li[data-seq]:not([hidden])")].map((line) => Number(line.dataset.seq));
    const events = heldEvents(topology.model, topology.timeline.queue);
    const revision = backRevision(narrated, events, topology.shown().lastSeq);
    const now = topology.rewind.active ? topology.rewind.revision : Infinity;
    if (revision !== null && revision < now) topology.rewind.show(revision);
    else topology.rewindBy(-1);
  };

  const escape = () => {
    if (!black.hidden) black.hidden = true;
    else if (!help.hidden) help.hidden = true;
    else if (panel?.open) panel.toggle(false);
    else topology.select(null);
  };

  const act = {
    pause: () => topology.togglePause(),
    step: () => topology.step(),
    back,
    live: () => {
      topology.live({ play: true });
      topology.setPaused(false);
      topology.select(null); // and the address bar names no paused moment any more
    },
    faster: () => topology.nudgeSpeed(0.5),
    slower: () => topology.nudgeSpeed(-0.5),
    panel: () => panel?.toggle(),
    black: () => {
      black.hidden = !black.hidden;
    },
    help: () => {
      help.hidden = !help.hidden;
    },
    fullscreen,
    escape,
    digit: (event) => panel?.digit(event.key),
    apply: () => panel?.apply(),
    clear: () => panel?.clearAll(),
    undo: () => panel?.undo(),
  };

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented) return; // a part of the diagram took it (Enter or Space on a node)
    const action = actionFor(event, { panel: Boolean(panel?.open), help: !help.hidden, black: !black.hidden, canBreak: Boolean(panel) });
    if (!action) return;
    event.preventDefault();
    act[action](event);
    render();
  });
  setInterval(render, 250);
  render();
  return { topology, panel, toast, actionFor };
}
