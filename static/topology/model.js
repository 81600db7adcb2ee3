// The topology model: what the diagram shows, built only from trace events (docs/trace.md).
//
// Pure code, no DOM and no timers: `TopologyModel.apply(event)` folds one event into the model and
// returns a list of *changes* (a node appeared, a packet reached a pipeline stage, a watch pulsed ...)
// that the view animates. The same events in the same order always give the same model, so the page
// can rebuild any earlier moment by replaying the recorded events, and a test can check the model
// without a browser's layout or a server.
//
// What the model keeps:
// - nodes: every diagram node seen so far (`user:<name>`, `apiserver`, `etcd`, `scheduler`,
//   `controller-manager`, `kubelet:<node>`, `kube-proxy:<node>`, `webhook:<name>`), in first-seen
//   order, with the pods a kubelet runs and the controllers the controller manager has reconciled with;
// - requests: one per Audit-ID, with the pipeline stages it passed and where it stopped;
// - watches: standing connections between two nodes, by watch id;
// - an index of recent events by seq, by request and by store revision, for the inspector and for
//   the causal chain (request -> revision it wrote -> watch events of that revision -> the work they
//   queued -> the requests that work made ...).
//
// Rewinding (static/topology/rewind.js): `applySnapshot(answer)` folds in what the store held at one
// revision (its Nodes and Pods, read by the server at that revision): the pods on each node become the
// store's, so "the cluster at revision R" is the trace replayed up to R's write plus the store at R,
// never a guess. `replayed(events, seq)` builds that model from recorded events.
//
// Everything is bounded, so that a page left open on a busy cluster does not grow: the last `maxEvents`
// events and what indexes them by revision, the last `maxRequests` requests and the work that made them
// (give or take a tenth: see `setBounded`).

import { lazy, pgettext } from "./i18n.js";

/**
 * The API server's pipeline stages, in order. The server names them in the stream's hello
 * (`controlplane/trace/schema.py` PIPELINE_STAGES, the one list); `setStages` takes them from there.
 * Until then, the list this page was written against.
 */
export let STAGES = [
  "authentication",
  "audit",
  "impersonation",
  "flowcontrol",
  "authorization",
  "mutating-admission",
  "validation",
  "validating-admission",
  "storage",
];

/** Take the stages the server named (its hello); returns whether they differ from the ones held. */
export function setStages(stages) {
  if (!Array.isArray(stages) || !stages.length || !stages.every((s) => typeof s === "string")) return false;
  if (stages.length === STAGES.length && stages.every((s, i) => s === STAGES[i])) return false;
  STAGES = [...stages];
  return true;
}

/** How each stage is named for people, in the page's language (i18n.js), looked up once. */
const STAGE_NAMES = lazy(() => ({
  authentication: pgettext("pipeline stage", "authentication"),
  audit: pgettext("pipeline stage", "audit"),
  impersonation: pgettext("pipeline stage", "impersonation"),
  flowcontrol: pgettext("pipeline stage", "flow control"),
  authorization: pgettext("pipeline stage", "authorization"),
  "mutating-admission": pgettext("pipeline stage", "mutating admission"),
  validation: pgettext("pipeline stage", "validation"),
  "validating-admission": pgettext("pipeline stage", "validating admission"),
  storage: pgettext("pipeline stage", "storage"),
}));

/** A stage as people say it (`flowcontrol` -> "flow control"); a stage this page does not know, as named. */
export function stageName(stage) {
  const names = STAGE_NAMES();
  return Object.hasOwn(names, stage) ? names[stage] : stage;
}

const VERB_BY_METHOD = { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" };

/** The kind and name of a diagram node id: `kubelet:node-1` -> {kind: "kubelet", name: "node-1"}. */
export function parseNodeId(id) {
  if (typeof id !== "string" || id === "") return { kind: "unknown", name: String(id) };
  const colon = id.indexOf(":");
  if (colon < 0) return { kind: id, name: id };
  return { kind: id.slice(0, colon), name: id.slice(colon + 1) };
}

/**
 * What a request is about, from its method and path (the trace's `request.received` has both;
 * `verb` when the emitter knows it). `/api/v1/namespaces/default/pods/web/status` ->
 * {verb: "patch", resource: "pods", namespace: "default", name: "web", subresource: "status"}.
 */
export function describeRequest(method, path, verb) {
  const [bare, query = ""] = String(path || "").split("?");
  const parts = bare.split("/").filter(Boolean);
  let rest = [];
  if (parts[0] === "api") rest = parts.slice(2);
  else if (parts[0] === "apis") rest = parts.slice(3);
  let namespace = "";
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const resource = rest[0] || "";
  const name = rest[1] || (resource === "namespaces" && namespace ? namespace : "");
  const subresource = rest[2] || "";
  let guessed = VERB_BY_METHOD[String(method || "").toUpperCase()] || "get";
  if (guessed === "get" && resource && !name) guessed = /(^|&)watch=(1|true)/.test(query) ? "watch" : "list";
  if (guessed === "delete" && resource && !name) guessed = "deletecollection";
  if (!resource) guessed = "get";
  return { verb: verb || guessed, resource: resource || bare || "/", namespace, name, subresource };
}

/** A request in a few words: `create pods/web`, `patch pods/web/status`, `get /apis`. */
export function requestTitle(request) {
  const what = [request.resource, request.name, request.subresource].filter(Boolean).join("/");
  return `${request.verb} ${what}`;
}

/**
 * `map.set(key, value)`, keeping the newest `limit` keys (a Map keeps insertion order): once a tenth
 * more have come, the oldest go, all at once. One at a time would cost more than it seems: a Map's
 * deleted entries stay as holes until it is rebuilt, and finding the oldest key walks over them.
 */
export function setBounded(map, key, value, limit) {
  map.set(key, value);
  if (map.size <= limit + Math.ceil(limit / 10)) return;
  let excess = map.size - limit;
  for (const old of map.keys()) {
    if (excess-- <= 0) break;
    map.delete(old);
  }
}

function isWrite(event) {
  return (event.op === "txn" || event.op === "put" || event.op === "delete") && event.succeeded !== false;
}

/** Did this trace event write to the store (a committed `store.txn` with writes)? */
export function isStoreWrite(event) {
  if (event?.type !== "store.txn" || typeof event.revision !== "number" || event.succeeded === false) return false;
  return Array.isArray(event.writes) ? event.writes.length > 0 : isWrite(event);
}

/**
 * How the diagram draws a pod the store holds: `terminating` (being deleted), `running`, `scheduled`
 * (bound to a node, not running yet: phase Pending), `succeeded`, `failed`, `unknown`.
 */
export function storedPodState(pod) {
  if (pod.deleting) return "terminating";
  const phase = String(pod.phase || "Pending").toLowerCase();
  if (phase === "pending") return "scheduled";
  return ["running", "succeeded", "failed"].includes(phase) ? phase : "unknown";
}

/** A pod as the model keeps it, from the facts the store holds (a `store.txn` write, or a state). */
export function podRecord(facts) {
  const namespace = String(facts.namespace || "");
  const name = String(facts.name || "");
  return {
    key: `${namespace}/${name}`,
    namespace,
    name,
    generateName: String(facts.generateName || ""),
    node: String(facts.node || ""),
    phase: String(facts.phase || "Pending"),
    deleting: Boolean(facts.deleting),
    state: storedPodState(facts),
  };
}

/** Which component a leader-election Lease in kube-system stands for (its diagram node), if any. */
/**
 * How a part of the diagram looks, beyond its words: `stopped` when its component does not run (a
 * kubelet a fault stopped: the box is greyed), `faulted` while a fault of the catalogue is in force on
 * it. The view turns these into CSS classes of the part's box.
 */
export function partLook(node) {
  return { stopped: node?.state === "stopped", faulted: Boolean(node?.faults?.size) };
}

export const LEADER_LEASES = { "kube-scheduler": "scheduler", "kube-controller-manager": "controller-manager" };

const PODS_PREFIX = "/registry/pods/";
const NODES_PREFIX = "/registry/minions/";
const LEASES_PREFIX = "/registry/leases/kube-system/";

export class TopologyModel {
  constructor({ maxEvents = 5000, maxRequests = 2000 } = {}) {
    this.maxEvents = maxEvents;
    this.maxRequests = maxRequests;
    this.reset();
  }

  /** Forget everything: the model of a page that has not heard from the cluster yet. */
  reset() {
    this.lastSeq = 0;
    /** @type {Map<string, object>} diagram nodes by id, in first-seen order */
    this.nodes = new Map();
    /** @type {Map<string, object>} requests by Audit-ID, oldest first */
    this.requests = new Map();
    /** @type {Map<string, object>} open watches by watch id */
    this.watches = new Map();
    /** @type {Map<string, Set<string>>} "from->to" -> the faults in force on that link (a cut, a delay) */
    this.linkFaults = new Map();
    /** @type {Map<number, object>} recent events by seq */
    this.events = new Map();
    this.revision = 0;
    this.compacted = 0;
    this.storeRevision = null; // the revision applySnapshot last read the store at (rewound), or null
    // The state the model started from (applyState): writes traced after it, at or below its
    // revision, are in it already and are skipped.
    this.stateRevision = 0;
    /** @type {Map<string, object>} every pod the store holds, by namespace/name (podRecord) */
    this.pods = new Map();
    /** @type {Map<string, string>} leader-election Lease name -> holder identity ("" released) */
    this.leaders = new Map();
    // Causality indexes (see docs/trace.md, "Causality").
    this.writerOfRevision = new Map(); // revision -> request id
    this.seqsOfRevision = new Map(); // revision -> [seq] (watch events, work) that name it
    this.workForRequest = new Map(); // request id -> seq of the reconcile/decision that made it
  }

  /** Fold one event in; returns the changes for the view. Events at or below lastSeq are ignored. */
  apply(event) {
    const changes = [];
    if (!event || typeof event !== "object") return changes;
    if (typeof event.seq === "number") {
      if (event.seq <= this.lastSeq) return changes;
      this.lastSeq = event.seq;
      setBounded(this.events, event.seq, event, this.maxEvents);
    }
    const handler = HANDLERS[event.type];
    if (handler) handler.call(this, event, changes);
    else this._touch(event.from, event, changes);
    return changes;
  }

  /** Make sure a diagram node exists; adds a `node` change the first time it is seen. */
  ensureNode(id, event, changes) {
    if (!id || typeof id !== "string") return null;
    let node = this.nodes.get(id);
    if (!node) {
      const { kind, name } = parseNodeId(id);
      node = { id, kind, name, firstSeq: event?.seq ?? 0, state: null, pods: new Map(), controllers: new Set() };
      this.nodes.set(id, node);
      if (kind === "kube-proxy") this.ensureNode(`kubelet:${name}`, event, changes);
      changes.push({ kind: "node", id });
    }
    return node;
  }

  _touch(id, event, changes) {
    const node = this.ensureNode(id, event, changes);
    if (node && event.to && event.to !== id) this.ensureNode(event.to, event, changes);
    return node;
  }

  _request(event) {
    let request = this.requests.get(event.id);
    if (!request) {
      request = {
        id: event.id,
        from: null,
        claimedFrom: event.from || null,
        to: event.to || "apiserver",
        method: "",
        path: "",
        verb: "get",
        resource: "",
        namespace: "",
        name: "",
        subresource: "",
        stages: {},
        stoppedAt: null,
        reason: "",
        code: null,
        duration: null,
        state: "flight",
        seqs: [],
        revisions: [],
        started: false,
      };
      setBounded(this.requests, event.id, request, this.maxRequests);
    }
    if (typeof event.seq === "number") request.seqs.push(event.seq);
    return request;
  }

  // The API server's `request.received` names `user:anonymous` before authentication has run; the
  // real sender is known from the first stage on. The packet starts from the sender once it is known.
  _learnSender(request, event, changes) {
    const from = event.from;
    if (from && (from !== "user:anonymous" || event.type === "request.completed" || request.stoppedAt)) {
      if (request.from !== from && (request.from === null || request.from === "user:anonymous")) {
        request.from = from;
        this.ensureNode(from, event, changes);
      }
    }
    if (!request.started && request.from) {
      request.started = true;
      changes.push({ kind: "request-start", id: request.id });
    }
  }

  _wrote(revision, requestId, seq) {
    if (typeof revision !== "number") return;
    if (revision > this.revision) this.revision = revision;
    if (requestId && !this.writerOfRevision.has(revision)) {
      setBounded(this.writerOfRevision, revision, requestId, this.maxEvents);
      const request = this.requests.get(requestId);
      if (request && !request.revisions.includes(revision)) request.revisions.push(revision);
    }
    void seq;
  }

  _nameRevision(revision, seq) {
    if (typeof revision !== "number") return;
    let seqs = this.seqsOfRevision.get(revision);
    if (!seqs) {
      seqs = [];
      setBounded(this.seqsOfRevision, revision, seqs, this.maxEvents);
    }
    seqs.push(seq);
  }

  /** A pod as the store now holds it: on its node's box (or waiting for the scheduler). */
  _setPod(record, event, changes) {
    const old = this.pods.get(record.key);
    this.pods.set(record.key, record);
    if (old?.node && old.node !== record.node) {
      const before = this.nodes.get(`kubelet:${old.node}`);
      if (before?.pods.delete(record.key)) changes.push({ kind: "pods", id: before.id });
    }
    if (!record.node) {
      if (!old || old.node) changes.push({ kind: "unscheduled" });
      return;
    }
    if (old && !old.node) changes.push({ kind: "unscheduled" });
    const kubelet = this.ensureNode(`kubelet:${record.node}`, event, changes);
    const drawn = kubelet.pods.get(record.key);
    kubelet.pods.set(record.key, record);
    if (!drawn || drawn.state !== record.state) changes.push({ kind: "pods", id: kubelet.id });
  }

  _forgetPod(key, changes) {
    const old = this.pods.get(key);
    if (!old) return;
    this.pods.delete(key);
    if (!old.node) changes.push({ kind: "unscheduled" });
    for (const node of this.nodes.values()) {
      if (node.pods.delete(key)) changes.push({ kind: "pods", id: node.id });
    }
  }

  /** Pods the store holds that no node runs yet: they wait for the scheduler. */
  unscheduledPods() {
    return [...this.pods.values()].filter((pod) => !pod.node);
  }

  _setNode(facts, event, changes) {
    const kubelet = this.ensureNode(`kubelet:${facts.name}`, event, changes);
    kubelet.stored = { ready: facts.ready ?? null, unschedulable: Boolean(facts.unschedulable) };
    changes.push({ kind: "state", id: kubelet.id });
  }

  _setLeader(facts, changes) {
    const holder = String(facts.holder || "");
    this.leaders.set(facts.name, holder);
    const id = LEADER_LEASES[facts.name];
    // A held leader Lease is a running component's: it is drawn even before it makes a request.
    const node = id ? (holder ? this.ensureNode(id, { seq: this.lastSeq }, changes) : this.nodes.get(id)) : null;
    if (node) {
      node.leader = holder;
      changes.push({ kind: "state", id });
    }
  }

  /**
   * One change the store committed, as a `store.txn` lists it: `{type: "PUT"|"DELETE", key}` and, for
   * a Pod, a Node or a leader Lease, the facts of the value written (`controlplane/trace/objects.py`).
   * This is how the diagram follows the cluster: from etcd itself, never from guesses about requests.
   */
  _storeWrite(write, event, changes) {
    const key = String(write.key || "");
    if (write.type === "DELETE") {
      if (key.startsWith(PODS_PREFIX)) this._forgetPod(key.slice(PODS_PREFIX.length), changes);
      else if (key.startsWith(NODES_PREFIX)) {
        const node = this.nodes.get(`kubelet:${key.slice(NODES_PREFIX.length)}`);
        if (node) {
          node.stored = { missing: true };
          changes.push({ kind: "state", id: node.id });
        }
      } else if (key.startsWith(LEASES_PREFIX)) this._setLeader({ name: key.slice(LEASES_PREFIX.length), holder: "" }, changes);
      return;
    }
    if (write.pod) this._setPod(podRecord(write.pod), event, changes);
    else if (write.node) this._setNode(write.node, event, changes);
    else if (write.lease) this._setLeader(write.lease, changes);
  }

  /**
   * Start from the cluster's state (the trace socket's `state` message, `controlplane/diagram.py`):
   * the store's Nodes, Pods and leader Leases at `revision`, the components the lab runs and the
   * watches open on the API server, as of trace seq `seq`. Everything held before is forgotten; the
   * events after `seq` then apply as usual. Returns the changes (the page redraws from scratch).
   */
  applyState(state) {
    this.reset();
    const changes = [];
    const at = { seq: state.seq ?? 0 };
    this.lastSeq = typeof state.seq === "number" ? state.seq : 0;
    this.ensureNode("apiserver", at, changes);
    this.ensureNode("etcd", at, changes);
    for (const component of state.components || []) {
      const node = this.ensureNode(component.id, at, changes);
      if (!node) continue;
      node.state = component.state || null;
      for (const controller of component.controllers || []) node.controllers.add(controller);
    }
    const objects = state.objects || {};
    for (const node of objects.nodes || []) this._setNode(node, at, changes);
    for (const pod of objects.pods || []) this._setPod(podRecord(pod), at, changes);
    for (const lease of objects.leases || []) this._setLeader(lease, changes);
    for (const watch of state.watches || []) HANDLERS["watch.opened"].call(this, { ...watch, seq: this.lastSeq }, changes);
    // The faults in force (controlplane/faults): each a fault.applied the page did not see.
    for (const fault of state.faults || []) HANDLERS["fault.applied"].call(this, { ...fault, seq: this.lastSeq }, changes);
    this.revision = state.revision ?? 0;
    this.stateRevision = this.revision;
    this.compacted = state.compacted ?? 0;
    changes.push({ kind: "store", revision: this.revision, write: false });
    return changes;
  }

  /**
   * Fold in the store as it was at one revision: `answer` is the server's `?objects=diagram` reply
   * (courses/etcdpanel.py) with `revision`, `compacted` and `objects: {nodes, pods}`. Each stored Node
   * has its kubelet's box (with its Ready condition and whether it is cordoned); the pods on every
   * node become exactly the stored ones. Returns the changes for the view.
   */
  applySnapshot(answer) {
    const changes = [];
    const objects = answer?.objects || {};
    const at = { seq: this.lastSeq };
    const stored = new Set();
    for (const node of objects.nodes || []) {
      this._setNode(node, at, changes);
      stored.add(`kubelet:${node.name}`);
    }
    for (const node of this.nodes.values()) {
      if (node.kind === "kubelet" && !stored.has(node.id)) {
        node.stored = { missing: true };
        changes.push({ kind: "state", id: node.id });
      }
    }
    const pods = new Map((objects.pods || []).map((facts) => [`${facts.namespace}/${facts.name}`, podRecord(facts)]));
    for (const key of [...this.pods.keys()]) if (!pods.has(key)) this._forgetPod(key, changes);
    for (const record of pods.values()) this._setPod(record, at, changes);
    for (const lease of objects.leases || []) this._setLeader(lease, changes);
    if (typeof answer?.revision === "number") this.revision = answer.revision;
    if (typeof answer?.compacted === "number") this.compacted = Math.max(this.compacted, answer.compacted);
    this.storeRevision = answer?.revision ?? null;
    changes.push({ kind: "store", revision: this.revision, write: false });
    return changes;
  }

  /** Every event index of one request, oldest first. */
  eventsOfRequest(id) {
    const request = this.requests.get(id);
    if (!request) return [];
    return request.seqs.map((seq) => this.events.get(seq)).filter(Boolean);
  }

  /**
   * The causal chain around a request, an event or a node's work: the requests, events and diagram
   * nodes linked by Audit-ID, revisions written and watched, and the requests work made. Built from
   * the links the trace names (never from timing), both ways: what caused this, and what it caused.
   */
  chain(selection) {
    const requests = new Set();
    const seqs = new Set();
    const work = [];
    if (selection?.request) requests.add(selection.request);
    if (typeof selection?.seq === "number") {
      const event = this.events.get(selection.seq);
      if (event) {
        seqs.add(event.seq);
        if (event.id) requests.add(event.id);
        if (event.type === "reconcile" || event.type === "scheduler.decision") work.push(event);
        if (event.type === "watch.event") this._revisionEffects(event.revision, seqs, requests, work);
      }
    }
    // Forward: a request's writes -> watch events and work that name them -> the requests made.
    const forward = [...requests];
    const backward = [...requests];
    const done = new Set();
    for (let i = 0; i < forward.length || work.length; ) {
      if (work.length) {
        const item = work.shift();
        seqs.add(item.seq);
        for (const made of item.requests || []) {
          if (!requests.has(made)) {
            requests.add(made);
            forward.push(made);
          }
        }
        continue;
      }
      const id = forward[i++];
      if (done.has(id) || done.size > 200) continue;
      done.add(id);
      const request = this.requests.get(id);
      for (const revision of request?.revisions || []) this._revisionEffects(revision, seqs, requests, work);
    }
    // Backward: the work that made a request -> the revision that queued it -> the request that wrote it.
    const seen = new Set();
    while (backward.length && seen.size < 200) {
      const id = backward.shift();
      if (seen.has(id)) continue;
      seen.add(id);
      const workSeq = this.workForRequest.get(id);
      const cause = workSeq !== undefined ? this.events.get(workSeq) : undefined;
      if (!cause) continue;
      seqs.add(cause.seq);
      const writer = this.writerOfRevision.get(cause.revision);
      for (const seq of this.seqsOfRevision.get(cause.revision) || []) {
        const watchEvent = this.events.get(seq);
        if (watchEvent?.type === "watch.event" && watchEvent.to === cause.from) seqs.add(seq);
      }
      if (writer && !requests.has(writer)) {
        requests.add(writer);
        backward.push(writer);
      }
    }
    for (const id of requests) for (const seq of this.requests.get(id)?.seqs || []) seqs.add(seq);
    const nodes = new Set();
    for (const seq of seqs) {
      const event = this.events.get(seq);
      if (!event) continue;
      if (event.from && event.from !== "user:anonymous") nodes.add(event.from);
      if (event.to) nodes.add(event.to);
    }
    for (const id of requests) {
      const request = this.requests.get(id);
      if (request?.from) nodes.add(request.from);
    }
    if (selection?.node) nodes.add(selection.node);
    return { requests, seqs, nodes };
  }

  _revisionEffects(revision, seqs, requests, work) {
    for (const seq of this.seqsOfRevision.get(revision) || []) {
      const event = this.events.get(seq);
      if (!event || seqs.has(seq)) continue;
      seqs.add(seq);
      if (event.type === "reconcile" || event.type === "scheduler.decision") work.push(event);
    }
  }
}

/**
 * A new model with `events` (oldest first) applied up to and including `seq`: the diagram at that
 * moment, as far as the trace says (the page's rewind adds the store's objects with applySnapshot).
 */
export function replayed(events, seq, options) {
  const model = new TopologyModel(options);
  for (const event of events) {
    if (event.seq > seq) break;
    model.apply(event);
  }
  return model;
}

const HANDLERS = {
  "request.received"(event, changes) {
    const request = this._request(event);
    request.method = event.method || "";
    request.path = event.path || "";
    Object.assign(request, describeRequest(event.method, event.path, event.verb));
    // What the API server itself parsed from the request wins over our reading of its path.
    for (const field of ["verb", "resource", "namespace", "name", "subresource", "user"]) {
      if (typeof event[field] === "string" && event[field]) request[field] = event[field];
    }
    this.ensureNode(event.to || "apiserver", event, changes);
    this._learnSender(request, event, changes);
  },

  "request.stage"(event, changes) {
    const request = this._request(event);
    this._learnSender(request, event, changes);
    const outcome = event.outcome === "deny" ? "deny" : "pass";
    request.stages[event.stage] = outcome;
    if (outcome === "deny") {
      request.stoppedAt = event.stage;
      request.reason = event.detail || "";
      request.state = "denied";
      this._learnSender(request, event, changes);
    }
    if (event.stage === "storage" && outcome === "pass" && typeof event.revision === "number") {
      this._wrote(event.revision, request.id, event.seq);
      this.ensureNode("etcd", event, changes);
      changes.push({ kind: "store", revision: event.revision, id: request.id });
    }
    changes.push({ kind: "request-stage", id: request.id, stage: event.stage, outcome });
  },

  "request.completed"(event, changes) {
    const request = this._request(event);
    this._learnSender(request, event, changes);
    request.code = event.code;
    request.duration = event.duration;
    request.audit = typeof event.audit === "string" ? event.audit : null;
    if (typeof event.revision === "number") this._wrote(event.revision, request.id, event.seq);
    if (request.state !== "denied") request.state = event.code >= 400 ? "failed" : "done";
    changes.push({ kind: "request-end", id: request.id });
  },

  "rbac.decision"(event, changes) {
    const request = this._request(event);
    request.rbac = event;
    changes.push({ kind: "note", id: request.id });
  },

  "flowcontrol.decision"(event, changes) {
    const request = this._request(event);
    (request.flowcontrol ||= []).push(event);
    changes.push({ kind: "note", id: request.id });
  },

  "admission.step"(event, changes) {
    const request = this._request(event);
    (request.admission ||= []).push(event);
    if (event.from && event.from.startsWith("webhook:")) this.ensureNode(event.from, event, changes);
    if (event.to && event.to.startsWith("webhook:")) this.ensureNode(event.to, event, changes);
    changes.push({ kind: "note", id: request.id });
  },

  "store.txn"(event, changes) {
    if (event.id) this._request(event);
    this.ensureNode("apiserver", event, changes);
    this.ensureNode("etcd", event, changes);
    const writes = Array.isArray(event.writes) ? event.writes.length > 0 : isWrite(event);
    if (writes && event.succeeded !== false) {
      this._wrote(event.revision, event.id, event.seq);
      // A write the state started from already holds is not applied twice (controlplane/diagram.py).
      if (Array.isArray(event.writes) && event.revision > this.stateRevision) {
        for (const write of event.writes) this._storeWrite(write, event, changes);
      }
    } else if (typeof event.revision === "number" && event.revision > this.revision) this.revision = event.revision;
    changes.push({ kind: "store", revision: event.revision, write: writes, id: event.id });
  },

  "store.compact"(event, changes) {
    this.ensureNode("etcd", event, changes);
    this.compacted = event.revision;
    changes.push({ kind: "store", revision: this.revision, compacted: event.revision });
  },

  "watch.opened"(event, changes) {
    const from = event.from || "apiserver";
    const to = event.to || "apiserver";
    this.ensureNode(from, event, changes);
    this.ensureNode(to, event, changes);
    this.watches.set(event.watch, {
      watch: event.watch,
      from,
      to,
      resource: event.resource || event.prefix || "",
      source: event.source || "",
      opened: event.seq,
      delivered: 0,
    });
    changes.push({ kind: "watch-open", watch: event.watch });
  },

  "watch.event"(event, changes) {
    let watch = this.watches.get(event.watch);
    if (!watch) {
      // Opened before this page started listening: the first event shows it.
      HANDLERS["watch.opened"].call(this, { ...event, seq: event.seq }, changes);
      watch = this.watches.get(event.watch);
    }
    watch.delivered += 1;
    this._nameRevision(event.revision, event.seq);
    changes.push({ kind: "watch-pulse", watch: event.watch });
  },

  "watch.closed"(event, changes) {
    if (this.watches.delete(event.watch)) changes.push({ kind: "watch-close", watch: event.watch });
  },

  "component.state"(event, changes) {
    const id = event.from || (event.node ? `${event.component}:${event.node}` : event.component);
    const node = this.ensureNode(id, event, changes);
    if (node) {
      node.state = event.state;
      changes.push({ kind: "state", id: node.id });
    }
  },

  reconcile(event, changes) {
    const node = this.ensureNode(event.from || "controller-manager", event, changes);
    if (node && event.controller && !node.controllers.has(event.controller)) {
      node.controllers.add(event.controller);
      changes.push({ kind: "controllers", id: node.id });
    }
    this._nameRevision(event.revision, event.seq);
    for (const id of event.requests || []) setBounded(this.workForRequest, id, event.seq, this.maxRequests);
    changes.push({ kind: "work", id: node?.id, controller: event.controller, result: event.result });
  },

  "scheduler.decision"(event, changes) {
    const node = this.ensureNode(event.from || "scheduler", event, changes);
    this._nameRevision(event.revision, event.seq);
    for (const id of event.requests || []) setBounded(this.workForRequest, id, event.seq, this.maxRequests);
    changes.push({ kind: "work", id: node?.id, result: event.chosen ? "scheduled" : "unschedulable" });
  },

  "proxy.sync"(event, changes) {
    const node = this.ensureNode(event.from || `kube-proxy:${event.node}`, event, changes);
    if (node) node.rules = event.rules;
    changes.push({ kind: "work", id: node?.id });
  },

  "fault.applied"(event, changes) {
    const node = this.ensureNode(event.target, event, changes);
    if (node) (node.faults ||= new Set()).add(event.fault);
    changes.push({ kind: "state", id: event.target });
    // A fault on a link (a partition, a delay) also names the link's other end: the line between them.
    if (event.to) {
      const key = `${event.target}->${event.to}`;
      if (!this.linkFaults.has(key)) this.linkFaults.set(key, new Set());
      this.linkFaults.get(key).add(event.fault);
      changes.push({ kind: "link", key });
    }
  },

  "fault.cleared"(event, changes) {
    const node = this.nodes.get(event.target);
    if (node?.faults) node.faults.delete(event.fault);
    changes.push({ kind: "state", id: event.target });
    if (event.to) {
      const key = `${event.target}->${event.to}`;
      const faults = this.linkFaults.get(key);
      if (faults) {
        faults.delete(event.fault);
        if (!faults.size) this.linkFaults.delete(key);
      }
      changes.push({ kind: "link", key });
    }
  },
};
