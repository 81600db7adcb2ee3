// Background traffic is told apart by the events' own fields and the links the trace names.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Background, duration, requestActivity } from "../../static/topology/background.js";

function lease(id, ts, from = "kubelet:node-1") {
  return [
    { type: "request.received", seq: 1, ts, id, from, to: "apiserver", verb: "update", resource: "leases", namespace: "kube-node-lease", name: "node-1" },
    { type: "request.stage", seq: 2, ts, id, from, to: "apiserver", stage: "authentication", outcome: "pass" },
    { type: "store.txn", seq: 3, ts, id, from: "apiserver", to: "etcd", op: "txn", revision: 50 + ts, succeeded: true, writes: [{ type: "PUT", key: "/registry/leases/kube-node-lease/node-1" }] },
    { type: "watch.event", seq: 4, ts, id: "w", from: "apiserver", to: "controller-manager", watch: "w", event: "MODIFIED", revision: 50 + ts, kind: "Lease", namespace: "kube-node-lease", name: "node-1" },
    { type: "request.completed", seq: 5, ts, id, from, to: "apiserver", code: 200, duration: 0.001 },
  ];
}

test("a kubelet's Lease renewal and everything it causes are background, counted on the kubelet", () => {
  const background = new Background();
  for (const t of [0, 2, 4, 6]) {
    for (const event of lease(`r${t}`, t)) assert.equal(background.classify(event), "node-lease", `${event.type} at ${t}`);
  }
  const [activity] = background.activities("kubelet:node-1");
  assert.equal(activity.kind, "node-lease");
  assert.equal(activity.count, 4);
  assert.equal(activity.every, 2);
  assert.equal(activity.words, "renews its node's Lease every 2 s");
});

test("what people ask and what controllers write is never background", () => {
  const background = new Background();
  const create = { type: "request.received", id: "k", from: "user:alice", verb: "create", resource: "leases" };
  assert.equal(background.classify(create), null);
  assert.equal(requestActivity({ from: "controller-manager", verb: "create", resource: "pods" }), null);
  assert.equal(requestActivity({ from: "kubelet:node-1", verb: "patch", resource: "nodes", subresource: "status" }), "heartbeat");
  assert.equal(requestActivity({ from: "scheduler", verb: "update", resource: "leases" }), "leader-lease");
  assert.equal(requestActivity({ from: "scheduler", verb: "watch", resource: "pods" }), "informer");
  // A reconcile that made requests is news; one that made none after a background write is not.
  assert.equal(background.classify({ type: "reconcile", controller: "replicaset", revision: 9, requests: ["a"] }), null);
  for (const event of lease("r", 1)) background.classify(event);
  assert.equal(background.classify({ type: "reconcile", controller: "nodelifecycle", revision: 51, requests: [] }), "resync");
  assert.equal(background.classify({ type: "reconcile", controller: "replicaset", revision: 7, requests: [] }), null);
});

test("the API server's identity Lease renewal is its own upkeep, counted on the API server", () => {
  const background = new Background();
  const key = "/registry/leases/kube-system/apiserver-zgyxt4bmc2xtuc3yr6y7hblhzq";
  for (const ts of [0, 10, 20]) {
    const txn = { type: "store.txn", seq: ts + 1, ts, from: "apiserver", to: "etcd", op: "txn", revision: 90 + ts, succeeded: true, writes: [{ type: "PUT", key }] };
    assert.equal(background.classify(txn), "identity-lease");
    const event = { type: "watch.event", seq: ts + 2, ts, id: "w", from: "apiserver", to: "controller-manager", watch: "w", event: "MODIFIED", revision: 90 + ts, kind: "Lease", namespace: "kube-system", name: key.split("/").pop() };
    assert.equal(background.classify(event), "identity-lease");
  }
  const [activity] = background.activities("apiserver");
  assert.equal(activity.kind, "identity-lease");
  assert.equal(activity.words, "renews its identity Lease every 10 s");
  // a leader's Lease in the same namespace stays a leader's
  const leader = { type: "watch.event", seq: 99, ts: 30, id: "w", from: "apiserver", to: "controller-manager", watch: "w", event: "MODIFIED", revision: 200, kind: "Lease", namespace: "kube-system", name: "kube-scheduler" };
  assert.equal(background.classify(leader), "leader-lease");
});

test("the chapter checker's reads are folded like the cluster's own traffic, a person's are not", () => {
  const background = new Background();
  const read = { type: "request.received", id: "c1", ts: 1, from: "user:kubelab:checker", to: "apiserver", verb: "list", resource: "pods" };
  assert.equal(background.classify(read), "check");
  assert.equal(background.classify({ type: "request.completed", id: "c1", ts: 1, from: "user:kubelab:checker", code: 200 }), "check");
  assert.equal(requestActivity({ from: "user:kubelab:checker", verb: "create", resource: "pods" }), null, "it never writes, and a write would be news");
  assert.equal(requestActivity({ from: "user:student:ada", verb: "list", resource: "pods" }), null);
  assert.equal(background.activities("user:kubelab:checker")[0].words, "reads the cluster for the step's check");
});

test("durations read as people say them", () => {
  assert.equal(duration(2), "2 s");
  assert.equal(duration(0.5), "500 ms");
  assert.equal(duration(100), "1 min 40 s");
});
