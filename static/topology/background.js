// Background traffic: what a cluster does on its own, every few seconds, whether or not anyone acts.
//
// An idle cluster is never quiet. Each kubelet renews its node's Lease (kube-node-lease) and reports
// its node's status; the scheduler and the controller manager renew their leader-election Leases in
// kube-system; informers re-list and re-watch; controllers requeue and resync; kube-proxy re-syncs its
// rules. Upstream does all of this (client-go `tools/leaderelection`, the kubelet's
// `nodeLeaseController`, `pkg/kubelet/kubelet_node_status.go`): it is how the control plane knows
// its parts are alive. Drawn one request at a time it would bury what a student does, so the page
// folds it into a quiet line on the parts it concerns ("renews its Lease every 2 s") and draws its
// effect (a Node's Ready condition, who leads) without animating it, unless the student asks to see it.
//
// `Background.classify(event)` says whether an event is background traffic, and which kind, from the
// event's own fields and the links the trace names (an Audit-ID, the revision a request wrote): a
// background request's stages, store writes and the watch events of what it wrote are background too.
// A controller's reconcile that made requests is never background: what it wrote is news. Pure: no
// DOM, no timers; call it once per event, in seq order.

import { gettext, interpolate, lazy } from "./i18n.js";
import { setBounded } from "./model.js";

/** The API servers' identity Leases (controlplane/apiserver/identitylease.py): upkeep, not leadership. */
const IDENTITY_LEASES = "/registry/leases/kube-system/apiserver-";

/**
 * The kinds of background traffic, each as people say it of the part that does it, in the page's
 * language (i18n.js), looked up once: `ACTIVITIES()["node-lease"]`.
 */
export const ACTIVITIES = lazy(() => ({
  "node-lease": gettext("renews its node's Lease"),
  "leader-lease": gettext("renews its leader-election Lease"),
  heartbeat: gettext("reports its node's status"),
  "master-lease": gettext("checks the API servers' master leases (the kubernetes Service's endpoints)"),
  "identity-lease": gettext("renews its identity Lease"),
  check: gettext("reads the cluster for the step's check"),
  informer: gettext("re-lists and re-watches"),
  resync: gettext("resyncs"),
  "proxy-resync": gettext("re-syncs its rules"),
}));

/** An activity and how often: `renews its node's Lease every 2 s`. */
const EVERY = lazy(() => gettext("%(activity)s every %(interval)s"));

const READS = new Set(["get", "list", "watch"]);
/** The identity the chapters' checks read the student's cluster as (read-only). */
const CHECKER = "user:kubelab:checker";

function isPerson(from) {
  return typeof from === "string" && (from.startsWith("user:") || from.startsWith("webhook:"));
}

/** The kind of background traffic a request is, from what it asks and who asks, or null. */
export function requestActivity(event) {
  const from = event.from;
  // The chapter's own checker (courses/sandboxes): its reads are the lab grading, not the cluster.
  if (from === CHECKER && READS.has(event.verb)) return "check";
  if (!from || isPerson(from) || from === "apiserver") return null;
  const { verb = "", resource = "", subresource = "" } = event;
  if (resource === "leases") return from.startsWith("kubelet:") ? "node-lease" : "leader-lease";
  if (resource === "nodes" && from.startsWith("kubelet:") && (subresource === "status" || verb === "get")) return "heartbeat";
  if (verb === "watch" || verb === "list") return "informer";
  return null;
}

/** Occurrences closer than this (seconds) are one round (several controllers resyncing at once). */
const ROUND = 0.25;

/** How often an activity happens, from the cluster clock's times (`ts`) of its occurrences. */
function every(times) {
  const gaps = [];
  for (let i = 1; i < times.length; i += 1) if (times[i] - times[i - 1] > ROUND) gaps.push(times[i] - times[i - 1]);
  if (!gaps.length) return null;
  gaps.sort((a, b) => a - b);
  return gaps[Math.floor(gaps.length / 2)];
}

/** `2 s`, `500 ms`, `1 min 40 s`. */
export function duration(seconds) {
  if (seconds < 1) return `${Math.max(1, Math.round(seconds * 1000))} ms`;
  if (seconds < 60) return `${Number(seconds.toFixed(seconds < 10 ? 1 : 0))} s`;
  const minutes = Math.floor(seconds / 60);
  const rest = Math.round(seconds - minutes * 60);
  return rest ? `${minutes} min ${rest} s` : `${minutes} min`;
}

export class Background {
  constructor({ limit = 4000, samples = 8 } = {}) {
    this.limit = limit;
    this.samples = samples;
    /** @type {Map<string, string>} background request id -> kind */
    this.requests = new Map();
    /** @type {Map<number, string>} revision written by background traffic -> kind */
    this.revisions = new Map();
    /** @type {Map<string, Map<string, {count: number, times: number[]}>>} diagram node -> kind -> seen */
    this.seen = new Map();
  }

  /**
   * The kind of background traffic `event` is (a key of ACTIVITIES, or "bookmark"), or null when it is
   * not background. Counts each background request, reconcile or sync once, on the part that did it.
   */
  classify(event) {
    switch (event.type) {
      case "request.received": {
        const kind = requestActivity(event);
        if (kind) {
          setBounded(this.requests, event.id, kind, this.limit);
          this._count(event.from, kind, event.ts);
        }
        return kind;
      }
      case "request.stage":
      case "request.completed":
      case "rbac.decision":
      case "flowcontrol.decision":
      case "admission.step":
      case "watch.opened":
      case "watch.closed":
        return (event.id && this.requests.get(event.id)) || null;
      case "store.txn": {
        // The API server's own upkeep, no request's: its master lease for the kubernetes Service's
        // endpoints (the bootstrap controller, pkg/controlplane/reconcilers/lease.go), and its reads.
        if (!event.id) {
          const key = String(event.key || event.writes?.[0]?.key || event.ops?.[0]?.key || "");
          const upkeep = key.startsWith("/registry/masterleases/")
            ? "master-lease"
            : key.startsWith(IDENTITY_LEASES)
              ? "identity-lease"
              : event.op !== "txn"
                ? "resync"
                : null;
          if (upkeep) this._count("apiserver", upkeep, event.ts);
          return upkeep;
        }
        const kind = this.requests.get(event.id) || null;
        if (kind && typeof event.revision === "number" && Array.isArray(event.writes) && event.writes.length) {
          setBounded(this.revisions, event.revision, kind, this.limit);
        }
        return kind;
      }
      case "watch.event": {
        if (event.event === "BOOKMARK") return "bookmark";
        const key = String(event.key || "");
        const identity = event.kind === "Lease" && event.namespace === "kube-system" && String(event.name || "").startsWith("apiserver-");
        if (identity || key.startsWith(IDENTITY_LEASES)) return "identity-lease";
        if (event.kind === "Lease" || key.startsWith("/registry/leases/")) {
          const nodeLease = event.namespace === "kube-node-lease" || key.startsWith("/registry/leases/kube-node-lease/");
          return nodeLease ? "node-lease" : "leader-lease";
        }
        // The store tells the API server's watch cache of a write while the write is still being
        // committed, so before its store.txn: such an event carries the writing request's Audit-ID.
        // (A client watch's events carry their watch request's id instead: they go by revision.)
        if (event.source === "store" && event.id && this.requests.has(event.id)) return this.requests.get(event.id);
        return this.revisions.get(event.revision) || null;
      }
      case "reconcile": {
        if (Array.isArray(event.requests) && event.requests.length) return null;
        const cause = event.revision == null ? "resync" : this.revisions.get(event.revision);
        const kind = cause || (event.result === "requeue_after" ? "resync" : null);
        if (kind) this._count(event.from || "controller-manager", "resync", event.ts);
        return kind ? "resync" : null;
      }
      case "proxy.sync":
        if (event.reason !== "periodic") return null;
        this._count(event.from || `kube-proxy:${event.node}`, "proxy-resync", event.ts);
        return "proxy-resync";
      default:
        return null;
    }
  }

  _count(node, kind, ts) {
    let kinds = this.seen.get(node);
    if (!kinds) {
      kinds = new Map();
      this.seen.set(node, kinds);
    }
    let seen = kinds.get(kind);
    if (!seen) {
      seen = { count: 0, times: [] };
      kinds.set(kind, seen);
    }
    seen.count += 1;
    const last = seen.times[seen.times.length - 1];
    if (typeof ts === "number" && (last === undefined || ts - last > ROUND)) {
      seen.times.push(ts);
      if (seen.times.length > this.samples) seen.times.shift();
    }
  }

  /** What a diagram node does in the background: `[{kind, count, every, words}]`, most frequent first. */
  activities(node) {
    const kinds = this.seen.get(node);
    if (!kinds) return [];
    return [...kinds]
      .map(([kind, seen]) => {
        const interval = every(seen.times);
        const activities = ACTIVITIES();
        const words = (Object.hasOwn(activities, kind) && activities[kind]) || kind;
        const often = interval ? interpolate(EVERY(), { activity: words, interval: duration(interval) }, true) : words;
        return { kind, count: seen.count, every: interval, words: often };
      })
      .sort((a, b) => b.count - a.count);
  }

  /** Every diagram node with background activity. */
  nodes() {
    return [...this.seen.keys()];
  }
}
