// The manifest editor without a browser: the server's diagnostics block read and placed on the text,
// and the vendored CodeMirror bundle (it loads in Node: its state, YAML language and lint need no DOM)
// taking those diagnostics where the editor puts them.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { ManifestEditor, diagnosticRanges, labelFor, parseDiagnostics } from "../../static/courses/editor.js";

const BUNDLE_URL = new URL("../../static/vendor/codemirror/codemirror.js", import.meta.url);

test("the diagnostics block is read leniently: bad entries are dropped, never thrown", () => {
  assert.deepEqual(parseDiagnostics('[{"line": 3, "column": 5, "message": "unknown field \\"replica\\""}]'), [
    { line: 3, column: 5, message: 'unknown field "replica"', severity: "error" },
  ]);
  assert.deepEqual(parseDiagnostics('[{"line": "2", "message": " too long ", "severity": "warning"}]'), [
    { line: 2, column: null, message: "too long", severity: "warning" },
  ]);
  // No line (a whole-submission error): the first line. A bad column: the whole line.
  assert.deepEqual(parseDiagnostics('[{"message": "more than 50 documents", "column": 0, "severity": "fatal"}]'), [
    { line: 1, column: null, message: "more than 50 documents", severity: "error" },
  ]);
  assert.deepEqual(parseDiagnostics('[{"line": 1}, null, 7, {"line": 2.5, "message": "x"}, {"line": -1, "message": ""}]'), [
    { line: 1, column: null, message: "x", severity: "error" },
  ]);
  assert.deepEqual(parseDiagnostics("not json"), []);
  assert.deepEqual(parseDiagnostics('{"line": 1, "message": "an object, not a list"}'), []);
  assert.deepEqual(parseDiagnostics(""), []);
  assert.deepEqual(parseDiagnostics(undefined), []);
});

const TEXT = [
  "apiVersion: v1", // 1
  "kind: ConfigMap", // 2
  "metadata:", // 3
  "  name: game", // 4
  "data:", // 5
  "  lives: 3   ", // 6
  "---", // 7
  "apiVersion: apps/v1", // 8
  "", // 9
  "  emoji: 😀😀 x", // 10
].join("\n");

function at(text, range) {
  return text.slice(range.from, range.to);
}

test("a diagnostic covers its line from its column to the end of what the line holds", () => {
  const [range] = diagnosticRanges(TEXT, [{ line: 6, column: 10, message: "m", severity: "error" }]);
  assert.equal(at(TEXT, range), "3");
  assert.deepEqual({ severity: range.severity, message: range.message }, { severity: "error", message: "m" });
  // Line numbers run on across `---`: line 8 is the second document's first line.
  assert.equal(at(TEXT, diagnosticRanges(TEXT, [{ line: 8, column: 1, message: "m" }])[0]), "apiVersion: apps/v1");
});

test("without a column, or with one past the line's content, the whole line's content is marked", () => {
  for (const column of [null, 40, 12]) {
    const [range] = diagnosticRanges(TEXT, [{ line: 6, column, message: "m" }]);
    assert.equal(at(TEXT, range), "lives: 3", `column ${column}`);
  }
});

test("an empty line gets a point, and a line past the end is the last line", () => {
  const [empty] = diagnosticRanges(TEXT, [{ line: 9, column: 1, message: "m" }]);
  assert.equal(empty.from, empty.to);
  assert.equal(empty.from, TEXT.indexOf("\n\n") + 1);
  const [past] = diagnosticRanges(TEXT, [{ line: 99, column: 3, message: "m" }]);
  assert.equal(at(TEXT, past), "emoji: 😀😀 x");
  const [nothing] = diagnosticRanges("", [{ line: 2, column: 1, message: "m" }]);
  assert.deepEqual([nothing.from, nothing.to], [0, 0]);
});

test("columns count characters as the server does, not UTF-16 units", () => {
  // Column 13 is the "x" after two emoji (each one character for Python, two units for JavaScript).
  const [range] = diagnosticRanges(TEXT, [{ line: 10, column: 13, message: "m" }]);
  assert.equal(at(TEXT, range), "x");
});

test("the editor is named after the textarea's label", () => {
  assert.equal(labelFor({ labels: [{ textContent: "\n  Manifest\n  (YAML) " }], getAttribute: () => null }), "Manifest (YAML)");
  assert.equal(labelFor({ labels: [], getAttribute: (name) => (name === "aria-label" ? "YAML" : null) }), "YAML");
  assert.equal(labelFor({ getAttribute: () => null }), "YAML manifest");
});

/** Just enough of a textarea for the editor without CodeMirror (the bundle failed to load). */
function fakeTextarea(value) {
  const attributes = new Map();
  const listeners = new Map();
  return {
    value,
    form: null,
    dataset: {},
    setAttribute: (name, v) => attributes.set(name, String(v)),
    removeAttribute: (name) => attributes.delete(name),
    getAttribute: (name) => attributes.get(name) ?? null,
    addEventListener: (type, listener) => listeners.set(type, listener),
    dispatch: (type) => listeners.get(type)?.(),
    focus() {
      this.focused = true;
    },
    attributes,
  };
}

test("without the bundle the textarea is the editor: values, focus and diagnostics still work", () => {
  const textarea = fakeTextarea("kind: Pod\n");
  const editor = new ManifestEditor(textarea);
  assert.equal(editor.getValue(), "kind: Pod\n");
  editor.setValue("kind: Service\n");
  assert.equal(textarea.value, "kind: Service\n");
  editor.showDiagnostics(parseDiagnostics('[{"line": 1, "message": "no apiVersion"}]'));
  assert.equal(textarea.attributes.get("aria-invalid"), "true");
  editor.setValue("apiVersion: v1\n");
  assert.equal(textarea.attributes.has("aria-invalid"), false, "a new text clears the old diagnostics");
  editor.focus();
  assert.ok(textarea.focused);
  textarea.dispatch("input"); // someone else set the value: nothing to follow without a view
  assert.equal(editor.getValue(), "apiVersion: v1\n");
});

test("the vendored bundle is the one its README describes", () => {
  const readme = readFileSync(new URL("README.md", BUNDLE_URL), "utf8");
  const sha256 = createHash("sha256").update(readFileSync(BUNDLE_URL)).digest("hex");
  assert.ok(readme.includes(sha256), "rebuild with `cd tools/codemirror && npm ci && npm run build` and commit README.md too");
  for (const name of ["@codemirror/view", "@codemirror/lang-yaml", "@codemirror/lint"]) assert.ok(readme.includes(`\`${name}\``), name);
});

test("the bundle exports everything editor.js uses", async () => {
  const cm = await import(BUNDLE_URL.href);
  const source = readFileSync(new URL("../../static/courses/editor.js", import.meta.url), "utf8");
  const used = new Set([...source.matchAll(/\bcm\.([A-Za-z]+)/g)].map((match) => match[1]));
  for (const match of source.matchAll(/const \{([^}]+)\} = this\.cm/g)) {
    for (const name of match[1].split(",")) used.add(name.trim());
  }
  assert.ok(used.size > 10, `found ${[...used]}`);
  for (const name of used) assert.ok(name in cm, `the bundle does not export ${name}: add it to tools/codemirror/entry.js`);
});

test("diagnostics placed by diagnosticRanges are what CodeMirror's lint holds", async () => {
  const cm = await import(BUNDLE_URL.href);
  const diagnostics = parseDiagnostics('[{"line": 6, "column": 10, "message": "must be a string"}, {"line": 10, "column": 13, "message": "x"}]');
  const ranges = diagnosticRanges(TEXT, diagnostics);
  let state = cm.EditorState.create({ doc: TEXT, extensions: [cm.yaml(), cm.lintGutter()] });
  state = state.update(cm.setDiagnostics(state, ranges)).state;
  const held = [];
  cm.forEachDiagnostic(state, (diagnostic, from, to) => held.push({ from, to, message: diagnostic.message }));
  assert.deepEqual(
    held,
    ranges.map(({ from, to, message }) => ({ from, to, message })),
  );
  assert.equal(cm.diagnosticCount(state), 2);
  assert.equal(state.sliceDoc(held[0].from, held[0].to), "3");
  // An empty list clears them (what the first edit after a result does).
  state = state.update(cm.setDiagnostics(state, [])).state;
  assert.equal(cm.diagnosticCount(state), 0);
});
