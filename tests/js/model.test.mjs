// The topology model without a browser: it starts from the cluster's state and follows the store's
// writes, so what it draws is what etcd holds (what `kubectl get` lists), whatever the page saw before.
import assert from "node:assert/strict";
import { test } from "node:test";

import { TopologyModel, partLook, podRecord, setStages, STAGES } from "../../static/topology/model.js";

const STATE = {
  type: "state",
  seq: 40,
  revision: 100,
  compacted: 0,
  objects: {
    nodes: [{ name: "node-1", ready: "True", unschedulable: false }],
    pods: [
      { namespace: "default", name: "web-abc-x2kq4", generateName: "web-abc-", node: "node-1", phase: "Running", deleting: false },
      { namespace: "default", name: "late", node: "", phase: "Pending", deleting: false },
    ],
    leases: [{ name: "kube-scheduler", holder: "scheduler-1" }],
  },
  components: [
    { id: "scheduler", state: "running", leader: true },
    { id: "controller-manager", state: "running", controllers: ["deployment", "replicaset"] },
    { id: "kubelet:node-1", state: "running" },
  ],
  watches: [{ watch: "w-1", from: "apiserver", to: "scheduler", resource: "pods", namespace: "" }],
};

function write(seq, revision, writes) {
  return { type: "store.txn", seq, op: "txn", revision, succeeded: true, writes };
}

test("a state draws every stored pod on its node, the leader, the controllers and the watches", () => {
  const model = new TopologyModel();
  model.applyState(STATE);
  assert.equal(model.lastSeq, 40);
  assert.equal(model.revision, 100);
  const kubelet = model.nodes.get("kubelet:node-1");
  assert.deepEqual([...kubelet.pods.keys()], ["default/web-abc-x2kq4"]);
  assert.equal(kubelet.pods.get("default/web-abc-x2kq4").state, "running");
  assert.deepEqual(kubelet.stored, { ready: "True", unschedulable: false });
  assert.deepEqual(model.unscheduledPods().map((p) => p.name), ["late"]);
  assert.equal(model.nodes.get("scheduler").leader, "scheduler-1");
  assert.deepEqual([...model.nodes.get("controller-manager").controllers], ["deployment", "replicaset"]);
  assert.deepEqual([...model.watches.keys()], ["w-1"]);
});

test("writes after the state move pods; writes the state already holds are not applied twice", () => {
  const model = new TopologyModel();
  model.applyState(STATE);
  // Traced after the state's seq but written before its revision: already in the state.
  model.apply(write(41, 99, [{ type: "DELETE", key: "/registry/pods/default/web-abc-x2kq4" }]));
  assert.ok(model.pods.has("default/web-abc-x2kq4"), "an old write undid the state");
  // The scheduler binds "late", the kubelet starts it, then it is deleted gracefully and for good.
  const late = { namespace: "default", name: "late", node: "node-1", phase: "Pending", deleting: false };
  model.apply(write(42, 101, [{ type: "PUT", key: "/registry/pods/default/late", pod: late }]));
  assert.equal(model.nodes.get("kubelet:node-1").pods.get("default/late").state, "scheduled");
  assert.deepEqual(model.unscheduledPods(), []);
  model.apply(write(43, 102, [{ type: "PUT", key: "/registry/pods/default/late", pod: { ...late, phase: "Running" } }]));
  assert.equal(model.nodes.get("kubelet:node-1").pods.get("default/late").state, "running");
  model.apply(write(44, 103, [{ type: "PUT", key: "/registry/pods/default/late", pod: { ...late, phase: "Running", deleting: true } }]));
  assert.equal(model.nodes.get("kubelet:node-1").pods.get("default/late").state, "terminating");
  model.apply(write(45, 104, [{ type: "DELETE", key: "/registry/pods/default/late" }]));
  assert.equal(model.pods.has("default/late"), false);
  assert.equal(model.nodes.get("kubelet:node-1").pods.has("default/late"), false);
});

test("a Node's Ready condition and a released leader Lease follow the store", () => {
  const model = new TopologyModel();
  model.applyState(STATE);
  model.apply(write(41, 101, [{ type: "PUT", key: "/registry/minions/node-1", node: { name: "node-1", ready: "Unknown", unschedulable: true } }]));
  assert.deepEqual(model.nodes.get("kubelet:node-1").stored, { ready: "Unknown", unschedulable: true });
  model.apply(write(42, 102, [{ type: "PUT", key: "/registry/leases/kube-system/kube-scheduler", lease: { name: "kube-scheduler", holder: "" } }]));
  assert.equal(model.nodes.get("scheduler").leader, "");
});

test("a state forgets what the model held before", () => {
  const model = new TopologyModel();
  model.apply(write(1, 5, [{ type: "PUT", key: "/registry/pods/default/gone", pod: { namespace: "default", name: "gone", node: "node-9", phase: "Running" } }]));
  model.applyState(STATE);
  assert.equal(model.pods.has("default/gone"), false);
  assert.equal(model.nodes.has("kubelet:node-9"), false);
});

test("the storage stage's revision names the request that wrote it, without reading its prose", () => {
  const model = new TopologyModel();
  model.apply({ type: "request.received", seq: 1, id: "r1", from: "user:alice", to: "apiserver", method: "POST", path: "/api/v1/namespaces/default/configmaps", verb: "create", resource: "configmaps", namespace: "default" });
  model.apply({ type: "request.stage", seq: 2, id: "r1", from: "user:alice", to: "apiserver", stage: "storage", outcome: "pass", detail: "stored", key: "/registry/configmaps/default/c", revision: 17, op: "create" });
  assert.equal(model.writerOfRevision.get(17), "r1");
  assert.deepEqual(model.requests.get("r1").revisions, [17]);
});

test("pod records say their state in words the view draws", () => {
  assert.equal(podRecord({ namespace: "a", name: "b", phase: "Succeeded" }).state, "succeeded");
  assert.equal(podRecord({ namespace: "a", name: "b", phase: "Weird" }).state, "unknown");
  assert.equal(podRecord({ namespace: "a", name: "b", phase: "Failed", deleting: true }).state, "terminating");
});

test("the pipeline's stages come from the server's hello", () => {
  const before = [...STAGES];
  assert.equal(setStages(before), false);
  assert.equal(setStages(["authentication", "storage"]), true);
  assert.deepEqual(STAGES, ["authentication", "storage"]);
  assert.equal(setStages("nonsense"), false);
  setStages(before);
});

test("a stopped kubelet and the faults in force: from the state, then from the trace", () => {
  const model = new TopologyModel();
  model.applyState({
    ...STATE,
    components: [...STATE.components, { id: "kubelet:node-2", state: "stopped" }],
    faults: [{ fault: "stop-kubelet", target: "kubelet:node-2" }],
  });
  assert.deepEqual(partLook(model.nodes.get("kubelet:node-2")), { stopped: true, faulted: true });
  assert.deepEqual(partLook(model.nodes.get("kubelet:node-1")), { stopped: false, faulted: false });

  model.apply({ type: "fault.applied", seq: 41, fault: "restart-apiserver", target: "apiserver", from: "apiserver" });
  assert.deepEqual(partLook(model.nodes.get("apiserver")), { stopped: false, faulted: true });
  model.apply({ type: "fault.cleared", seq: 42, fault: "restart-apiserver", target: "apiserver", from: "apiserver" });
  assert.deepEqual(partLook(model.nodes.get("apiserver")), { stopped: false, faulted: false });

  const running = { type: "component.state", seq: 43, from: "kubelet:node-2", component: "kubelet", node: "node-2", state: "running" };
  model.apply(running);
  model.apply({ type: "fault.cleared", seq: 44, fault: "stop-kubelet", target: "kubelet:node-2", from: "kubelet:node-2" });
  assert.deepEqual(partLook(model.nodes.get("kubelet:node-2")), { stopped: false, faulted: false });
});

test("a fault on a link names the line between its two ends, from the state and from the trace", () => {
  const model = new TopologyModel();
  model.applyState({ ...STATE, faults: [{ fault: "link-latency", target: "scheduler", to: "apiserver" }] });
  assert.deepEqual([...model.linkFaults.get("scheduler->apiserver")], ["link-latency"]);

  const cut = { type: "fault.applied", seq: 41, fault: "partition-component", target: "kubelet:node-1", from: "kubelet:node-1", to: "apiserver" };
  const changes = model.apply(cut);
  assert.ok(changes.some((c) => c.kind === "link" && c.key === "kubelet:node-1->apiserver"), "the view is told to draw the link");
  assert.deepEqual([...model.linkFaults.get("kubelet:node-1->apiserver")], ["partition-component"]);
  assert.deepEqual(partLook(model.nodes.get("kubelet:node-1")), { stopped: false, faulted: true });

  model.apply({ ...cut, type: "fault.cleared", seq: 42 });
  assert.equal(model.linkFaults.has("kubelet:node-1->apiserver"), false, "a cleared link is drawn whole again");
  // A fault on a part, not a link, draws no line.
  model.apply({ type: "fault.applied", seq: 43, fault: "stop-scheduler", target: "scheduler", from: "scheduler" });
  assert.deepEqual([...model.linkFaults.keys()], ["scheduler->apiserver"]);
});
