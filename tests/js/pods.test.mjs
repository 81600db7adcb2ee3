// static/topology/pods.js without a browser: `node --test tests/js/` (Node 18 or later).
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  POD_STATES,
  SUFFIX_ALPHABET,
  compareNatural,
  comparePods,
  podListSection,
  podNamespace,
  podState,
  podStateWords,
  podSuffix,
  podWords,
  sortedPods,
} from "../../static/topology/pods.js";

const pod = (name, fields = {}) => ({ key: `default/${name}`, namespace: "default", name, state: "running", ...fields });

test("importing pods.js does not need a document", () => {
  assert.equal(typeof globalThis.document, "undefined");
});

test("podSuffix: the name minus generateName when that is a prefix of it", () => {
  assert.equal(podSuffix(pod("web-7d4b9c8f5-x2kq4", { generateName: "web-7d4b9c8f5-" })), "x2kq4");
  // generateName wins over the heuristic, whatever the suffix looks like.
  assert.equal(podSuffix(pod("job-a-hello", { generateName: "job-a-" })), "hello");
  assert.equal(podSuffix(pod("batch-1abcdef", { generateName: "batch-" })), "1abcdef");
});

test("podSuffix: a generateName that is not a prefix, or is the whole name, is ignored", () => {
  assert.equal(podSuffix(pod("web-7d4b9c8f5-x2kq4", { generateName: "api-" })), "x2kq4");
  assert.equal(podSuffix(pod("web-", { generateName: "web-" })), "web-");
  assert.equal(podSuffix(pod("web-7d4b9c8f5-x2kq4", { generateName: "" })), "x2kq4");
  assert.equal(podSuffix(pod("web-7d4b9c8f5-x2kq4", { generateName: undefined })), "x2kq4");
});

test("podSuffix: without generateName, a last segment of 5 generated characters", () => {
  assert.equal(podSuffix(pod("web-7d4b9c8f5-p9rtz")), "p9rtz");
  assert.equal(podSuffix(pod("kube-proxy-2bx7q")), "2bx7q");
  assert.equal(podSuffix(pod("a-bcdfg")), "bcdfg");
  // Two pods of one ReplicaSet are told apart.
  assert.notEqual(podSuffix(pod("web-7d4b9c8f5-x2kq4")), podSuffix(pod("web-7d4b9c8f5-p9rtz")));
});

test("podSuffix: otherwise the whole name", () => {
  assert.equal(podSuffix(pod("web")), "web");
  assert.equal(podSuffix(pod("db-0")), "db-0"); // a StatefulSet's pod: its ordinal is not generated
  assert.equal(podSuffix(pod("my-pod-hello")), "my-pod-hello"); // e and o are not in the alphabet
  assert.equal(podSuffix(pod("my-pod-x2kq")), "my-pod-x2kq"); // 4 characters
  assert.equal(podSuffix(pod("my-pod-x2kq4z")), "my-pod-x2kq4z"); // 6 characters
  assert.equal(podSuffix(pod("my-pod-X2KQ4")), "my-pod-X2KQ4"); // upper case is never generated
  assert.equal(podSuffix(pod("web-1x2kq")), "web-1x2kq"); // 1 is not in the alphabet
  assert.equal(podSuffix(pod("x2kq4")), "x2kq4"); // nothing before it
  assert.equal(podSuffix(pod("-x2kq4")), "-x2kq4"); // nothing before the dash
});

test("podSuffix: the name from the key when the record has none", () => {
  assert.equal(podSuffix({ key: "default/web-7d4b9c8f5-x2kq4", state: "running" }), "x2kq4");
  assert.equal(podSuffix({ key: "kube-system/etcd", state: "running" }), "etcd");
});

test("the alphabet is Kubernetes' (no vowels, no 0, 1 or 3)", () => {
  assert.equal(SUFFIX_ALPHABET, "bcdfghjklmnpqrstvwxz2456789");
});

test("POD_STATES: every state has a glyph and words, all different", () => {
  const states = ["scheduled", "running", "succeeded", "failed", "terminating", "unknown"];
  for (const state of states) {
    assert.ok(POD_STATES[state], state);
    assert.equal(typeof POD_STATES[state].glyph, "string");
    assert.ok(POD_STATES[state].glyph.length > 0, `${state} has a glyph`);
    assert.ok(POD_STATES[state].words.length > 0, `${state} has words`);
  }
  assert.deepEqual(Object.keys(POD_STATES).sort(), [...states].sort());
  const glyphs = Object.values(POD_STATES).map((s) => s.glyph);
  const words = Object.values(POD_STATES).map((s) => s.words);
  assert.equal(new Set(glyphs).size, glyphs.length, "no two states share a glyph");
  assert.equal(new Set(words).size, words.length, "no two states share words");
  assert.equal(POD_STATES.running.glyph, "●");
  assert.equal(POD_STATES.running.words, "Running");
  assert.equal(POD_STATES.scheduled.glyph, "○");
  assert.equal(POD_STATES.scheduled.words, "Pending (bound, starting)");
  assert.equal(POD_STATES.succeeded.glyph, "✓");
  assert.equal(POD_STATES.failed.glyph, "✕");
  assert.equal(POD_STATES.unknown.glyph, "?");
  assert.ok(Object.isFrozen(POD_STATES) && Object.isFrozen(POD_STATES.running));
});

test("podState: a state it does not know reads as unknown", () => {
  assert.equal(podState(pod("web", { state: "crashlooping" })), POD_STATES.unknown);
  assert.equal(podState(pod("web", { state: undefined })), POD_STATES.unknown);
  assert.equal(podState(pod("web", { state: "toString" })), POD_STATES.unknown);
  assert.equal(podState(pod("web", { state: "failed" })), POD_STATES.failed);
});

test("podWords: the suffix and the state in words", () => {
  assert.equal(podWords(pod("web-7d4b9c8f5-x2kq4", { generateName: "web-7d4b9c8f5-" })), "x2kq4 · Running");
  assert.equal(podWords(pod("db-0", { state: "scheduled" })), "db-0 · Pending (bound, starting)");
  assert.equal(podWords(pod("web", { state: "terminating" })), "web · Terminating");
  assert.equal(podWords(pod("web", { state: "nonsense" })), "web · Unknown");
});

test("podStateWords: the phase too when the state does not say it", () => {
  assert.equal(podStateWords(pod("web", { phase: "Running" })), "Running");
  assert.equal(podStateWords(pod("web", { state: "scheduled", phase: "Pending" })), "Pending (bound, starting)");
  assert.equal(podStateWords(pod("web", { state: "terminating", phase: "Running" })), "Terminating (phase Running)");
  assert.equal(podStateWords(pod("web", { state: "terminating" })), "Terminating");
});

test("podNamespace: from the record, else from the key", () => {
  assert.equal(podNamespace({ key: "kube-system/etcd", name: "etcd" }), "kube-system");
  assert.equal(podNamespace({ key: "x/etcd", namespace: "default" }), "default");
  assert.equal(podNamespace({ name: "etcd" }), "");
});

test("sortedPods: by namespace then name, numbers in order, from a Map or an array", () => {
  const pods = new Map(
    [pod("web-b"), pod("db-10"), pod("db-2"), { key: "kube-system/aaa", namespace: "kube-system", name: "aaa" }].map((p) => [
      p.key,
      p,
    ]),
  );
  const order = ["default/db-2", "default/db-10", "default/web-b", "kube-system/aaa"];
  assert.deepEqual(sortedPods(pods).map((p) => p.key), order);
  assert.deepEqual(sortedPods([...pods.values()].reverse()).map((p) => p.key), order);
  assert.equal(comparePods(pod("a"), pod("a")), 0);
  assert.deepEqual(sortedPods(undefined), []);
});

test("compareNatural: numbers by their value, the rest by character, a consistent order", () => {
  const words = ["db-10", "db-2", "db", "db-9a", "db-0", "db-9", "db-100", "a10b1", "a1b10", "a1b2", "web-9d", "web-10d", "2", "10", "1"];
  assert.deepEqual([...words].sort(compareNatural), [
    "1", "2", "10", "a1b2", "a1b10", "a10b1", "db", "db-0", "db-2", "db-9", "db-9a", "db-10", "db-100", "web-9d", "web-10d",
  ]); // prettier-ignore
  for (const a of words) {
    assert.equal(compareNatural(a, a), 0);
    for (const b of words) if (a !== b) assert.equal(compareNatural(a, b), -compareNatural(b, a), `${a} ${b}`);
  }
});

// A document just big enough for podListSection: elements with children, text, attributes, dataset.
class FakeElement {
  constructor(tagName) {
    this.tagName = tagName.toUpperCase();
    this.children = [];
    this.attributes = {};
    this.dataset = {};
    this.className = "";
    this.ownText = "";
  }
  append(...nodes) {
    this.children.push(...nodes);
  }
  get lastChild() {
    return this.children.at(-1) ?? null;
  }
  setAttribute(name, value) {
    this.attributes[name] = String(value);
  }
  set textContent(value) {
    this.children = [];
    this.ownText = String(value);
  }
  get textContent() {
    return this.ownText + this.children.map((child) => child.textContent).join("");
  }
  set innerHTML(value) {
    throw new Error(`innerHTML used: ${value}`);
  }
  all(tagName) {
    const found = [];
    for (const child of this.children) {
      if (child.tagName === tagName.toUpperCase()) found.push(child);
      found.push(...child.all(tagName));
    }
    return found;
  }
}

function withDocument(run) {
  globalThis.document = { createElement: (tag) => new FakeElement(tag) };
  try {
    return run();
  } finally {
    delete globalThis.document;
  }
}

test("podListSection: every pod of the node, sorted, with glyph, full name, namespace and words", () => {
  const pods = new Map();
  for (const p of [
    pod("web-7d4b9c8f5-x2kq4", { generateName: "web-7d4b9c8f5-", phase: "Running" }),
    pod("db-0", { state: "scheduled", phase: "Pending" }),
    { key: "kube-system/kube-proxy-2bx7q", namespace: "kube-system", name: "kube-proxy-2bx7q", state: "failed" },
    pod("<b>not markup</b>", { state: "terminating", phase: "Running" }),
  ]) {
    pods.set(p.key, p);
  }
  const section = withDocument(() => podListSection("node-1", pods));
  assert.equal(section.tagName, "SECTION");
  assert.equal(section.dataset.detail, "pods");
  assert.equal(section.all("h3")[0].textContent, "Pods on node-1 (4)");
  const rows = section.all("tbody")[0].children;
  assert.deepEqual(
    rows.map((row) => row.children.map((cell) => cell.textContent)),
    [
      ["◌", "<b>not markup</b>", "default", "Terminating (phase Running)"],
      ["○", "db-0", "default", "Pending (bound, starting)"],
      ["●", "web-7d4b9c8f5-x2kq4", "default", "Running"],
      ["✕", "kube-proxy-2bx7q", "kube-system", "Failed"],
    ],
  );
  assert.deepEqual(
    rows.map((row) => row.dataset.pod),
    ["default/<b>not markup</b>", "default/db-0", "default/web-7d4b9c8f5-x2kq4", "kube-system/kube-proxy-2bx7q"],
  );
  assert.equal(rows[3].className, "pod-row pod-failed");
  assert.equal(rows[0].children[0].attributes["aria-hidden"], "true", "the glyph is not read out: its words are");
  assert.equal(typeof globalThis.document, "undefined");
});

test("podListSection: a node without pods says so", () => {
  const section = withDocument(() => podListSection("node-2", []));
  assert.equal(section.all("h3")[0].textContent, "Pods on node-2 (0)");
  assert.equal(section.all("p")[0].textContent, "No pods on node-2.");
  assert.equal(section.all("table").length, 0);
});
