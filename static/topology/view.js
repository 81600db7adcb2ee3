// The view: the topology as SVG, animated from the model's changes.
//
// The layout is fixed and never jumps: people on the left; the API server in the middle with its
// pipeline stages as a strip; etcd behind it on the right; the scheduler above and the controller
// manager below; the nodes (kubelet with its pods, kube-proxy) in a column on the right, each new node
// appended below the others (a node never moves once drawn); webhook servers bottom left. Every item is
// focusable and selectable with the keyboard (Enter or Space) as well as the mouse.
//
// A request is a packet labelled with its verb (and coloured by it: colour is never the only cue) that
// moves through the stages as `request.stage` events arrive and lights each one; a refused request
// turns red, shows "✕" and its reason, and bounces back. Watches are dashed standing lines that pulse
// per event. With animation off (or prefers-reduced-motion), the same states show without movement.
//
// `setModel(model)` draws another model from scratch (the page's rewind swaps in the cluster as it
// was at a revision, and back); nodes keep the places they had, so nothing jumps. `setPast(revision)`
// says in the diagram itself, in words, that it shows that revision and not now.

import { gettext, interpolate, lazy, ngettext, pgettext } from "./i18n.js";
import { STAGES, parseNodeId, partLook, requestTitle, stageName } from "./model.js";
import { nodeName } from "./narration.js";
import { podState, podStateWords, podSuffix, sortedPods } from "./pods.js";

const SVG = "http://www.w3.org/2000/svg";

export const WIDTH = 1060;
const BASE_HEIGHT = 640;
const API = { x: 250, y: 230, w: 400, h: 180 };
const STRIP = { x: 262, y: 262, cell: 42, h: 132 };
const ETCD = { x: 700, y: 270, w: 96, h: 96 };
const SCHEDULER = { x: 350, y: 40, w: 200, h: 56 };
const CONTROLLERS = { x: 300, y: 480, w: 300, h: 120 };
const USERS = { x: 24, y: 40, w: 150, h: 40, gap: 52 };
const NODES = { x: 840, y: 24, w: 200, h: 96, gap: 108 };
const WEBHOOKS = { x: 24, y: 560, w: 150, h: 36, gap: 44 };
const MAX_PACKETS = 80;
/** Pod chips a kubelet's box has room for (two rows of four); past that, the last says `+N`. */
const POD_CHIPS = 8;
/** Changes drawn from the model's current state: drawing one once shows the result of many. */
const REDRAWN = new Set(["pods", "controllers", "state", "quiet", "unscheduled"]);

function el(name, attributes = {}, parent = null) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (parent) parent.append(element);
  return element;
}

function text(parent, x, y, content, attributes = {}) {
  const element = el("text", { x, y, ...attributes }, parent);
  element.textContent = content;
  return element;
}

export const VERB_SHORT = {
  get: "GET",
  list: "LIST",
  watch: "WATCH",
  create: "CREATE",
  update: "UPDATE",
  patch: "PATCH",
  delete: "DELETE",
  deletecollection: "DELETE*",
};

/** The diagram's words, looked up once (i18n.js): `S().revision`. */
const S = lazy(() => ({
  user: gettext("user %(name)s"),
  webhook: gettext("webhook %(name)s"),
  noNodeObject: gettext("no Node object"),
  readyUnknown: gettext("Ready unknown"),
  noReady: gettext("no Ready condition"),
  cordoned: gettext("%(ready)s, cordoned"),
  inFlight: gettext("requests in flight"),
  past: gettext("⏪ Revision %(revision)s: the cluster as it was then, not now"),
  apiserver: gettext("kube-apiserver: the hub every request passes"),
  etcd: gettext("etcd: the store, one revision per write"),
  noRevision: gettext("revision –"),
  revision: gettext("revision %(revision)s%(then)s%(compacted)s"),
  then: gettext(" (then)"),
  compactedBelow: gettext(" (compacted < %(revision)s)"),
  stage: gettext("Pipeline stage %(number)s: %(stage)s"),
  controller: gettext("%(controller)s controller"),
  waiting: gettext("Waiting for the scheduler: %(pods)s"),
  leader: gettext("leader"),
  noLeader: gettext("no leader"),
  // Pieces of a part's label for screen readers, each with its own punctuation.
  colon: gettext(": %(detail)s"),
  comma: gettext(", %(detail)s"),
  stop: gettext(". %(detail)s"),
  separator: pgettext("between the parts of a list", "; "),
  podWords: gettext(", %(count)s pod(s)%(pods)s"),
  pod: gettext("pod %(pod)s (%(state)s)"),
  packet: gettext("request %(request)s from %(client)s"),
  packetTitle: gettext("%(request)s from %(client)s"),
  refused: gettext("✕ Refused at %(stage)s: %(reason)s"),
  noReason: gettext("no reason given"),
  watches: gettext("%(count)s watch(es) from %(from)s to %(to)s"),
  linkFault: gettext("Fault on the link from %(from)s to %(to)s: %(faults)s"),
}));

const say = (template, values) => interpolate(template, values, true);

/** A node's Node object as the store held it (rewound only): `Ready`, `NotReady, cordoned` ... */
export function storedNodeWords(stored) {
  if (!stored) return "";
  if (stored.missing) return S().noNodeObject;
  const ready = { True: "Ready", False: "NotReady", Unknown: S().readyUnknown }[stored.ready] || S().noReady;
  return stored.unschedulable ? say(S().cordoned, { ready }) : ready;
}

/** Room for a pod chip's label, and its width guessed without layout (9px text, a glyph before it). */
const CHIP_TEXT = 40;
function chipTextWidth(name) {
  let ems = 0;
  for (const char of name) ems += /[mwMW]/.test(char) ? 1.55 : /[ijlftr1.:|'!-]/.test(char) ? 0.6 : 1;
  return 9 + ems * 5.6;
}

/** A watch line's label: `2 watches`. */
function watchCount(count) {
  return say(ngettext("%(count)s watch", "%(count)s watches", count), { count });
}

function lane(id) {
  let hash = 0;
  for (const char of String(id)) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return (hash % 7) - 3; // -3 .. 3
}

export class TopologyView {
  constructor(svg, model, { onSelect } = {}) {
    this.svg = svg;
    this.model = model;
    this.onSelect = onSelect;
    this.animate = true;
    this.duration = 300;
    this.height = BASE_HEIGHT;
    this.nodeElements = new Map();
    this.packetElements = new Map();
    this.watchEdges = new Map(); // "from->to" -> {line, label, watches:Set}
    this.faultLinks = new Map(); // "from->to" -> the group that draws a fault on that link
    this.slots = { user: [], kubelet: [], webhook: [], other: [] };
    this.selected = null;
    this.undoing = []; // transient effects to undo later: {at, undo} (see `_later`)
    this.undoTimer = null;
    this.undoAt = null;
    svg.setAttribute("viewBox", `0 0 ${WIDTH} ${this.height}`);
    this.layers = {
      edges: el("g", { class: "layer-edges" }, svg),
      nodes: el("g", { class: "layer-nodes" }, svg),
      packets: el("g", { class: "layer-packets", "aria-label": S().inFlight }, svg),
    };
    // What a chapter's step points at (`spotlight`): drawn under the nodes, over nothing else.
    this.spotlightLayer = el("g", { class: "layer-spotlight", "aria-hidden": "true" });
    svg.insertBefore(this.spotlightLayer, this.layers.nodes);
    this.spotlit = { nodes: [], edges: [] };
    this._drawSkeleton();
    this.pastText = text(svg, WIDTH / 2, 16, "", { class: "past-label", "text-anchor": "middle", "data-view": "past" });
  }

  /**
   * Draw `model` instead of the one drawn now, from scratch: its nodes (each where it was before),
   * pods, controllers, states, watch lines and etcd's revision. Packets in flight are dropped.
   */
  setModel(model) {
    this.model = model;
    for (const id of [...this.packetElements.keys()]) this._removePacket(id);
    for (const edge of this.watchEdges.values()) edge.group.remove();
    this.watchEdges.clear();
    for (const link of this.faultLinks.values()) link.remove();
    this.faultLinks.clear();
    for (const [id, group] of [...this.nodeElements]) {
      if (id === "apiserver" || id === "etcd") continue;
      group.remove();
      this.nodeElements.delete(id);
    }
    this.nodeElements.get("etcd").classList.toggle("unseen", !model.nodes.has("etcd"));
    this.refusal.textContent = "";
    this._drawUnscheduled();
    for (const cell of this.stageCells.values()) cell.classList.remove("denied-here", "flash");
    for (const id of model.nodes.keys()) this.drawNode(id);
    for (const watch of model.watches.keys()) this._watchEdge(watch);
    for (const key of model.linkFaults?.keys() ?? []) this._drawLinkFault(key);
    this._drawRevision();
    this.highlight(this.selected);
    this.spotlight(this.spotlit);
  }

  /** Say in the diagram that it shows store revision `revision`, not now (null: live, say nothing). */
  setPast(revision) {
    const past = typeof revision === "number";
    this.svg.classList.toggle("past", past);
    this.pastText.textContent = past ? say(S().past, { revision }) : "";
    this._drawRevision();
  }

  setAnimate(animate) {
    this.animate = animate;
    this.svg.classList.toggle("animate", animate);
  }

  setDuration(ms) {
    const duration = Math.round(Math.max(60, Math.min(ms, 900)) / 10) * 10;
    if (duration === this.duration) return; // setting --step restyles the whole diagram: only on a change
    this.duration = duration;
    this.svg.style.setProperty("--step", `${duration}ms`);
  }

  // -- the fixed parts: API server with its stage strip, etcd, scheduler, controller manager --------

  _drawSkeleton() {
    const api = this._item("apiserver", "node apiserver", S().apiserver);
    el("rect", { x: API.x, y: API.y, width: API.w, height: API.h, rx: 10, class: "box" }, api);
    text(api, API.x + 12, API.y + 20, "kube-apiserver", { class: "title" });
    this.stageCells = new Map();
    this.stripLayer = el("g", { class: "strip" }, api);
    this.drawStages(STAGES);
    this.refusal = text(api, API.x + 12, API.y + API.h - 6, "", { class: "refusal" });
    this.nodeElements.set("apiserver", api);

    const etcd = this._item("etcd", "node etcd", S().etcd);
    el("ellipse", { cx: ETCD.x + ETCD.w / 2, cy: ETCD.y + 12, rx: ETCD.w / 2, ry: 12, class: "box" }, etcd);
    el("path", {
      d: `M${ETCD.x},${ETCD.y + 12} v${ETCD.h - 24} a${ETCD.w / 2},12 0 0 0 ${ETCD.w},0 v${-(ETCD.h - 24)}`,
      class: "box",
    }, etcd); // prettier-ignore
    text(etcd, ETCD.x + ETCD.w / 2, ETCD.y + 46, "etcd", { class: "title", "text-anchor": "middle" });
    this.revisionText = text(etcd, ETCD.x + ETCD.w / 2, ETCD.y + 66, S().noRevision, {
      class: "small",
      "text-anchor": "middle",
    });
    el("line", { x1: API.x + API.w, y1: ETCD.y + ETCD.h / 2, x2: ETCD.x, y2: ETCD.y + ETCD.h / 2, class: "link" }, this.layers.edges);
    this.nodeElements.set("etcd", etcd);
    etcd.classList.add("unseen");
    const x = SCHEDULER.x + SCHEDULER.w / 2;
    this.unscheduledText = text(this.layers.nodes, x, SCHEDULER.y + SCHEDULER.h + 16, "", { class: "small unscheduled", "text-anchor": "middle" });
    this.unscheduledTitle = el("title", {}, this.unscheduledText);
  }

  /**
   * Draw the pipeline strip: one cell per stage, in order (the server names them in its hello, from
   * the one list in controlplane/trace/schema.py). Cells keep STRIP.cell's width while they fit.
   */
  drawStages(stages) {
    this.stripLayer.replaceChildren();
    this.stageCells = new Map();
    this.cellWidth = Math.min(STRIP.cell, Math.floor((API.w - 24) / Math.max(1, stages.length)));
    stages.forEach((stage, i) => {
      const name = stageName(stage);
      const cell = el("g", { class: "stage", "data-stage": stage }, this.stripLayer);
      const x = STRIP.x + i * this.cellWidth;
      el("rect", { x, y: STRIP.y, width: this.cellWidth - 4, height: STRIP.h, rx: 4 }, cell);
      const label = text(cell, 0, 0, name, { class: "stage-label" });
      label.setAttribute("transform", `translate(${x + this.cellWidth / 2 + 2} ${STRIP.y + STRIP.h - 8}) rotate(-90)`);
      el("title", {}, cell).textContent = say(S().stage, { number: i + 1, stage: name });
      this.stageCells.set(stage, cell);
    });
  }

  _item(key, className, label) {
    const group = el("g", { class: className, tabindex: 0, role: "button", "aria-label": label, "data-node": key }, this.layers.nodes);
    const select = () => this.onSelect?.({ node: key });
    group.addEventListener("click", select);
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        select();
      }
    });
    return group;
  }

  // -- where things are ---------------------------------------------------------------------------

  _slot(kind, id) {
    const list = this.slots[kind];
    let index = list.indexOf(id);
    if (index < 0) index = list.push(id) - 1;
    return index;
  }

  /** Where a node sits (its box) and where packets leave it (its anchor). */
  place(id) {
    const { kind } = parseNodeId(id);
    if (kind === "apiserver") return { ...API, ax: API.x, ay: API.y + API.h / 2 };
    if (kind === "etcd") return { ...ETCD, ax: ETCD.x, ay: ETCD.y + ETCD.h / 2 };
    if (kind === "scheduler") return { ...SCHEDULER, ax: SCHEDULER.x + SCHEDULER.w / 2, ay: SCHEDULER.y + SCHEDULER.h };
    if (kind === "controller-manager") return { ...CONTROLLERS, ax: CONTROLLERS.x + CONTROLLERS.w / 2, ay: CONTROLLERS.y };
    if (kind === "kubelet" || kind === "kube-proxy") {
      const { name } = parseNodeId(id);
      const i = this._slot("kubelet", `kubelet:${name}`);
      const box = { x: NODES.x, y: NODES.y + i * NODES.gap, w: NODES.w, h: NODES.h };
      if (kind === "kube-proxy") return { ...box, ax: box.x, ay: box.y + box.h - 16 };
      return { ...box, ax: box.x, ay: box.y + 22 };
    }
    if (kind === "webhook") {
      const i = this._slot("webhook", id);
      const box = { x: WEBHOOKS.x, y: WEBHOOKS.y + i * WEBHOOKS.gap, w: WEBHOOKS.w, h: WEBHOOKS.h };
      return { ...box, ax: box.x + box.w, ay: box.y + box.h / 2 };
    }
    // People (user:<name>) and anything the schema adds later: the left column.
    const i = this._slot(kind === "user" ? "user" : "other", id);
    const column = kind === "user" ? USERS : { ...USERS, y: 300 };
    const box = { x: column.x, y: column.y + i * column.gap, w: column.w, h: column.h };
    return { ...box, ax: box.x + box.w, ay: box.y + box.h / 2 };
  }

  _grow(bottom) {
    if (bottom + 20 > this.height) {
      this.height = bottom + 20;
      this.svg.setAttribute("viewBox", `0 0 ${WIDTH} ${this.height}`);
    }
  }

  // -- nodes --------------------------------------------------------------------------------------

  drawNode(id) {
    const node = this.model.nodes.get(id);
    if (!node) return;
    if (id === "etcd" || id === "apiserver") {
      this.nodeElements.get(id)?.classList.remove("unseen");
      return;
    }
    if (this.nodeElements.has(id)) return;
    const { kind, name } = parseNodeId(id);
    if (kind === "kube-proxy") {
      this.drawNode(`kubelet:${name}`);
      const box = this.place(id);
      const group = this._item(id, "node kube-proxy", nodeName(id));
      el("rect", { x: box.x + 8, y: box.y + box.h - 26, width: 84, height: 20, rx: 4, class: "box" }, group);
      text(group, box.x + 14, box.y + box.h - 12, "kube-proxy", { class: "small" });
      this.nodeElements.set(id, group);
      return;
    }
    const box = this.place(id);
    this._grow(box.y + box.h);
    const group = this._item(id, `node ${kind}`, nodeName(id));
    if (this.spotlit?.nodes.includes(id)) group.classList.add("spotlit");
    if (this.spotlit?.edges.some((edge) => edge.includes(id))) queueMicrotask(() => this.spotlight(this.spotlit));
    group.boxRect = el("rect", { x: box.x, y: box.y, width: box.w, height: box.h, rx: 8, class: "box" }, group);
    const title = kind === "kubelet" ? name : kind === "user" ? say(S().user, { name }) : kind === "webhook" ? say(S().webhook, { name }) : id;
    text(group, box.x + 10, box.y + 18, title, { class: "title" });
    if (kind === "kubelet") {
      text(group, box.x + box.w - 10, box.y + 18, "kubelet", { class: "small", "text-anchor": "end" });
      group.podLayer = el("g", { class: "pods" }, group);
    }
    if (kind === "controller-manager") group.controllerLayer = el("g", { class: "controllers" }, group);
    group.stateText = text(group, box.x + box.w - 10, box.y + box.h - 8, "", { class: "small state", "text-anchor": "end" });
    // The width the state line has: a kubelet's shares its bottom line with the kube-proxy chip.
    group.stateRoom = kind === "kubelet" ? box.w - 110 : box.w - 20;
    // The part's background traffic, folded (background.js): a short line; the sentence in its title.
    // The title line, where there is room: kubelets and the controller manager have pods and
    // controllers below, and the scheduler's bottom line says its state.
    const quiet =
      kind === "kubelet"
        ? [box.x + box.w - 62, box.y + 18, "end"]
        : kind === "controller-manager" || kind === "scheduler"
          ? [box.x + box.w - 10, box.y + 18, "end"]
          : [box.x + 10, box.y + box.h - 8, "start"];
    group.quietText = text(group, quiet[0], quiet[1], "", { class: "small quiet", "text-anchor": quiet[2] });
    group.quietTitle = el("title", {}, group.quietText);
    this.nodeElements.set(id, group);
    if (kind === "kubelet") this._drawPods(id);
    if (kind === "controller-manager") this._drawControllers(id);
    this._drawState(id);
    this._drawQuiet(id);
  }

  /** A part's folded background traffic: `♻ Lease 2 s`, and the whole sentence for who asks. */
  _drawQuiet(id) {
    const group = this.nodeElements.get(id);
    const node = this.model.nodes.get(id);
    if (!group?.quietText || !node) return;
    const short = node.quietShort ? `♻ ${node.quietShort}` : "";
    if (group.quietText.textContent !== short) {
      group.quietText.textContent = short;
      group.quietTitle = el("title", {}, group.quietText);
    }
    group.quietTitle.textContent = node.quiet || "";
    this._drawState(id);
  }

  /** Pods the store holds that no node runs yet, counted under the scheduler. */
  _drawUnscheduled() {
    const pods = this.model.unscheduledPods ? this.model.unscheduledPods() : [];
    const names = pods.map((pod) => pod.key);
    const count = pods.length;
    this.unscheduledText.textContent = count ? say(ngettext("%(count)s pod to schedule", "%(count)s pods to schedule", count), { count }) : "";
    this.unscheduledTitle.textContent = count ? say(S().waiting, { pods: names.join(", ") }) : "";
  }

  _drawState(id) {
    const group = this.nodeElements.get(id);
    const node = this.model.nodes.get(id);
    if (!group || !node) return;
    const look = partLook(node);
    group.classList.toggle("stopped", look.stopped);
    group.classList.toggle("faulted", look.faulted);
    if (!group.stateText) return;
    const faults = node.faults?.size ? [...node.faults].join(", ") : "";
    const stored = storedNodeWords(node.stored);
    // Short (the Lease's holder is in the inspector): a fault is a ⚠ here, named in the line's tooltip.
    const leads = node.leader === undefined ? "" : node.leader ? S().leader : S().noLeader;
    const words = [node.state, stored, leads].filter(Boolean).join(" · ");
    const mark = faults ? " ⚠" : "";
    group.stateText.textContent = `${words}${mark}`;
    if (group.stateText.getComputedTextLength?.() > group.stateRoom && stored) {
      // Too long for its box (a stopped kubelet on an Unknown node): what kubectl shows comes first.
      group.stateText.textContent = `${stored}${mark}`;
    }
    if (faults) el("title", {}, group.stateText).textContent = `⚠ ${faults}`;
    const state = words ? say(S().comma, { detail: words }) : "";
    const quiet = node.quiet ? say(S().stop, { detail: node.quiet }) : "";
    group.setAttribute("aria-label", `${nodeName(id)}${state}${faults}${group.podWords ?? ""}${quiet}`);
  }

  /**
   * A kubelet's pods as chips, sorted by namespace and name (so they do not jump around): each says
   * its state by colour, outline and glyph, and shows the part of its name that tells it apart
   * (pods.js). Up to `POD_CHIPS` fit the box; past that, the last place is a `+N` button that asks
   * the inspector for the whole list (`onSelect({node, pods: true})`).
   */
  _drawPods(id) {
    const group = this.nodeElements.get(id);
    const node = this.model.nodes.get(id);
    if (!group?.podLayer || !node) return;
    group.podLayer.replaceChildren();
    const box = this.place(id);
    const pods = sortedPods(node.pods);
    const shown = pods.length > POD_CHIPS ? pods.slice(0, POD_CHIPS - 1) : pods;
    const at = (i) => ({ x: box.x + 8 + (i % 4) * 48, y: box.y + 28 + Math.floor(i / 4) * 22 });
    shown.forEach((pod, i) => {
      const { x, y } = at(i);
      const chip = el("g", { class: `pod pod-${pod.state}`, "data-pod": pod.key }, group.podLayer);
      el("rect", { x, y, width: 44, height: 18, rx: 9 }, chip);
      const suffix = podSuffix(pod);
      const name = suffix.length > 9 ? `${suffix.slice(0, 8)}…` : suffix;
      const label = text(chip, x + 22, y + 12.5, "", { class: "chip-label", "text-anchor": "middle" });
      el("tspan", { class: "chip-glyph" }, label).textContent = `${podState(pod).glyph}\u2009`;
      el("tspan", {}, label).textContent = name;
      if (chipTextWidth(name) > CHIP_TEXT) {
        label.setAttribute("textLength", CHIP_TEXT); // squeezed to fit, rather than spill over the chip
        label.setAttribute("lengthAdjust", "spacingAndGlyphs");
      }
      // As before (tests/browser/test_rewind.py reads these titles); the group's aria-label has the words.
      el("title", {}, chip).textContent = say(S().pod, { pod: pod.key, state: pod.state });
    });
    if (pods.length > shown.length) this._drawMorePods(id, group, at(shown.length), pods.length - shown.length);
    // The keyboard's and screen reader's way to every pod and its state: the group's label, which
    // _drawState writes (its state, then these words).
    const listed = pods.map((pod) => `${pod.key} ${podStateWords(pod)}`).join(S().separator);
    const count = pods.length;
    group.podWords = say(S().podWords, { count, pods: listed ? say(S().colon, { detail: listed }) : "" });
    this._drawState(id);
  }

  /** The `+N` chip: a button of its own, which the node's group under it does not also answer. */
  _drawMorePods(id, group, { x, y }, count) {
    const { name } = parseNodeId(id);
    const more = el("g", {
      class: "pods-more",
      tabindex: 0,
      role: "button",
      "data-pods-more": id,
      "aria-label": say(ngettext("%(count)s more pod on %(node)s: show them all", "%(count)s more pods on %(node)s: show them all", count), { count, node: name }),
    }, group.podLayer); // prettier-ignore
    el("rect", { x, y, width: 44, height: 18, rx: 4 }, more);
    text(more, x + 22, y + 12.5, `+${count}`, { class: "chip-label", "text-anchor": "middle" });
    el("title", {}, more).textContent = say(
      ngettext("%(count)s more pod: show them all in the inspector", "%(count)s more pods: show them all in the inspector", count),
      { count },
    );
    const show = (event) => {
      event.stopPropagation();
      this.onSelect?.({ node: id, pods: true });
    };
    more.addEventListener("click", show);
    more.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        show(event);
      }
    });
  }

  _drawControllers(id) {
    const group = this.nodeElements.get(id);
    const node = this.model.nodes.get(id);
    if (!group?.controllerLayer || !node) return;
    group.controllerLayer.replaceChildren();
    group.controllerChips = new Map();
    // Three chips a row; the box grows downwards past three rows, so that its state line stays under
    // the last row, whatever the number of controllers the controller manager runs.
    const rows = Math.max(3, Math.ceil(node.controllers.size / 3));
    const height = 28 + rows * 24 + 20;
    group.boxRect?.setAttribute("height", height);
    group.stateText?.setAttribute("y", CONTROLLERS.y + height - 8);
    this._grow(CONTROLLERS.y + height);
    [...node.controllers].forEach((controller, i) => {
      const x = CONTROLLERS.x + 10 + (i % 3) * 96;
      const y = CONTROLLERS.y + 28 + Math.floor(i / 3) * 24;
      const chip = el("g", { class: "controller" }, group.controllerLayer);
      el("rect", { x, y, width: 92, height: 20, rx: 4 }, chip);
      // Long names keep their start and their end: `garbagecollector-attempt-to-orphan` and
      // `...-to-delete` must not read the same.
      text(chip, x + 46, y + 14, controller.length > 14 ? `${controller.slice(0, 6)}…${controller.slice(-7)}` : controller, {
        class: "chip-label",
        "text-anchor": "middle",
      });
      el("title", {}, chip).textContent = say(S().controller, { controller });
      group.controllerChips.set(controller, chip);
    });
  }

  // -- changes from the model ---------------------------------------------------------------------

  /**
   * Show the changes of many events at once, without transient effects (catching up, skipping ahead).
   * What is drawn from the model's current state (a node's pods, controllers and state, the store's
   * revision) is drawn once, however many of the events changed it; the rest keeps its order.
   */
  handleQuietly(changes) {
    const redraw = new Map();
    const ordered = [];
    for (const change of changes) {
      if (change.kind === "store") redraw.set("store", change);
      else if (REDRAWN.has(change.kind)) redraw.set(`${change.kind} ${change.id}`, change);
      else ordered.push(change);
    }
    this.handle(ordered, { quiet: true });
    this.handle([...redraw.values()], { quiet: true });
  }

  /** Show the changes of one event; `quiet` applies them without transient effects (catching up). */
  handle(changes, { quiet = false } = {}) {
    for (const change of changes) {
      switch (change.kind) {
        case "node":
          this.drawNode(change.id);
          break;
        case "pods":
          this._drawPods(change.id);
          break;
        case "controllers":
          this._drawControllers(change.id);
          break;
        case "state":
          this._drawState(change.id);
          break;
        case "link":
          this._drawLinkFault(change.key);
          break;
        case "quiet":
          this._drawQuiet(change.id);
          break;
        case "unscheduled":
          this._drawUnscheduled();
          break;
        case "request-start":
          if (!quiet) this._packetStart(change.id);
          break;
        case "request-stage":
          if (!quiet) this._packetStage(change.id, change.stage, change.outcome);
          break;
        case "request-end":
          if (quiet) this._removePacket(change.id);
          else this._packetEnd(change.id);
          break;
        case "store":
          this._drawRevision();
          if (!quiet && change.write !== false) this._flash(this.nodeElements.get("etcd"));
          break;
        case "watch-open":
          this._watchEdge(change.watch);
          break;
        case "watch-pulse": {
          const edge = this._watchEdge(change.watch);
          if (!quiet && edge) this._pulse(edge);
          break;
        }
        case "watch-close":
          this._dropWatch(change.watch);
          break;
        case "work":
          if (!quiet) {
            this._flash(this.nodeElements.get(change.id));
            const chip = change.controller && this.nodeElements.get(change.id)?.controllerChips?.get(change.controller);
            if (chip) this._flash(chip);
          }
          break;
        default:
          break;
      }
    }
  }

  _drawRevision() {
    const { revision, compacted } = this.model;
    const then = this.svg.classList.contains("past") ? S().then : "";
    this.revisionText.textContent = revision
      ? say(S().revision, { revision, then, compacted: compacted ? say(S().compactedBelow, { revision: compacted }) : "" })
      : S().noRevision;
  }

  _flash(element) {
    if (!element) return;
    element.classList.add("flash");
    element.flashUntil = performance.now() + this.duration * 2;
    if (!element.flashing) {
      element.flashing = true;
      this._later(this.duration * 2, () => this._unflash(element));
    }
  }

  _unflash(element) {
    const left = element.flashUntil - performance.now();
    if (left > 1) {
      this._later(left, () => this._unflash(element)); // flashed again meanwhile
      return;
    }
    element.flashing = false;
    element.classList.remove("flash");
  }

  /**
   * Undo a transient effect in `ms` (switch a flash off, remove a dot, send a packet home). One timer
   * serves them all: at hundreds of events a second, a timer each costs more than the effects.
   */
  _later(ms, undo) {
    const at = performance.now() + ms;
    this.undoing.push({ at, undo });
    if (this.undoAt === null || at < this.undoAt) this._wakeAt(at);
  }

  _wakeAt(at) {
    clearTimeout(this.undoTimer);
    this.undoAt = at;
    this.undoTimer = setTimeout(() => this._undoDue(), Math.max(0, at - performance.now()));
  }

  _undoDue() {
    this.undoAt = null;
    const now = performance.now() + 1;
    const waiting = this.undoing;
    this.undoing = [];
    for (const item of waiting) {
      if (item.at <= now) item.undo();
      else this.undoing.push(item);
    }
    if (this.undoing.length) this._wakeAt(Math.min(...this.undoing.map((item) => item.at)));
  }

  // -- packets ------------------------------------------------------------------------------------

  _packetStart(id) {
    const request = this.model.requests.get(id);
    if (!request || this.packetElements.has(id)) return;
    while (this.packetElements.size >= MAX_PACKETS) this._removePacket(this.packetElements.keys().next().value);
    const verb = VERB_SHORT[request.verb] || request.verb.toUpperCase();
    const group = el("g", {
      class: `packet verb-${request.verb}`,
      tabindex: 0,
      role: "button",
      "data-request": id,
      "aria-label": say(S().packet, { request: requestTitle(request), client: nodeName(request.from) }),
    }, this.layers.packets); // prettier-ignore
    el("rect", { x: -24, y: -9, width: 48, height: 18, rx: 9 }, group);
    group.label = text(group, 0, 4, verb, { class: "packet-label", "text-anchor": "middle" });
    el("title", {}, group).textContent = say(S().packetTitle, { request: requestTitle(request), client: nodeName(request.from) });
    const select = () => this.onSelect?.({ request: id });
    group.addEventListener("click", select);
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        select();
      }
    });
    const origin = this.place(request.from);
    group.origin = { x: origin.ax, y: origin.ay };
    this._moveTo(group, origin.ax, origin.ay, false);
    this.packetElements.set(id, group);
    if (this.selected?.requests?.has(id)) group.classList.add("in-chain");
    // Enter the API server's door on the next frame, so the move is seen.
    requestAnimationFrame(() => this._moveTo(group, API.x - 2, API.y + API.h / 2 + lane(id) * 6, this.animate));
  }

  _packetStage(id, stage, outcome) {
    let group = this.packetElements.get(id);
    if (!group) {
      this._packetStart(id);
      group = this.packetElements.get(id);
    }
    if (!group) return;
    const index = STAGES.indexOf(stage);
    const cell = this.stageCells.get(stage);
    if (cell) this._flash(cell);
    if (cell && outcome === "deny") cell.classList.add("denied-here");
    if (index >= 0) {
      const x = STRIP.x + index * STRIP.cell + STRIP.cell / 2 - 2;
      const y = STRIP.y + STRIP.h / 2 + lane(id) * 14;
      this._moveTo(group, x, y, this.animate);
    }
    if (outcome === "deny") {
      const request = this.model.requests.get(id);
      group.classList.add("denied");
      group.label.textContent = "✕ DENY";
      this.refusal.textContent = say(S().refused, { stage: stageName(stage), reason: request?.reason || S().noReason });
      if (cell) this._later(this.duration * 8, () => cell.classList.remove("denied-here"));
    }
  }

  _packetEnd(id) {
    const group = this.packetElements.get(id);
    const request = this.model.requests.get(id);
    if (!group) return;
    if (request && request.code >= 400 && request.state !== "denied") {
      group.classList.add("failed");
      group.label.textContent = String(request.code);
    } else if (request?.code) {
      group.classList.add("answered");
    }
    const hold = request?.state === "denied" ? this.duration * 3 : this.duration;
    this._later(hold, () => {
      this._moveTo(group, group.origin.x, group.origin.y, this.animate);
      group.classList.add("leaving");
      this._later(this.animate ? this.duration * 2 : this.duration * 4, () => this._removePacket(id, group));
    });
  }

  /** Remove a request's packet (only `group`, if given: not one drawn for the same request since). */
  _removePacket(id, group = this.packetElements.get(id)) {
    group?.remove();
    if (this.packetElements.get(id) === group) this.packetElements.delete(id);
  }

  _moveTo(group, x, y, animate) {
    group.classList.toggle("moving", Boolean(animate));
    group.style.transform = `translate(${x}px, ${y}px)`;
  }

  // -- watches ------------------------------------------------------------------------------------

  _watchEdge(watchId) {
    const watch = this.model.watches.get(watchId);
    if (!watch) return null;
    const key = `${watch.from}->${watch.to}`;
    let edge = this.watchEdges.get(key);
    if (!edge) {
      const a = this._edgePoint(watch.from);
      const b = this._edgePoint(watch.to);
      const group = el("g", { class: "watch", tabindex: 0, role: "button", "data-watch": key }, this.layers.edges);
      el("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y }, group);
      // The label sits near the end away from the API server, so the lines' labels do not pile up.
      const t = watch.to === "apiserver" ? 0.3 : 0.7;
      const label = text(group, a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t - 4, "", {
        class: "small watch-label",
        "text-anchor": "middle",
      });
      edge = { group, label, watches: new Set(), a, b };
      const select = () => this.onSelect?.({ watch: key });
      group.addEventListener("click", select);
      group.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          select();
        }
      });
      this.watchEdges.set(key, edge);
    }
    if (!edge.watches.has(watchId)) {
      edge.watches.add(watchId);
      this._labelEdge(edge, watch);
    }
    return edge;
  }

  _labelEdge(edge, watch) {
    const count = edge.watches.size;
    edge.label.textContent = watchCount(count);
    edge.group.setAttribute("aria-label", say(S().watches, { count, from: nodeName(watch.from), to: nodeName(watch.to) }));
  }

  _dropWatch(watchId) {
    for (const [key, edge] of this.watchEdges) {
      if (edge.watches.delete(watchId)) {
        if (edge.watches.size === 0) {
          edge.group.remove();
          this.watchEdges.delete(key);
        } else {
          edge.label.textContent = watchCount(edge.watches.size);
        }
      }
    }
  }

  /**
   * A fault on the link between a component and the API server (`partition-component`,
   * `link-latency`), or between the API server and a webhook's server (`webhook-down`, `webhook-slow`;
   * the box `webhook:*` stands for every webhook): a line in the fault's colour between the two,
   * crossed at its middle when the link is cut (✕) and marked with a clock face when it is slow (◔), named in full for screen readers.
   * The component's box is marked as well (`_drawState`); its watch lines end as the watches do.
   */
  _drawLinkFault(key) {
    this.faultLinks.get(key)?.remove();
    this.faultLinks.delete(key);
    const faults = this.model.linkFaults?.get(key);
    if (!faults?.size) return;
    const [from, to] = key.split("->");
    if (!this.nodeElements.has(from)) this.drawNode(from);
    const a = this._edgePoint(from);
    const b = this._edgePoint(to);
    const cut = faults.has("partition-component") || faults.has("webhook-down");
    const group = el("g", { class: `fault-link ${cut ? "cut" : "slow"}`, "data-link": key, role: "img" }, this.layers.edges);
    el("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y }, group);
    const mark = text(group, (a.x + b.x) / 2, (a.y + b.y) / 2 + 6, cut ? "✕" : "◔", {
      class: "fault-link-mark",
      "text-anchor": "middle",
    });
    const words = say(S().linkFault, { from: nodeName(from), to: nodeName(to), faults: [...faults].join(", ") });
    group.setAttribute("aria-label", words);
    el("title", {}, mark).textContent = words;
    this.faultLinks.set(key, group);
  }

  _edgePoint(id) {
    const box = this.place(id);
    // A node's kubelet and kube-proxy share its box: each line ends at its own part of it.
    const { kind } = parseNodeId(id);
    if (kind === "kubelet" || kind === "kube-proxy") return { x: box.ax, y: box.ay };
    return { x: box.x + box.w / 2, y: box.y + box.h / 2 };
  }

  _pulse(edge) {
    this._flash(edge.group);
    if (!this.animate) return;
    const dot = el("circle", { r: 5, class: "watch-dot" }, this.layers.edges);
    dot.style.transform = `translate(${edge.a.x}px, ${edge.a.y}px)`;
    requestAnimationFrame(() => {
      dot.classList.add("moving");
      dot.style.transform = `translate(${edge.b.x}px, ${edge.b.y}px)`;
    });
    this._later(this.duration * 2, () => dot.remove());
  }

  // -- selection ----------------------------------------------------------------------------------

  /**
   * Point at some parts of the diagram for a chapter's step: `nodes` (diagram ids) get an outline and
   * a marker, each of `edges` ([from, to]) a dashed line between its two ends. Parts not drawn yet are
   * outlined when they appear (drawNode calls this again). Empty lists point at nothing.
   */
  spotlight({ nodes = [], edges = [] } = {}) {
    this.spotlit = { nodes: [...nodes], edges: edges.map(([a, b]) => [a, b]) };
    const lit = new Set(this.spotlit.nodes);
    for (const [id, group] of this.nodeElements) group.classList.toggle("spotlit", lit.has(id));
    this.spotlightLayer.replaceChildren();
    for (const [from, to] of this.spotlit.edges) {
      // An end not drawn yet (the student's box before their first request) has no place: its edge
      // is drawn when it appears (drawNode spotlights again).
      if (!this.nodeElements.has(from) || !this.nodeElements.has(to)) continue;
      const a = this._edgePoint(from);
      const b = this._edgePoint(to);
      el("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "spotlight-edge", "data-edge": `${from}->${to}` }, this.spotlightLayer);
    }
    this.svg.classList.toggle("has-spotlight", lit.size > 0 || this.spotlit.edges.length > 0);
  }

  /** Mark the selected chain: its nodes, packets and watch lines get a dashed outline and a marker. */
  highlight(chain) {
    this.selected = chain;
    for (const [id, group] of this.nodeElements) group.classList.toggle("in-chain", chain?.nodes?.has(id) ?? false);
    for (const [id, group] of this.packetElements) group.classList.toggle("in-chain", chain?.requests?.has(id) ?? false);
    this.svg.classList.toggle("has-selection", Boolean(chain));
  }
}
