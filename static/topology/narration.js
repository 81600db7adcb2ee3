// The narration: one plain sentence per trace event, in a log that screen readers follow.
//
// `describe(event, model)` is pure (the browser tests call it directly); `Narration` keeps the last
// few hundred sentences in an `aria-live="polite"` list, each a button that selects its event.

import { STAGE_NAMES, parseNodeId, requestTitle } from "./model.js";

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

/** A diagram node as people say it: `kubelet:node-1` -> "the kubelet on node-1". */
export function nodeName(id) {
  const { kind, name } = parseNodeId(id);
  switch (kind) {
    case "user":
      return name === "anonymous" ? "an anonymous client" : `user ${name}`;
    case "apiserver":
      return "the API server";
    case "etcd":
      return "etcd";
    case "scheduler":
      return "the scheduler";
    case "controller-manager":
      return "the controller manager";
    case "kubelet":
      return `the kubelet on ${name}`;
    case "kube-proxy":
      return `kube-proxy on ${name}`;
    case "webhook":
      return `webhook ${name}`;
    default:
      return id ? String(id) : "something";
  }
}

function capital(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}

function requestWords(event, model) {
  const request = model?.requests.get(event.id);
  return request ? requestTitle(request) : "a request";
}

/** One sentence that says what an event means. */
export function describe(event, model) {
  const from = nodeName(event.from);
  switch (event.type) {
    case "request.received": {
      const sender = event.from === "user:anonymous" ? "A client (not yet authenticated)" : capital(from);
      return `${sender} sent ${requestWords(event, model)} (${event.method} ${event.path}).`;
    }
    case "request.stage": {
      const stage = STAGE_NAMES[event.stage] || event.stage;
      if (event.stage === "storage" && event.outcome === "pass" && event.key && typeof event.revision === "number") {
        const op = { create: "created", update: "updated", delete: "deleted", terminate: "marked Terminating" }[event.op] || "wrote";
        return `${capital(requestWords(event, model))} passed storage: the API server ${op} ${event.key} at revision ${event.revision}.`;
      }
      const detail = event.detail ? `: ${event.detail}` : "";
      if (event.outcome === "deny") return `Refused at ${stage}: ${requestWords(event, model)}${detail}.`;
      return `${capital(requestWords(event, model))} passed ${stage}${detail}.`;
    }
    case "request.completed": {
      const ms = typeof event.duration === "number" ? ` in ${(event.duration * 1000).toFixed(1)} ms` : "";
      const status = STATUS_TEXT[event.code] ? ` ${STATUS_TEXT[event.code]}` : "";
      return `The API server answered ${requestWords(event, model)} from ${from} with ${event.code}${status}${ms}.`;
    }
    case "rbac.decision": {
      const verdict = event.allowed ? "allowed" : "refused";
      const what = [event.verb, event.resource].filter(Boolean).join(" ");
      const reason = event.reason ? `: ${event.reason}` : "";
      return `${event.authorizer || "The authorizer"} ${verdict} ${event.user || from}${what ? ` to ${what}` : ""}${reason}.`;
    }
    case "flowcontrol.decision": {
      const level = event.priority_level ? ` at priority level ${event.priority_level}` : "";
      const schema = event.flowschema ? ` (FlowSchema ${event.flowschema})` : "";
      const waited = typeof event.waited === "number" && event.waited > 0 ? ` after waiting ${(event.waited * 1000).toFixed(1)} ms` : "";
      const why = event.reason ? `: ${event.reason}` : "";
      const verb = { queued: "queued", dispatched: "let through", rejected: "rejected (429)" }[event.outcome] || event.outcome;
      return `Flow control ${verb} ${requestWords(event, model)}${level}${schema}${waited}${why}.`;
    }
    case "admission.step": {
      const patch = Array.isArray(event.patch) && event.patch.length ? `, patching ${event.patch.length} field(s)` : "";
      const detail = event.detail ? `: ${event.detail}` : "";
      return `Admission plugin ${event.plugin} (${event.phase}) ${event.outcome === "deny" ? "refused" : "passed"} the request${patch}${detail}.`;
    }
    case "store.txn": {
      const key = event.key || event.writes?.[0]?.key || event.ops?.[0]?.key || "";
      const writes = Array.isArray(event.writes) ? event.writes.length > 0 : event.op === "txn";
      if (event.succeeded === false) return `A store transaction on ${key} failed its compare at revision ${event.revision}.`;
      if (writes) return `The API server wrote ${key || "the store"} to etcd: revision ${event.revision}.`;
      return `The API server read ${key || "the store"} from etcd (${event.op}) at revision ${event.revision}.`;
    }
    case "store.compact":
      return `etcd compacted its history before revision ${event.revision}: older reads and watches now get 410 Gone.`;
    case "watch.opened": {
      const what = event.resource || event.prefix || "objects";
      return `${capital(nodeName(event.to))} opened a watch on ${what} (${event.watch}) at ${from}.`;
    }
    case "watch.event": {
      const object = [event.kind, [event.namespace, event.name].filter(Boolean).join("/")].filter(Boolean).join(" ");
      return `Watch ${event.watch} told ${nodeName(event.to)}: ${event.event} ${object || event.key || ""} at revision ${event.revision}.`;
    }
    case "watch.closed":
      return `Watch ${event.watch} to ${nodeName(event.to)} closed${event.reason ? ` (${event.reason})` : ""}.`;
    case "component.state":
      return `${capital(from)} is ${event.state}${event.reason ? ` (${event.reason})` : ""}.`;
    case "reconcile": {
      const requeue = event.requeue || event.requeue_after ? ", and will look again" : "";
      const error = event.error ? ` (${event.error})` : "";
      return `The ${event.controller} controller reconciled ${event.key}: ${event.result}${error}${requeue}.`;
    }
    case "scheduler.decision": {
      const total = event.nodes ? Object.keys(event.nodes).length : 0;
      const feasible = Array.isArray(event.feasible) ? event.feasible.length : 0;
      if (event.chosen) return `The scheduler placed ${event.pod} on ${event.chosen} (${feasible} of ${total} nodes fit).`;
      return `The scheduler could not place ${event.pod}${event.message ? `: ${event.message}` : ""}.`;
    }
    case "proxy.sync":
      return `kube-proxy on ${event.node} rewrote its rules: ${event.rules} rules${event.reason ? ` (${event.reason})` : ""}.`;
    case "fault.applied":
      return `Fault ${event.fault} applied to ${nodeName(event.target)}${event.reason ? ` (${event.reason})` : ""}.`;
    case "fault.cleared":
      return `Fault ${event.fault} on ${nodeName(event.target)} cleared.`;
    default:
      return `${event.type} at ${from}.`;
  }
}

const VERBED = {
  create: "created",
  update: "updated",
  patch: "patched",
  delete: "deleted",
  deletecollection: "deleted collections of",
  get: "read",
  list: "listed",
  watch: "watched",
};

function noun(resource, n) {
  if (n !== 1 || !resource.endsWith("s") || resource.endsWith("ss")) return resource;
  return resource.slice(0, -1);
}

/** Who made a request, as people say it: the controller whose reconcile made it, when the trace says. */
function actor(event, model) {
  if (event.from === "controller-manager" && model) {
    const seq = model.workForRequest.get(event.id);
    const work = seq === undefined ? null : model.events.get(seq);
    if (work?.controller) return `the ${work.controller} controller`;
  }
  return nodeName(event.from);
}

function requestPhrase(verb, resource, subresource, n) {
  if (subresource === "binding" && resource === "pods") return `bound ${n} ${noun("pods", n)}`;
  if (subresource === "status") return `${VERBED[verb] || verb} the status of ${n} ${noun(resource, n)}`;
  if (subresource === "eviction") return `evicted ${n} ${noun(resource, n)}`;
  const what = subresource ? `${resource}/${subresource}` : resource;
  return `${VERBED[verb] || verb} ${n} ${noun(what, n)}`;
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
  const parts = [...groups.values()]
    .sort((a, b) => b.count - a.count)
    .slice(0, 5)
    .map((g) => `${g.who} ${requestPhrase(g.verb, g.resource, g.subresource, g.count)}`);
  if (groups.size > 5) parts.push(`and ${groups.size - 5} more kinds of request`);
  const nouns = { "watch.event": "watch event", reconcile: "reconcile", "scheduler.decision": "scheduling decision" };
  for (const [type, n] of rest) parts.push(`${n} ${nouns[type]}${n === 1 ? "" : "s"}`);
  const what = parts.length ? `: ${parts.join("; ")}` : "";
  return `To keep up, ${events.length} event${events.length === 1 ? " was" : "s were"} drawn at once${what}.`;
}

/** What a part of the diagram does in the background, in one sentence (background.js `activities`). */
export function backgroundSentence(node, activities) {
  if (!activities.length) return "";
  return `${capital(nodeName(node))} ${activities.map((a) => a.words).join("; ")}.`;
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
    strong.textContent = kind === "summary" ? "Summary: " : "Note: ";
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
