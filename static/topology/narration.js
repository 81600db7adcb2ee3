// The narration: one plain sentence per trace event, in a log that screen readers follow.
//
// `describe(event, model)` is pure (the browser tests call it directly); `Narration` keeps the last
// few hundred sentences in an `aria-live="polite"` list, each a button that selects its event.
//
// The sentences are in the page's language (i18n.js): each is one message with named values, so a
// translation can order them as its grammar wants. What the trace names stays as it is: event types,
// verbs, resources, keys, ids, HTTP status lines and the reasons the control plane gives, which
// speaks Kubernetes' English as kube-apiserver does.

import { capital, gettext, interpolate, lazy, ngettext, pgettext } from "./i18n.js";
import { parseNodeId, requestTitle, stageName } from "./model.js";

const STATUS_TEXT = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  410: "Gone",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** How the parts of the diagram are called, looked up once. */
const NAMES = lazy(() => ({
  anonymous: gettext("an anonymous client"),
  user: gettext("user %(name)s"),
  apiserver: gettext("the API server"),
  scheduler: gettext("the scheduler"),
  controllerManager: gettext("the controller manager"),
  kubelet: gettext("the kubelet on %(node)s"),
  kubeProxy: gettext("kube-proxy on %(node)s"),
  webhook: gettext("webhook %(name)s"),
  something: gettext("something"),
  controller: gettext("the %(controller)s controller"),
}));

/** A diagram node as people say it: `kubelet:node-1` -> "the kubelet on node-1". */
export function nodeName(id) {
  const { kind, name } = parseNodeId(id);
  const names = NAMES();
  switch (kind) {
    case "user":
      return name === "anonymous" ? names.anonymous : interpolate(names.user, { name }, true);
    case "apiserver":
      return names.apiserver;
    case "etcd":
      return "etcd";
    case "scheduler":
      return names.scheduler;
    case "controller-manager":
      return names.controllerManager;
    case "kubelet":
      return interpolate(names.kubelet, { node: name }, true);
    case "kube-proxy":
      return interpolate(names.kubeProxy, { node: name }, true);
    case "webhook":
      return interpolate(names.webhook, { name }, true);
    default:
      return id ? String(id) : names.something;
  }
}

/**
 * The sentences, looked up once: `describe` says hundreds of them a second. A sentence that starts
 * with a value gets it twice, `%(Request)s` with a capital first letter (English starts a sentence so)
 * and `%(request)s` as it is: each language's sentence uses the one it needs (i18n.js `capital`).
 */
const SAY = lazy(() => ({
  aRequest: gettext("a request"),
  anonymousSender: gettext("a client (not yet authenticated)"),
  // Pieces that end a sentence: each brings its own punctuation, which a language may change.
  detail: gettext(": %(detail)s"),
  paren: gettext(" (%(detail)s)"),
  received: gettext("%(Sender)s sent %(request)s (%(method)s %(path)s)."),
  stored: {
    create: gettext("%(Request)s passed storage: the API server created %(key)s at revision %(revision)s."),
    update: gettext("%(Request)s passed storage: the API server updated %(key)s at revision %(revision)s."),
    delete: gettext("%(Request)s passed storage: the API server deleted %(key)s at revision %(revision)s."),
    terminate: gettext(
      "%(Request)s passed storage: the API server marked Terminating %(key)s at revision %(revision)s.",
    ),
    other: gettext("%(Request)s passed storage: the API server wrote %(key)s at revision %(revision)s."),
  },
  stageRefused: gettext("Refused at %(stage)s: %(request)s%(detail)s."),
  stagePassed: gettext("%(Request)s passed %(stage)s%(detail)s."),
  answered: gettext("The API server answered %(request)s from %(client)s with %(code)s."),
  answeredIn: gettext("The API server answered %(request)s from %(client)s with %(code)s in %(ms)s ms."),
  theAuthorizer: gettext("The authorizer"),
  rbacAllowed: gettext("%(authorizer)s allowed %(user)s%(action)s%(reason)s."),
  rbacRefused: gettext("%(authorizer)s refused %(user)s%(action)s%(reason)s."),
  rbacAction: gettext(" to %(action)s"),
  flow: {
    queued: gettext("Flow control queued %(request)s%(level)s%(schema)s%(waited)s%(reason)s."),
    dispatched: gettext("Flow control let through %(request)s%(level)s%(schema)s%(waited)s%(reason)s."),
    rejected: gettext("Flow control rejected (429) %(request)s%(level)s%(schema)s%(waited)s%(reason)s."),
    other: gettext("Flow control %(outcome)s %(request)s%(level)s%(schema)s%(waited)s%(reason)s."),
  },
  flowLevel: gettext(" at priority level %(level)s"),
  flowSchema: gettext(" (FlowSchema %(flowschema)s)"),
  flowWaited: gettext(" after waiting %(ms)s ms"),
  admissionRefused: gettext("Admission plugin %(plugin)s (%(phase)s) refused the request%(patch)s%(detail)s."),
  admissionPassed: gettext("Admission plugin %(plugin)s (%(phase)s) passed the request%(patch)s%(detail)s."),
  admissionPatch: gettext(", patching %(count)s field(s)"),
  theStore: gettext("the store"),
  txnFailed: gettext("A store transaction on %(key)s failed its compare at revision %(revision)s."),
  txnWrote: gettext("The API server wrote %(key)s to etcd: revision %(revision)s."),
  txnRead: gettext("The API server read %(key)s from etcd (%(op)s) at revision %(revision)s."),
  compacted: gettext(
    "etcd compacted its history before revision %(revision)s: older reads and watches now get 410 Gone.",
  ),
  objects: gettext("objects"),
  watchOpened: gettext("%(Client)s opened a watch on %(what)s (%(watch)s) at %(server)s."),
  watchEvent: gettext("Watch %(watch)s told %(client)s: %(event)s %(object)s at revision %(revision)s."),
  watchClosed: gettext("Watch %(watch)s to %(client)s closed%(reason)s."),
  componentState: gettext("%(Component)s is %(state)s%(reason)s."),
  reconciled: gettext("The %(controller)s controller reconciled %(key)s: %(result)s%(error)s%(requeue)s."),
  requeue: gettext(", and will look again"),
  placed: gettext("The scheduler placed %(pod)s on %(node)s (%(feasible)s of %(total)s nodes fit)."),
  notPlaced: gettext("The scheduler could not place %(pod)s%(detail)s."),
  proxySync: gettext("kube-proxy on %(node)s rewrote its rules: %(rules)s rules%(reason)s."),
  faultApplied: gettext("Fault %(fault)s applied to %(target)s%(reason)s."),
  faultCleared: gettext("Fault %(fault)s on %(target)s cleared."),
  other: gettext("%(type)s at %(node)s."),
  background: gettext("%(Part)s %(activities)s."),
}));

function requestWords(event, model) {
  const request = model?.requests.get(event.id);
  return request ? requestTitle(request) : SAY().aRequest;
}

/** `piece` with `detail` in it, or "" when there is no detail. */
function optional(piece, detail) {
  return detail ? interpolate(piece, { detail }, true) : "";
}

const say = (template, values) => interpolate(template, values, true);

/** `table[key]` if the table has that key itself (a verb named `constructor` is not Object's). */
const own = (table, key) => (Object.hasOwn(table, key) ? table[key] : undefined);

/** One sentence that says what an event means. */
export function describe(event, model) {
  const T = SAY();
  const from = nodeName(event.from);
  switch (event.type) {
    case "request.received": {
      const sender = event.from === "user:anonymous" ? T.anonymousSender : from;
      return say(T.received, { Sender: capital(sender), sender, request: requestWords(event, model), method: event.method, path: event.path });
    }
    case "request.stage": {
      const stage = stageName(event.stage);
      const request = requestWords(event, model);
      if (event.stage === "storage" && event.outcome === "pass" && event.key && typeof event.revision === "number") {
        const template = own(T.stored, event.op) || T.stored.other;
        return say(template, { Request: capital(request), request, key: event.key, revision: event.revision });
      }
      const detail = optional(T.detail, event.detail);
      if (event.outcome === "deny") return say(T.stageRefused, { stage, request, detail });
      return say(T.stagePassed, { Request: capital(request), request, stage, detail });
    }
    case "request.completed": {
      const status = STATUS_TEXT[event.code] ? ` ${STATUS_TEXT[event.code]}` : "";
      const values = { request: requestWords(event, model), client: from, code: `${event.code}${status}` };
      if (typeof event.duration !== "number") return say(T.answered, values);
      return say(T.answeredIn, { ...values, ms: (event.duration * 1000).toFixed(1) });
    }
    case "rbac.decision": {
      const what = [event.verb, event.resource].filter(Boolean).join(" ");
      return say(event.allowed ? T.rbacAllowed : T.rbacRefused, {
        authorizer: event.authorizer || T.theAuthorizer,
        user: event.user || from,
        action: what ? say(T.rbacAction, { action: what }) : "",
        reason: optional(T.detail, event.reason),
      });
    }
    case "flowcontrol.decision": {
      const waited = typeof event.waited === "number" && event.waited > 0;
      return say(own(T.flow, event.outcome) || T.flow.other, {
        outcome: event.outcome,
        request: requestWords(event, model),
        level: event.priority_level ? say(T.flowLevel, { level: event.priority_level }) : "",
        schema: event.flowschema ? say(T.flowSchema, { flowschema: event.flowschema }) : "",
        waited: waited ? say(T.flowWaited, { ms: (event.waited * 1000).toFixed(1) }) : "",
        reason: optional(T.detail, event.reason),
      });
    }
    case "admission.step": {
      const patched = Array.isArray(event.patch) && event.patch.length;
      return say(event.outcome === "deny" ? T.admissionRefused : T.admissionPassed, {
        plugin: event.plugin,
        phase: event.phase,
        patch: patched ? say(T.admissionPatch, { count: event.patch.length }) : "",
        detail: optional(T.detail, event.detail),
      });
    }
    case "store.txn": {
      const key = event.key || event.writes?.[0]?.key || event.ops?.[0]?.key || "";
      const writes = Array.isArray(event.writes) ? event.writes.length > 0 : event.op === "txn";
      if (event.succeeded === false) return say(T.txnFailed, { key, revision: event.revision });
      if (writes) return say(T.txnWrote, { key: key || T.theStore, revision: event.revision });
      return say(T.txnRead, { key: key || T.theStore, op: event.op, revision: event.revision });
    }
    case "store.compact":
      return say(T.compacted, { revision: event.revision });
    case "watch.opened": {
      const client = nodeName(event.to);
      const what = event.resource || event.prefix || T.objects;
      return say(T.watchOpened, { Client: capital(client), client, what, watch: event.watch, server: from });
    }
    case "watch.event": {
      const object = [event.kind, [event.namespace, event.name].filter(Boolean).join("/")].filter(Boolean).join(" ");
      return say(T.watchEvent, {
        watch: event.watch,
        client: nodeName(event.to),
        event: event.event,
        object: object || event.key || "",
        revision: event.revision,
      });
    }
    case "watch.closed":
      return say(T.watchClosed, { watch: event.watch, client: nodeName(event.to), reason: optional(T.paren, event.reason) });
    case "component.state":
      return say(T.componentState, { Component: capital(from), component: from, state: event.state, reason: optional(T.paren, event.reason) });
    case "reconcile":
      return say(T.reconciled, {
        controller: event.controller,
        key: event.key,
        result: event.result,
        error: optional(T.paren, event.error),
        requeue: event.requeue || event.requeue_after ? T.requeue : "",
      });
    case "scheduler.decision": {
      const total = event.nodes ? Object.keys(event.nodes).length : 0;
      const feasible = Array.isArray(event.feasible) ? event.feasible.length : 0;
      if (event.chosen) return say(T.placed, { pod: event.pod, node: event.chosen, feasible, total });
      return say(T.notPlaced, { pod: event.pod, detail: optional(T.detail, event.message) });
    }
    case "proxy.sync":
      return say(T.proxySync, { node: event.node, rules: event.rules, reason: optional(T.paren, event.reason) });
    case "fault.applied":
      return say(T.faultApplied, { fault: event.fault, target: nodeName(event.target), reason: optional(T.paren, event.reason) });
    case "fault.cleared":
      return say(T.faultCleared, { fault: event.fault, target: nodeName(event.target) });
    default:
      return say(T.other, { type: event.type, node: from });
  }
}

/** What a burst's summary says of a group of requests (`%(who)s` did them), looked up once. */
const BURST = lazy(() => ({
  verbs: {
    create: gettext("%(who)s created %(count)s %(what)s"),
    update: gettext("%(who)s updated %(count)s %(what)s"),
    patch: gettext("%(who)s patched %(count)s %(what)s"),
    delete: gettext("%(who)s deleted %(count)s %(what)s"),
    deletecollection: gettext("%(who)s deleted collections of %(count)s %(what)s"),
    get: gettext("%(who)s read %(count)s %(what)s"),
    list: gettext("%(who)s listed %(count)s %(what)s"),
    watch: gettext("%(who)s watched %(count)s %(what)s"),
  },
  // Translators: %(verb)s is a verb of the API that has no sentence of its own, as the API spells it.
  other: gettext("%(who)s %(verb)s %(count)s %(what)s"),
  status: {
    create: gettext("%(who)s created the status of %(count)s %(what)s"),
    update: gettext("%(who)s updated the status of %(count)s %(what)s"),
    patch: gettext("%(who)s patched the status of %(count)s %(what)s"),
    delete: gettext("%(who)s deleted the status of %(count)s %(what)s"),
    deletecollection: gettext("%(who)s deleted collections of the status of %(count)s %(what)s"),
    get: gettext("%(who)s read the status of %(count)s %(what)s"),
    list: gettext("%(who)s listed the status of %(count)s %(what)s"),
    watch: gettext("%(who)s watched the status of %(count)s %(what)s"),
  },
  // Translators: %(verb)s is a verb of the API that has no sentence of its own, as the API spells it.
  statusOther: gettext("%(who)s %(verb)s the status of %(count)s %(what)s"),
  bound: gettext("%(who)s bound %(count)s %(what)s"),
  evicted: gettext("%(who)s evicted %(count)s %(what)s"),
  more: gettext("and %(count)s more kinds of request"),
  separator: pgettext("between the parts of a list", "; "),
}));

function noun(resource, n) {
  if (n !== 1 || !resource.endsWith("s") || resource.endsWith("ss")) return resource;
  return resource.slice(0, -1);
}

/** Who made a request, as people say it: the controller whose reconcile made it, when the trace says. */
function actor(event, model) {
  if (event.from === "controller-manager" && model) {
    const seq = model.workForRequest.get(event.id);
    const work = seq === undefined ? null : model.events.get(seq);
    if (work?.controller) return interpolate(NAMES().controller, { controller: work.controller }, true);
  }
  return nodeName(event.from);
}

function requestPhrase(who, verb, resource, subresource, count) {
  const B = BURST();
  if (subresource === "binding" && resource === "pods") return say(B.bound, { who, count, what: noun("pods", count) });
  if (subresource === "status") return say(own(B.status, verb) || B.statusOther, { who, verb, count, what: noun(resource, count) });
  if (subresource === "eviction") return say(B.evicted, { who, count, what: noun(resource, count) });
  const what = subresource ? `${resource}/${subresource}` : resource;
  return say(own(B.verbs, verb) || B.other, { who, verb, count, what: noun(what, count) });
}

/** `n` events of a type in a burst's summary: "96 watch events". */
function eventCount(type, n) {
  const count = { count: n };
  if (type === "watch.event") return say(ngettext("%(count)s watch event", "%(count)s watch events", n), count);
  if (type === "reconcile") return say(ngettext("%(count)s reconcile", "%(count)s reconciles", n), count);
  return say(ngettext("%(count)s scheduling decision", "%(count)s scheduling decisions", n), count);
}

/**
 * One sentence for events drawn at once to keep up with the cluster (a burst the animation could not
 * play in time): who did what, counted from the requests' own fields, then the rest by type. "To keep
 * up, 180 events were drawn at once: the replicaset controller created 20 pods; the scheduler bound 20
 * pods; 96 watch events."
 */
export function summariseBurst(events, model) {
  const groups = new Map();
  const rest = new Map();
  for (const event of events) {
    if (event.type === "request.received") {
      const request = model?.requests.get(event.id);
      const verb = event.verb || request?.verb || "";
      const resource = event.resource || request?.resource || event.path || "";
      const subresource = event.subresource || request?.subresource || "";
      const who = actor(event, model);
      const key = `${who}\u0000${verb}\u0000${resource}\u0000${subresource}`;
      const group = groups.get(key) || { who, verb, resource, subresource, count: 0 };
      group.count += 1;
      groups.set(key, group);
    } else if (event.type === "watch.event" || event.type === "reconcile" || event.type === "scheduler.decision") {
      rest.set(event.type, (rest.get(event.type) || 0) + 1);
    }
  }
  const B = BURST();
  const parts = [...groups.values()]
    .sort((a, b) => b.count - a.count)
    .slice(0, 5)
    .map((g) => requestPhrase(g.who, g.verb, g.resource, g.subresource, g.count));
  if (groups.size > 5) parts.push(say(B.more, { count: groups.size - 5 }));
  for (const [type, n] of rest) parts.push(eventCount(type, n));
  const what = optional(SAY().detail, parts.join(B.separator));
  const n = events.length;
  return say(ngettext("To keep up, %(count)s event was drawn at once%(parts)s.", "To keep up, %(count)s events were drawn at once%(parts)s.", n), {
    count: n,
    parts: what,
  });
}

/** What a part of the diagram does in the background, in one sentence (background.js `activities`). */
export function backgroundSentence(node, activities) {
  if (!activities.length) return "";
  const part = nodeName(node);
  return say(SAY().background, {
    Part: capital(part),
    part,
    activities: activities.map((a) => a.words).join(BURST().separator),
  });
}

/** Whether an event says a request was refused (a stage, RBAC, an admission plugin, flow control). */
export function isRefusal(event) {
  switch (event.type) {
    case "request.stage":
    case "admission.step":
      return event.outcome === "deny";
    case "rbac.decision":
      return event.allowed === false;
    case "flowcontrol.decision":
      return event.outcome === "rejected";
    default:
      return false;
  }
}

/**
 * The narration log: `add` a line per event, `note` for the page's own news (gaps, summaries).
 *
 * Lines are written to the page in batches: those added while one piece of script runs (a timeline
 * step playing several events, a frame of notes) are inserted together when it ends (a microtask), and
 * the list scrolls to the newest line at most once per frame (`requestAnimationFrame`), while the
 * reader is at the bottom. At hundreds of events a second, a line at a time would make the browser
 * lay the page out again for every event. Clicks are taken by one listener on the list.
 */
export class Narration {
  constructor(list, { limit = 300, slack = Math.ceil(limit / 5), onSelect } = {}) {
    this.list = list;
    this.limit = limit;
    this.slack = slack;
    this.onSelect = onSelect;
    this.chain = new Set();
    this.types = null; // setFilter: the event types shown (null: all)
    this.pending = []; // lines made since the last batch: {seq, className, deny, text} or {note, kind}
    this.batching = false;
    this.scrolling = false;
    this.scroller = list.parentElement;
    this.following = true; // the reader is at the bottom: keep the newest line in view
    this.scroller?.addEventListener("scroll", () => this._followed(), { passive: true });
    list.addEventListener("click", (event) => {
      const line = event.target.closest?.("li[data-seq]");
      if (line && this.list.contains(line)) this.onSelect?.({ seq: Number(line.dataset.seq) });
    });
  }

  /**
   * Show only events of these types (a chapter step's `narration`), or every event (null). Lines
   * already written are hidden or shown again; notes always show.
   */
  setFilter(types) {
    this.types = types && types.length ? new Set(types) : null;
    for (const item of this.list.children) {
      if (item.dataset.type) item.hidden = Boolean(this.types) && !this.types.has(item.dataset.type);
    }
  }

  add(event, model) {
    const className = `narration-${event.type.replace(".", "-")}`;
    this._queue({ seq: event.seq, type: event.type, className, deny: isRefusal(event), text: describe(event, model) });
  }

  note(text, kind = "note") {
    this._queue({ note: text, kind });
  }

  /** Write the waiting lines now (they are written anyway when the current script ends). */
  flush() {
    this.batching = false;
    if (!this.pending.length) return;
    const lines = this.pending.slice(-this.limit);
    this.pending = [];
    const batch = document.createDocumentFragment();
    for (const line of lines) batch.append(line.note === undefined ? this._line(line) : this._note(line));
    this.list.append(batch);
    // Old lines go a chunk at a time: removing the top line moves every line below it, which the
    // browser then lays out and paints again; once per chunk is cheaper than once per batch.
    if (this.list.childElementCount > this.limit + this.slack) {
      let extra = this.list.childElementCount - this.limit;
      while (extra-- > 0) this.list.firstElementChild.remove();
    }
    if (this.following && this.scroller && !this.scrolling) {
      this.scrolling = true;
      requestAnimationFrame(() => this._scroll());
    }
  }

  _queue(line) {
    this.pending.push(line);
    if (this.pending.length > 2 * this.limit) this.pending = this.pending.slice(-this.limit);
    if (!this.batching) {
      this.batching = true;
      queueMicrotask(() => this.flush());
    }
  }

  _line({ seq, type, className, deny, text }) {
    const item = document.createElement("li");
    item.dataset.seq = String(seq);
    item.dataset.type = type;
    if (this.types && !this.types.has(type)) item.hidden = true;
    item.className = className;
    if (deny) item.classList.add("deny");
    if (this.chain.has(seq)) item.classList.add("in-chain");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "narration-line";
    const number = document.createElement("span");
    number.className = "seq";
    number.textContent = `#${seq}`;
    button.append(number, " ", text);
    item.append(button);
    return item;
  }

  _note({ note, kind }) {
    const item = document.createElement("li");
    item.className = `narration-${kind}`;
    const strong = document.createElement("strong");
    strong.textContent = kind === "summary" ? gettext("Summary: ") : gettext("Note: ");
    item.append(strong, note);
    return item;
  }

  _scroll() {
    this.scrolling = false;
    if (this.following) this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  _followed() {
    const { scrollHeight, scrollTop, clientHeight } = this.scroller;
    this.following = scrollHeight - scrollTop - clientHeight < 80;
  }

  /** Mark the lines of the selected causal chain (a class and a visible marker: not colour alone). */
  highlight(seqs) {
    this.chain = seqs;
    for (const item of this.list.children) {
      item.classList.toggle("in-chain", seqs.has(Number(item.dataset.seq)));
    }
  }
}
