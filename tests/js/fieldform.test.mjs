// The field form's pure core without a browser: the YAML emitter (every string reads back as itself,
// in a small reader of the subset it writes and, when Python is there, in PyYAML, the server's parser),
// each kind's manifest from its fields, and the checks' messages for what is missing or wrong.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { shiftPaths } from "../../static/courses/fieldform.js";
import {
  KINDS,
  KIND_NAMES,
  carryOver,
  errorMessage,
  initialValues,
  isLabelKey,
  isPortName,
  manifestFor,
  splitList,
  validate,
} from "../../static/courses/fieldform/kinds.js";
import { DEFAULT_LABELS, formatLabel, labelsFrom } from "../../static/courses/fieldform/labels.js";
import { isPlainSafe, literalBlock, scalar, toYAML, toYAMLDocuments } from "../../static/courses/fieldform/yaml.js";

// -- a reader for the YAML subset toYAML writes (block mappings and sequences, plain and double-quoted
//    scalars, literal blocks), strict enough that a wrong indentation or quote fails a test ----------

const ESCAPES = { 0: "\0", a: "\x07", b: "\b", t: "\t", n: "\n", v: "\v", f: "\f", r: "\r", e: "\x1b", '"': '"', "\\": "\\", N: "\x85", L: "\u2028", P: "\u2029", " ": " ", "/": "/" };

function readDoubleQuoted(text) {
  assert.ok(text.startsWith('"') && text.endsWith('"') && text.length >= 2, `not a quoted scalar: ${text}`);
  let out = "";
  for (let i = 1; i < text.length - 1; i++) {
    const ch = text[i];
    if (ch === '"') assert.fail(`unescaped quote in ${text}`);
    if (ch !== "\\") {
      out += ch;
      continue;
    }
    const next = text[++i];
    const width = { x: 2, u: 4, U: 8 }[next];
    if (width) {
      out += String.fromCodePoint(parseInt(text.slice(i + 1, i + 1 + width), 16));
      i += width;
    } else {
      assert.ok(next in ESCAPES, `unknown escape \\${next}`);
      out += ESCAPES[next];
    }
  }
  return out;
}

function readScalar(text) {
  if (text.startsWith('"')) return readDoubleQuoted(text);
  if (text === "[]") return [];
  if (text === "{}") return {};
  if (text === "null") return null;
  if (text === "true" || text === "false") return text === "true";
  if (/^-?\d+(\.\d*)?(e[-+]\d+)?$/.test(text)) return Number(text);
  assert.ok(isPlainSafe(text), `a plain scalar the emitter should have quoted: ${JSON.stringify(text)}`);
  return text;
}

// YAML indents with spaces only: a tab or a no-break space is content.
const indentOf = (line) => line.match(/^ */)[0].length;

/** The end of the double-quoted scalar that opens `line` (the index of its closing quote). */
function quotedEnd(line) {
  let end = 1;
  while (line[end] !== '"') {
    assert.ok(end < line.length, `unterminated quote in ${line}`);
    end += line[end] === "\\" ? 2 : 1;
  }
  return end;
}

/** Whether a sequence item's text starts a mapping (`key: value`) rather than being a scalar. */
function isMappingEntry(rest) {
  if (rest.startsWith('"')) return /^:( |$)/.test(rest.slice(quotedEnd(rest) + 1));
  return !rest.startsWith("|") && /:( |$)/.test(rest);
}

function readYAML(text) {
  assert.ok(text.endsWith("\n"), "a document ends with a newline");
  const lines = text.slice(0, -1).split("\n");
  let pos = 0;

  function block(header, parentIndent) {
    const match = header.match(/^\|(\d)?([-+]?)$/);
    assert.ok(match, `bad block header ${header}`);
    let contentIndent = match[1] ? parentIndent + Number(match[1]) : null;
    const body = [];
    while (pos < lines.length) {
      const line = lines[pos];
      if (/^ *$/.test(line) && (contentIndent === null || line.length <= contentIndent)) {
        body.push("");
        pos++;
        continue;
      }
      if (contentIndent === null) contentIndent = indentOf(line);
      if (indentOf(line) < contentIndent || contentIndent <= parentIndent) break;
      body.push(line.slice(contentIndent));
      pos++;
    }
    let trailing = 0;
    while (body.length && body.at(-1) === "") {
      body.pop();
      trailing++;
    }
    // The empty lines after the content are the block's own: kept (`+`) or dropped (`-`, or all but one).
    const content = body.join("\n");
    if (match[2] === "-") return content;
    if (match[2] === "+") return `${content}\n${"\n".repeat(trailing)}`;
    return `${content}\n`;
  }

  function value(rest, indent, nestedIndent) {
    if (rest.startsWith("|")) return block(rest, indent);
    if (rest !== "") return readScalar(rest);
    const next = lines[pos];
    assert.ok(next !== undefined && indentOf(next) >= nestedIndent, "a key with nothing under it");
    return node(indentOf(next));
  }

  function node(indent) {
    const line = lines[pos];
    return line.slice(indent).startsWith("-") ? sequence(indent) : mapping(indent);
  }

  function mapping(indent) {
    const result = {};
    while (pos < lines.length && indentOf(lines[pos]) === indent && !lines[pos].slice(indent).startsWith("- ")) {
      const line = lines[pos].slice(indent);
      let name;
      let rest;
      if (line.startsWith('"')) {
        const end = quotedEnd(line);
        name = readDoubleQuoted(line.slice(0, end + 1));
        rest = line.slice(end + 1);
      } else {
        const colon = line.search(/:( |$)/);
        name = line.slice(0, colon);
        assert.ok(isPlainSafe(name), `a plain key the emitter should have quoted: ${name}`);
        rest = line.slice(colon);
      }
      assert.ok(rest === ":" || rest.startsWith(": "), `no ': ' after key ${name}`);
      pos++;
      assert.ok(!(name in result), `duplicate key ${name}`);
      // A list under a key sits at the key's own indentation (the style of Kubernetes' docs).
      const nested = lines[pos]?.slice(indent).startsWith("- ") || lines[pos]?.slice(indent) === "-";
      result[name] = value(rest.slice(2), indent, nested ? indent : indent + 1);
    }
    return result;
  }

  function sequence(indent) {
    const result = [];
    while (pos < lines.length && indentOf(lines[pos]) === indent && /^-( |$)/.test(lines[pos].slice(indent))) {
      const rest = lines[pos].slice(indent + 2);
      if (rest.startsWith("- ") || isMappingEntry(rest)) {
        // A collection that starts on the dash's line: read it as if the dash were a space.
        lines[pos] = `${" ".repeat(indent + 2)}${rest}`;
        result.push(node(indent + 2));
      } else {
        pos++;
        result.push(value(rest, indent, indent + 1));
      }
    }
    return result;
  }

  const result = mapping(0);
  assert.equal(pos, lines.length, `unread lines from ${pos + 1}: ${lines.slice(pos).join("\\n")}`);
  return result;
}

// -- the emitter ----------------------------------------------------------------------------------

test("strings that every YAML version reads as themselves are written bare", () => {
  for (const text of ["web", "nginx:1.27", "app.kubernetes.io/name", "a#b", "Hello world", "中文名字", "pods/log", "x-y_z", "a:b:c", "a,b", "ÿes", 'say "hi"', "it's"]) {
    assert.equal(scalar(text), text, text);
  }
});

test("strings a parser would read as something else, or not at all, are double-quoted", () => {
  const table = [
    ["", '""'],
    [" leading", '" leading"'],
    ["trailing ", '"trailing "'],
    ["key: value", '"key: value"'],
    ["ends with colon:", '"ends with colon:"'],
    ["a #comment", '"a #comment"'],
    ["#hash", '"#hash"'],
    ["yes", '"yes"'],
    ["No", '"No"'],
    ["on", '"on"'],
    ["OFF", '"OFF"'],
    ["y", '"y"'],
    ["true", '"true"'],
    ["null", '"null"'],
    ["~", '"~"'],
    ["=", '"="'],
    ["<<", '"<<"'],
    ["3", '"3"'],
    ["0x1F", '"0x1F"'],
    ["1:30", '"1:30"'],
    ["1e3", '"1e3"'],
    ["2024-01-01", '"2024-01-01"'],
    [".inf", '".inf"'],
    ["+1", '"+1"'],
    ["-1", '"-1"'],
    ["- item", '"- item"'],
    ["---", '"---"'],
    ["*alias", '"*alias"'],
    ["&anchor", '"&anchor"'],
    ["!tag", '"!tag"'],
    ["{json}", '"{json}"'],
    ["[list]", '"[list]"'],
    ["'single'", "\"'single'\""],
    ["back\\slash", "back\\slash"], // a backslash is nothing special in a plain scalar
    ["@home", '"@home"'],
    ["`tick`", '"`tick`"'],
    ["tab\there", '"tab\\there"'],
    ["nul\0", '"nul\\0"'],
    ["bell\x07", '"bell\\a"'],
    ["del\x7f", '"del\\x7f"'],
    ["line\u2028sep", '"line\\Lsep"'],
    ["next\x85line", '"next\\Nline"'],
    ["\ufeffbom", '"\\ufeffbom"'],
    ["cr\r\nlf", '"cr\\r\\nlf"'],
    ["emoji 😀:", '"emoji 😀:"'],
  ];
  for (const [text, written] of table) assert.equal(scalar(text), written, JSON.stringify(text));
});

test("numbers, booleans and null are written as YAML's own", () => {
  assert.equal(scalar(80), "80");
  assert.equal(scalar(-3), "-3");
  assert.equal(scalar(0.5), "0.5");
  assert.equal(scalar(1e21), "1.0e+21"); // YAML 1.1 needs the dot
  assert.equal(scalar(true), "true");
  assert.equal(scalar(null), "null");
  assert.throws(() => scalar(NaN), TypeError);
});

test("multi-line strings are literal blocks with the right chomping and indentation indicators", () => {
  assert.deepEqual(literalBlock("a\nb"), { header: "|-", lines: ["a", "b"], trailingEmpty: 0 });
  assert.deepEqual(literalBlock("a\nb\n"), { header: "|", lines: ["a", "b"], trailingEmpty: 0 });
  assert.deepEqual(literalBlock("a\nb\n\n\n"), { header: "|+", lines: ["a", "b"], trailingEmpty: 2 });
  assert.deepEqual(literalBlock("nbsp\u00a0\n\n"), { header: "|+", lines: ["nbsp\u00a0"], trailingEmpty: 1 });
  assert.equal(literalBlock("  indented\nb").header, "|2-");
  assert.equal(literalBlock("\n  indented").header, "|2-");
  assert.equal(literalBlock("trailing \nspace"), null, "a trailing space would be invisible");
  assert.equal(literalBlock("cr\r\nlf"), null);
  assert.equal(literalBlock("\n\n"), null, "nothing but line breaks");
  assert.equal(literalBlock("one line"), null);
  const text = toYAML({ data: { "game.properties": "lives=3\nenemies=aliens\n", motd: "  hello\nworld" } });
  assert.equal(text, ["data:", "  game.properties: |", "    lives=3", "    enemies=aliens", "  motd: |2-", "      hello", "    world", ""].join("\n"));
});

test("a manifest is written in block style, lists at their key's indentation, empty ones as [] and {}", () => {
  const manifest = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web", labels: { app: "web" }, annotations: {} },
    spec: { containers: [{ name: "web", image: "nginx:1.27", ports: [{ containerPort: 80 }], args: ["--port", "80"] }], volumes: [] },
    matrix: [["a", "b"], []],
    skipped: undefined,
  };
  assert.equal(
    toYAML(manifest),
    `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
  annotations: {}
spec:
  containers:
  - name: web
    image: nginx:1.27
    ports:
    - containerPort: 80
    args:
    - "--port"
    - "80"
  volumes: []
matrix:
- - a
  - b
- []
`,
  );
  assert.equal(toYAMLDocuments([{ kind: "A" }, { kind: "B" }]), "kind: A\n---\nkind: B\n");
  assert.throws(() => toYAML(["not", "a", "mapping"]), TypeError);
});

// A deterministic generator of awkward strings and shapes, for the round trips below.
function generator(seed) {
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const atoms = ["a", "B", " ", "\n", "\t", ":", ": ", " #", "#", "-", "- ", "?", "'", '"', "\\", "{", "]", ",", "&", "*", "!", "|", ">", "%", "@", "`",
    "0", "1.5", "+", ".", "yes", "No", "on", "null", "~", "=", "<<", "\r", "\x85", "\u2028", "\ufeff", "\0", "\x7f", "中文", "😀", "é", "\u00a0", "---", "1:20", "2024-01-01", "0x1f", ".inf", "\n\n", "\n  ", "  \n"];
  const string = () => Array.from({ length: Math.floor(next() * 6) }, () => atoms[Math.floor(next() * atoms.length)]).join("");
  const value = (depth) => {
    const r = next();
    if (depth > 2 || r < 0.55) return next() < 0.9 ? string() : [0, 7, -3, true, false, null][Math.floor(next() * 6)];
    if (r < 0.78) return Array.from({ length: Math.floor(next() * 4) }, () => value(depth + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(next() * 4) }, () => [string(), value(depth + 1)]));
  };
  return () => Object.fromEntries(Array.from({ length: 1 + Math.floor(next() * 4) }, () => [string(), value(0)]));
}

test("awkward strings, keys and shapes read back as themselves", () => {
  const make = generator(17);
  for (let i = 0; i < 1000; i++) {
    const object = make();
    const text = toYAML(object);
    assert.deepEqual(readYAML(text), object, text);
  }
});

// PyYAML is what the server parses manifests with (courses/manifests/): when the project's Python is
// there, the same round trip goes through it too, including the explicit form of a very long key.
let found;
function python() {
  if (found !== undefined) return found;
  found = null;
  const root = fileURLToPath(new URL("../../", import.meta.url));
  for (const candidate of [`${root}.venv/bin/python`, "python3"]) {
    if (candidate.startsWith("/") && !existsSync(candidate)) continue;
    const probe = spawnSync(candidate, ["-c", "import yaml"], { encoding: "utf8" });
    if (probe.status === 0) return (found = candidate);
  }
  return found;
}

// In CI (CI=true) a missing PyYAML fails the test instead of skipping it, as the project's other tests do.
const pyyamlSkip = python() || process.env.CI === "true" ? false : "no Python with PyYAML here";

test("PyYAML reads what the emitter writes as the same data", { skip: pyyamlSkip }, () => {
  assert.ok(python(), "no Python with PyYAML: run `make test`, which installs the project's .venv");
  const make = generator(4242);
  const objects = Array.from({ length: 1000 }, make);
  objects.push({ ["k".repeat(1200)]: ["a", { b: "c" }], z: 1 }, { ["k".repeat(1200)]: { b: "c" }, y: "x\ny" });
  const documents = objects.map(toYAML);
  const script = `
import json, sys, yaml
documents = json.load(sys.stdin)
out = []
for text in documents:
    try:
        out.append({"ok": yaml.safe_load(text)})
    except Exception as error:
        out.append({"error": str(error)})
print(json.dumps(out))
`;
  const run = spawnSync(python(), ["-c", script], { input: JSON.stringify(documents), encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(run.status, 0, run.stderr);
  const answers = JSON.parse(run.stdout);
  answers.forEach((answer, index) => {
    assert.equal(answer.error, undefined, `PyYAML refused:\n${documents[index]}`);
    assert.deepEqual(answer.ok, objects[index], documents[index]);
  });
});

// -- kinds: from the form's values to manifests -----------------------------------------------------

function valuesFor(kind, overrides) {
  return { ...initialValues(kind), ...overrides };
}

test("a Pod from its fields: container named after the pod, ports, env and a node selector", () => {
  const values = valuesFor("Pod", {
    name: " web ",
    labels: [{ key: "app", value: "web" }, { key: "", value: "" }],
    image: "nginx:1.27",
    ports: [{ containerPort: "80", name: "http", protocol: "TCP" }, { containerPort: "53", name: "", protocol: "UDP" }],
    env: [{ key: "MODE", value: "demo" }],
    nodeSelector: [{ key: "disktype", value: "ssd" }],
  });
  assert.deepEqual(manifestFor("Pod", values), {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "web", labels: { app: "web" } },
    spec: {
      containers: [
        {
          name: "web",
          image: "nginx:1.27",
          ports: [{ name: "http", containerPort: 80 }, { containerPort: 53, protocol: "UDP" }],
          env: [{ name: "MODE", value: "demo" }],
        },
      ],
      nodeSelector: { disktype: "ssd" },
    },
  });
  assert.deepEqual(validate("Pod", values), []);
});

test("a Deployment selects its template by its labels, or by app: <name> when there are none", () => {
  const values = valuesFor("Deployment", { name: "web", namespace: "shop", replicas: "3", image: "nginx:1.27", containerName: "server" });
  assert.deepEqual(manifestFor("Deployment", values), {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "shop" },
    spec: {
      replicas: 3,
      selector: { matchLabels: { app: "web" } },
      template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "server", image: "nginx:1.27" }] } },
    },
  });
  const labelled = manifestFor("Deployment", { ...values, labels: [{ key: "tier", value: "front" }] });
  assert.deepEqual(labelled.metadata.labels, { tier: "front" });
  assert.deepEqual(labelled.spec.selector.matchLabels, { tier: "front" });
  assert.deepEqual(labelled.spec.template.metadata.labels, { tier: "front" });
  assert.equal(
    toYAML(manifestFor("Deployment", values)),
    `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: server
        image: nginx:1.27
`,
  );
});

test("a Service: its type, selector and ports (a named target port stays a name; nodePort only off ClusterIP)", () => {
  const values = valuesFor("Service", {
    name: "web",
    type: "NodePort",
    selector: [{ key: "app", value: "web" }],
    ports: [
      { port: "80", targetPort: "http", name: "http", protocol: "TCP", nodePort: "30080" },
      { port: "53", targetPort: "5353", name: "dns", protocol: "UDP", nodePort: "" },
    ],
  });
  assert.deepEqual(manifestFor("Service", values), {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "web" },
    spec: {
      type: "NodePort",
      selector: { app: "web" },
      ports: [
        { name: "http", port: 80, targetPort: "http", nodePort: 30080 },
        { name: "dns", protocol: "UDP", port: 53, targetPort: 5353 },
      ],
    },
  });
  assert.deepEqual(validate("Service", values), []);
  const clusterIP = manifestFor("Service", { ...values, type: "ClusterIP" });
  assert.equal(clusterIP.spec.ports[0].nodePort, undefined);
});

test("a ConfigMap keeps its values exactly as typed, multi-line ones as literal blocks", () => {
  const values = valuesFor("ConfigMap", {
    name: "game",
    data: [{ key: "lives", value: "3" }, { key: "motd", value: "Welcome\n  to the game\n" }, { key: "", value: "" }, { key: "padded", value: " yes " }],
  });
  const manifest = manifestFor("ConfigMap", values);
  assert.deepEqual(manifest, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "game" }, data: { lives: "3", motd: "Welcome\n  to the game\n", padded: " yes " } });
  assert.equal(
    toYAML(manifest),
    `apiVersion: v1
kind: ConfigMap
metadata:
  name: game
data:
  lives: "3"
  motd: |
    Welcome
      to the game
  padded: " yes "
`,
  );
  assert.deepEqual(readYAML(toYAML(manifest)), manifest);
});

test("a Secret uses stringData, so the student writes and reads plain values", () => {
  const manifest = manifestFor("Secret", valuesFor("Secret", { name: "db", stringData: [{ key: "password", value: "s3cr3t: yes" }] }));
  assert.deepEqual(manifest, { apiVersion: "v1", kind: "Secret", metadata: { name: "db" }, type: "Opaque", stringData: { password: "s3cr3t: yes" } });
  assert.match(toYAML(manifest), /^ {2}password: "s3cr3t: yes"$/m);
  assert.equal(manifest.data, undefined);
});

test("a ServiceAccount is its metadata", () => {
  assert.deepEqual(manifestFor("ServiceAccount", valuesFor("ServiceAccount", { name: "robot", namespace: "team-a" })), {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "robot", namespace: "team-a" },
  });
});

test("a Role's rules: the core group when none is given, verbs in a fixed order, empty rows left out", () => {
  const values = valuesFor("Role", {
    name: "pod-reader",
    rules: [
      { apiGroups: "", resources: "pods, pods/log", verbs: ["get", "list", "watch"], resourceNames: "" },
      { apiGroups: "apps", resources: "deployments", verbs: ["get"], resourceNames: "web, api" },
      { apiGroups: "", resources: "", verbs: [], resourceNames: "" },
    ],
  });
  assert.deepEqual(manifestFor("Role", values), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "pod-reader" },
    rules: [
      { apiGroups: [""], resources: ["pods", "pods/log"], verbs: ["get", "list", "watch"] },
      { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get"], resourceNames: ["web", "api"] },
    ],
  });
  assert.match(toYAML(manifestFor("Role", values)), /^- apiGroups:\n {2}- ""\n {2}resources:\n {2}- pods\n/m);
  assert.deepEqual(validate("Role", values), []);
});

test("a RoleBinding: users and groups in the RBAC API group, a ServiceAccount with its namespace", () => {
  const values = valuesFor("RoleBinding", {
    name: "read-pods",
    roleKind: "ClusterRole",
    roleName: "view",
    subjects: [
      { kind: "User", name: "jane", namespace: "" },
      { kind: "ServiceAccount", name: "robot", namespace: "team-a" },
      { kind: "Group", name: "", namespace: "" },
    ],
  });
  assert.deepEqual(manifestFor("RoleBinding", values), {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: { name: "read-pods" },
    subjects: [
      { kind: "User", name: "jane", apiGroup: "rbac.authorization.k8s.io" },
      { kind: "ServiceAccount", name: "robot", namespace: "team-a" },
    ],
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
  });
});

test("every kind starts from values that make a manifest of that kind", () => {
  for (const kind of KIND_NAMES) {
    const manifest = manifestFor(kind, initialValues(kind));
    assert.equal(manifest.kind, kind);
    assert.equal(manifest.metadata.name, "");
    assert.match(toYAML(manifest), new RegExp(`^apiVersion: .+\\nkind: ${kind}\\nmetadata:\\n {2}name: ""\\n`));
  }
  assert.throws(() => manifestFor("CronJob", {}), RangeError);
});

test("switching kinds keeps the shared fields and starts the others afresh", () => {
  const pod = valuesFor("Pod", { name: "web", labels: [{ key: "app", value: "web" }], image: "nginx", ports: [{ containerPort: "80" }] });
  const deployment = carryOver("Deployment", pod);
  assert.equal(deployment.name, "web");
  assert.equal(deployment.image, "nginx");
  assert.deepEqual(deployment.labels, [{ key: "app", value: "web" }]);
  assert.equal(deployment.replicas, "1");
  assert.deepEqual(deployment.ports, [], "rows are not carried over");
  deployment.labels[0].value = "changed";
  assert.equal(pod.labels[0].value, "web", "a copy, not the same rows");
  const configMap = carryOver("ConfigMap", pod);
  assert.equal(configMap.image, undefined);
  assert.deepEqual(configMap.data, [{ key: "", value: "" }]);
});

// -- checks -----------------------------------------------------------------------------------------

const codes = (errors) => errors.map((error) => `${error.path}:${error.code}`).sort();

test("missing required fields are named, each at its own input", () => {
  assert.deepEqual(codes(validate("Pod", initialValues("Pod"))), ["image:required", "name:required"]);
  assert.deepEqual(codes(validate("Deployment", initialValues("Deployment"))), ["image:required", "name:required"]);
  assert.deepEqual(codes(validate("Service", initialValues("Service"))), ["name:required", "ports.0.port:required"]);
  assert.deepEqual(codes(validate("Service", { ...initialValues("Service"), name: "web", ports: [] })), ["ports:required"]);
  assert.deepEqual(codes(validate("ConfigMap", initialValues("ConfigMap"))), ["name:required"]);
  assert.deepEqual(codes(validate("RoleBinding", initialValues("RoleBinding"))), ["name:required", "roleName:required"]);
  const rule = { ...initialValues("Role"), name: "r", rules: [{ apiGroups: "apps", resources: "", verbs: [], resourceNames: "" }] };
  assert.deepEqual(codes(validate("Role", rule)), ["rules.0.resources:required", "rules.0.verbs:required"]);
  const subject = { ...initialValues("RoleBinding"), name: "b", roleName: "r", subjects: [{ kind: "ServiceAccount", name: "", namespace: "x" }] };
  assert.deepEqual(codes(validate("RoleBinding", subject)), ["subjects.0.name:required"]);
  const data = { ...initialValues("ConfigMap"), name: "c", data: [{ key: "", value: "orphan" }] };
  assert.deepEqual(codes(validate("ConfigMap", data)), ["data.0.key:required"]);
});

test("the API server's name rules, checked while typing", () => {
  const pod = (overrides) => codes(validate("Pod", { ...initialValues("Pod"), name: "web", image: "nginx", ...overrides }));
  assert.deepEqual(pod({ name: "Web" }), ["name:dns_subdomain"]);
  assert.deepEqual(pod({ name: "web.v2", containerName: "web" }), []);
  assert.deepEqual(pod({ name: "web.v2" }), ["containerName:dns_label"], "the container borrows the pod's name");
  assert.deepEqual(pod({ name: "a".repeat(254) }), ["name:dns_subdomain"]);
  assert.deepEqual(pod({ namespace: "team.a" }), ["namespace:dns_label"]);
  assert.deepEqual(pod({ containerName: "my_app" }), ["containerName:dns_label"]);
  assert.deepEqual(pod({ image: "nginx latest" }), ["image:no_spaces"]);
  assert.deepEqual(pod({ labels: [{ key: "app", value: "-bad" }] }), ["labels.0.value:label_value"]);
  assert.deepEqual(pod({ labels: [{ key: "example.com/app", value: "" }] }), []);
  assert.deepEqual(pod({ labels: [{ key: "a b", value: "x" }, { key: "app", value: "1" }, { key: "app", value: "2" }] }), ["labels.0.key:label_key", "labels.2.key:duplicate"]);
  assert.deepEqual(pod({ ports: [{ containerPort: "0", name: "", protocol: "TCP" }] }), ["ports.0.containerPort:integer"]);
  assert.deepEqual(pod({ ports: [{ containerPort: "eighty", name: "", protocol: "TCP" }] }), ["ports.0.containerPort:integer"]);
  assert.deepEqual(pod({ ports: [{ containerPort: "80", name: "web-http-server-1", protocol: "TCP" }] }), ["ports.0.name:port_name"]);
  assert.deepEqual(pod({ env: [{ key: "A=B", value: "1" }] }), ["env.0.key:env_name"]);
  assert.deepEqual(codes(validate("Service", { ...initialValues("Service"), name: "1web", ports: [{ port: "80" }] })), ["name:dns1035_label"]);
  assert.deepEqual(codes(validate("Role", { ...initialValues("Role"), name: "a/b" })), ["name:path_segment"]);
  assert.deepEqual(codes(validate("Role", { ...initialValues("Role"), name: "system:reader" })), []);
  assert.deepEqual(codes(validate("ConfigMap", { ...initialValues("ConfigMap"), name: "c", data: [{ key: "..x", value: "" }] })), ["data.0.key:data_key"]);
  assert.deepEqual(codes(validate("Deployment", { ...initialValues("Deployment"), name: "d", image: "i", replicas: "-1" })), ["replicas:integer"]);
  const twoPorts = { ...initialValues("Service"), name: "web", ports: [{ port: "80", name: "" }, { port: "443", name: "" }] };
  assert.deepEqual(codes(validate("Service", twoPorts)), ["ports.0.name:port_names", "ports.1.name:port_names"]);
  assert.deepEqual(codes(validate("Service", { ...twoPorts, type: "NodePort", ports: [{ port: "80", nodePort: "80" }] })), ["ports.0.nodePort:integer"]);
});

test("name rules agree with upstream's examples", () => {
  assert.ok(isLabelKey("app.kubernetes.io/name"));
  assert.ok(!isLabelKey("/name"));
  assert.ok(!isLabelKey("Example.com/name"));
  assert.ok(isPortName("http"));
  assert.ok(!isPortName("80"), "at least one letter");
  assert.ok(!isPortName("a--b"));
  assert.deepEqual(splitList(" pods, ,pods/log ,"), ["pods", "pods/log"]);
});

test("messages come from the page's labels, in its language, with their placeholders filled", () => {
  const english = (key, params) => formatLabel(DEFAULT_LABELS, key, params);
  assert.equal(errorMessage({ path: "name", code: "required", params: { field: "field.name" } }, english), "Name is required.");
  assert.equal(errorMessage({ path: "x", code: "integer", params: { min: 1, max: 65535 } }, english), "Use a whole number from 1 to 65535.");
  const chinese = labelsFrom(JSON.stringify({ "field.name": "名称", "error.required": "{field}是必填项。", "field.image": 7 }));
  const format = (key, params) => formatLabel(chinese, key, params);
  assert.equal(errorMessage({ path: "name", code: "required", params: { field: "field.name" } }, format), "名称是必填项。");
  assert.equal(chinese["field.image"], "Image", "a label that is not a string keeps the English one");
  assert.deepEqual(labelsFrom("{broken"), { ...DEFAULT_LABELS });
  assert.equal(formatLabel(DEFAULT_LABELS, "no.such.key"), "no.such.key");
  for (const kind of KIND_NAMES) {
    for (const error of validate(kind, { ...initialValues(kind), name: "Bad Name/%" })) {
      assert.ok(`error.${error.code}` in DEFAULT_LABELS, `no message for ${error.code}`);
    }
  }
});

test("every label key a kind's fields use has an English text", () => {
  const keys = new Set();
  const walk = (fields) => {
    for (const field of fields) {
      keys.add(field.label);
      if (field.help) keys.add(field.help);
      if (field.type === "pairs" || field.type === "rows") keys.add(`add.${field.id}`).add(`row.${field.id}`);
      if (field.fields) walk(field.fields);
    }
  };
  for (const kind of KIND_NAMES) {
    walk(KINDS[kind].fields);
    if (KINDS[kind].note) keys.add(KINDS[kind].note);
  }
  for (const key of keys) assert.ok(key in DEFAULT_LABELS, `no English text for ${key}`);
});

test("removing a row renumbers what was touched after it", () => {
  const touched = new Set(["name", "ports.0.containerPort", "ports.1.containerPort", "ports.2.name", "labels.1.key"]);
  assert.deepEqual([...shiftPaths(touched, "ports", 1)].sort(), ["labels.1.key", "name", "ports.0.containerPort", "ports.1.name"]);
});
