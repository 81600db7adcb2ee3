// The kinds the field form can write, each as a list of fields and a function from the fields' values to
// the manifest (a plain object; yaml.js writes it). No DOM here: fieldform.js draws the fields, this
// module decides what they mean, and tests/js/fieldform.test.mjs checks every kind without a browser.
//
// The values are what the inputs hold, as strings (`replicas: "3"`); pairs are `[{key, value}]`, rows
// `[{field: value}]`, a set of checkboxes an array of the checked values. A value the student left empty
// is left out of the manifest (the API server fills in its default, as for `protocol: TCP`), except the
// fields a kind cannot do without (a name, an image), which stay in the YAML as "" so its shape shows.
//
// The checks here follow the API server's own validation (k8s.io/apimachinery/pkg/util/validation/
// validation.go: IsDNS1123Subdomain, IsDNS1123Label, IsQualifiedName, IsValidLabelValue,
// IsConfigMapKey, IsValidPortNum, IsValidPortName), so a student sees the problem while typing; the
// API server checks again and its answer is the one that counts. An error is `{path, code, params}`:
// the path names the input (`ports.1.containerPort`), the code a message (labels.js, `error.<code>`).

// -- the fields ---------------------------------------------------------------------------------

const NAME = { id: "name", type: "text", label: "field.name", required: true };
const NAMESPACE = { id: "namespace", type: "text", label: "field.namespace", help: "help.namespace" };
const LABELS = { id: "labels", type: "pairs", label: "field.labels" };
const METADATA = [NAME, NAMESPACE, LABELS];

const PROTOCOLS = ["TCP", "UDP", "SCTP"];
const CONTAINER_PORT = {
  id: "ports",
  type: "rows",
  label: "field.ports",
  fields: [
    { id: "containerPort", type: "integer", label: "field.containerPort", required: true, min: 1, max: 65535 },
    { id: "name", type: "text", label: "field.portName" },
    { id: "protocol", type: "select", label: "field.protocol", options: PROTOCOLS },
  ],
};
const CONTAINER = [
  { id: "containerName", type: "text", label: "field.containerName", help: "help.containerName" },
  { id: "image", type: "text", label: "field.image", help: "help.image", required: true },
  CONTAINER_PORT,
  { id: "env", type: "pairs", label: "field.env" },
  { id: "nodeSelector", type: "pairs", label: "field.nodeSelector", help: "help.nodeSelector" },
];

export const VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*"];

/** Each kind: its apiVersion, its fields in the order the form shows them, and its first values. */
export const KINDS = {
  Pod: { apiVersion: "v1", name: "subdomain", fields: [...METADATA, ...CONTAINER] },
  Deployment: {
    apiVersion: "apps/v1",
    name: "subdomain",
    fields: [
      NAME,
      NAMESPACE,
      { ...LABELS, help: "help.deploymentLabels" },
      { id: "replicas", type: "integer", label: "field.replicas", help: "help.replicas", min: 0, max: 2147483647 },
      ...CONTAINER,
    ],
    initial: { replicas: "1" },
  },
  Service: {
    apiVersion: "v1",
    name: "dns1035",
    fields: [
      ...METADATA,
      { id: "type", type: "select", label: "field.serviceType", options: ["ClusterIP", "NodePort", "LoadBalancer"] },
      { id: "selector", type: "pairs", label: "field.selector", help: "help.selector" },
      {
        id: "ports",
        type: "rows",
        label: "field.ports",
        required: true,
        fields: [
          { id: "port", type: "integer", label: "field.port", required: true, min: 1, max: 65535 },
          { id: "targetPort", type: "text", label: "field.targetPort", help: "help.targetPort" },
          { id: "name", type: "text", label: "field.portName" },
          { id: "protocol", type: "select", label: "field.protocol", options: PROTOCOLS },
          { id: "nodePort", type: "integer", label: "field.nodePort", help: "help.nodePort", min: 30000, max: 32767 },
        ],
      },
    ],
    initial: { type: "ClusterIP", ports: [{}] },
  },
  ConfigMap: {
    apiVersion: "v1",
    name: "subdomain",
    fields: [...METADATA, { id: "data", type: "pairs", label: "field.data", multiline: true }],
    initial: { data: [{ key: "", value: "" }] },
  },
  Secret: {
    apiVersion: "v1",
    name: "subdomain",
    note: "note.secret",
    fields: [...METADATA, { id: "stringData", type: "pairs", label: "field.stringData", multiline: true }],
    initial: { stringData: [{ key: "", value: "" }] },
  },
  ServiceAccount: { apiVersion: "v1", name: "subdomain", fields: METADATA },
  Role: {
    apiVersion: "rbac.authorization.k8s.io/v1",
    name: "path",
    fields: [
      ...METADATA,
      {
        id: "rules",
        type: "rows",
        label: "field.rules",
        fields: [
          { id: "apiGroups", type: "list", label: "field.apiGroups", help: "help.apiGroups" },
          { id: "resources", type: "list", label: "field.resources", help: "help.resources", required: true },
          { id: "verbs", type: "choices", label: "field.verbs", options: VERBS, required: true },
          { id: "resourceNames", type: "list", label: "field.resourceNames", help: "help.resourceNames" },
        ],
      },
    ],
    initial: { rules: [{}] },
  },
  RoleBinding: {
    apiVersion: "rbac.authorization.k8s.io/v1",
    name: "path",
    fields: [
      ...METADATA,
      { id: "roleKind", type: "select", label: "field.roleKind", options: ["Role", "ClusterRole"] },
      { id: "roleName", type: "text", label: "field.roleName", required: true },
      {
        id: "subjects",
        type: "rows",
        label: "field.subjects",
        fields: [
          { id: "kind", type: "select", label: "field.subjectKind", options: ["User", "Group", "ServiceAccount"] },
          { id: "name", type: "text", label: "field.subjectName", required: true },
          { id: "namespace", type: "text", label: "field.subjectNamespace", help: "help.subjectNamespace" },
        ],
      },
    ],
    initial: { roleKind: "Role", subjects: [{ kind: "User" }] },
  },
};

export const KIND_NAMES = Object.keys(KINDS);

/** The values a new form for `kind` starts with: every field empty but for the kind's initial ones. */
export function initialValues(kind) {
  const spec = KINDS[kind];
  if (!spec) throw new RangeError(`the field form has no kind ${kind}`);
  const values = {};
  for (const field of spec.fields) values[field.id] = emptyValue(field);
  for (const [id, value] of Object.entries(spec.initial || {})) {
    const field = spec.fields.find((f) => f.id === id);
    values[id] = field.type === "rows" ? value.map((row) => ({ ...emptyRow(field), ...row })) : structuredClone(value);
  }
  return values;
}

export function emptyValue(field) {
  if (field.type === "pairs" || field.type === "rows") return [];
  if (field.type === "choices") return [];
  if (field.type === "select") return field.options[0];
  return "";
}

export function emptyRow(field) {
  return Object.fromEntries(field.fields.map((sub) => [sub.id, emptyValue(sub)]));
}

/**
 * Values for `kind` that keep what the student typed in the fields both kinds have (a name, labels, an
 * image ...) when they switch kinds, and start the others afresh.
 */
export function carryOver(kind, previous) {
  const values = initialValues(kind);
  for (const field of KINDS[kind].fields) {
    const old = previous?.[field.id];
    if (old === undefined || field.type === "rows" || field.type === "select") continue;
    if (field.type === "pairs" && Array.isArray(old)) {
      if (old.some((pair) => pair.key || pair.value)) values[field.id] = structuredClone(old);
    } else if (typeof old === "string" && old !== "") values[field.id] = old;
  }
  return values;
}

// -- the API server's name rules ------------------------------------------------------------------

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const CONFIGMAP_KEY = /^[-._a-zA-Z0-9]+$/;
const IANA_SVC_NAME = /^[-a-z0-9]+$/;

export function isDNS1123Label(text) {
  return text.length <= 63 && DNS1123_LABEL.test(text);
}

export function isDNS1035Label(text) {
  return text.length <= 63 && DNS1035_LABEL.test(text);
}

export function isDNS1123Subdomain(text) {
  return text.length <= 253 && DNS1123_SUBDOMAIN.test(text);
}

/** A path segment name (RBAC objects): anything but `.`, `..` and names with `/` or `%`. */
export function isPathSegmentName(text) {
  return text !== "." && text !== ".." && !/[/%]/.test(text);
}

/** A label key: `name` or `prefix/name`, the prefix a DNS subdomain (IsQualifiedName). */
export function isLabelKey(text) {
  const slash = text.lastIndexOf("/");
  const name = slash < 0 ? text : text.slice(slash + 1);
  if (slash >= 0) {
    const prefix = text.slice(0, slash);
    if (!prefix || !isDNS1123Subdomain(prefix)) return false;
  }
  return name.length <= 63 && QUALIFIED_NAME.test(name);
}

export function isLabelValue(text) {
  return text === "" || (text.length <= 63 && QUALIFIED_NAME.test(text));
}

export function isConfigMapKey(text) {
  return text.length <= 253 && CONFIGMAP_KEY.test(text) && text !== "." && text !== ".." && !text.startsWith("..");
}

/** A port name (IsValidPortName): at most 15 characters, a letter among them, no `--`, no `-` at an end. */
export function isPortName(text) {
  return (
    text.length <= 15 &&
    IANA_SVC_NAME.test(text) &&
    /[a-z]/.test(text) &&
    !text.includes("--") &&
    !text.startsWith("-") &&
    !text.endsWith("-")
  );
}

// -- from values to a manifest ----------------------------------------------------------------------

const text = (value) => (typeof value === "string" ? value.trim() : value == null ? "" : String(value));

/** A whole number from an input, or the text as typed when it is not one (the API server will say so). */
function integer(value) {
  const raw = text(value);
  if (raw === "") return undefined;
  return /^-?\d+$/.test(raw) ? Number(raw) : raw;
}

/** A comma-separated list, without empty entries. */
export function splitList(value) {
  return text(value)
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

function filledPairs(pairs) {
  return (pairs || []).filter((pair) => text(pair.key) !== "" || (pair.value ?? "") !== "");
}

/** Pairs as a mapping; keys are trimmed, values kept as typed (a ConfigMap value may start with a space). */
function mapping(pairs, { trimValues = true } = {}) {
  const filled = filledPairs(pairs).filter((pair) => text(pair.key) !== "");
  if (!filled.length) return undefined;
  return Object.fromEntries(filled.map((pair) => [text(pair.key), trimValues ? text(pair.value) : (pair.value ?? "")]));
}

function isFilledRow(field, row) {
  return field.fields.some((sub) => {
    const value = row?.[sub.id];
    if (sub.type === "select") return false; // a select always has a value: it does not make a row
    return Array.isArray(value) ? value.length > 0 : text(value) !== "";
  });
}

function filledRows(field, rows) {
  return (rows || []).filter((row) => isFilledRow(field, row));
}

function metadata(values) {
  const meta = { name: text(values.name) };
  if (text(values.namespace)) meta.namespace = text(values.namespace);
  const labels = mapping(values.labels);
  if (labels) meta.labels = labels;
  return meta;
}

function fieldOf(kind, id) {
  return KINDS[kind].fields.find((field) => field.id === id);
}

function podSpec(kind, values) {
  const container = { name: text(values.containerName) || text(values.name), image: text(values.image) };
  const ports = filledRows(fieldOf(kind, "ports"), values.ports).map((row) => {
    const port = {};
    if (text(row.name)) port.name = text(row.name);
    port.containerPort = integer(row.containerPort) ?? "";
    if (row.protocol && row.protocol !== "TCP") port.protocol = row.protocol;
    return port;
  });
  if (ports.length) container.ports = ports;
  const env = filledPairs(values.env).map((pair) => ({ name: text(pair.key), value: pair.value ?? "" }));
  if (env.length) container.env = env;
  const spec = { containers: [container] };
  const nodeSelector = mapping(values.nodeSelector);
  if (nodeSelector) spec.nodeSelector = nodeSelector;
  return spec;
}

const BUILDERS = {
  Pod: (values) => ({ spec: podSpec("Pod", values) }),
  Deployment(values) {
    // The selector and the pod template's labels must match (the API server refuses a Deployment
    // whose selector does not select its own template): both are the labels given, or app: <name>.
    const podLabels = mapping(values.labels) || { app: text(values.name) };
    const spec = {};
    const replicas = integer(values.replicas);
    if (replicas !== undefined) spec.replicas = replicas;
    spec.selector = { matchLabels: podLabels };
    spec.template = { metadata: { labels: { ...podLabels } }, spec: podSpec("Deployment", values) };
    return { spec };
  },
  Service(values) {
    const spec = { type: values.type || "ClusterIP" };
    const selector = mapping(values.selector);
    if (selector) spec.selector = selector;
    spec.ports = filledRows(fieldOf("Service", "ports"), values.ports).map((row) => {
      const port = {};
      if (text(row.name)) port.name = text(row.name);
      if (row.protocol && row.protocol !== "TCP") port.protocol = row.protocol;
      port.port = integer(row.port) ?? "";
      const target = integer(row.targetPort);
      if (target !== undefined) port.targetPort = target;
      const nodePort = integer(row.nodePort);
      if (nodePort !== undefined && spec.type !== "ClusterIP") port.nodePort = nodePort;
      return port;
    });
    return { spec };
  },
  ConfigMap(values) {
    const data = mapping(values.data, { trimValues: false });
    return data ? { data } : {};
  },
  Secret(values) {
    // stringData, not data: the student types and reads plain values; the API server encodes them.
    const stringData = mapping(values.stringData, { trimValues: false });
    return { type: "Opaque", ...(stringData ? { stringData } : {}) };
  },
  ServiceAccount: () => ({}),
  Role(values) {
    const rules = filledRows(fieldOf("Role", "rules"), values.rules).map((row) => {
      // An empty API group list means the core group, which RBAC spells as the empty string.
      const groups = splitList(row.apiGroups).map((group) => (group === '""' || group === "''" ? "" : group));
      const rule = { apiGroups: groups.length ? groups : [""], resources: splitList(row.resources), verbs: [...(row.verbs || [])] };
      const names = splitList(row.resourceNames);
      if (names.length) rule.resourceNames = names;
      return rule;
    });
    return rules.length ? { rules } : {};
  },
  RoleBinding(values) {
    const subjects = filledRows(fieldOf("RoleBinding", "subjects"), values.subjects).map((row) => {
      const kind = row.kind || "User";
      const subject = { kind, name: text(row.name) };
      // Users and groups belong to the RBAC API group; a ServiceAccount is a core object with a namespace.
      if (kind === "ServiceAccount") {
        if (text(row.namespace)) subject.namespace = text(row.namespace);
      } else {
        subject.apiGroup = "rbac.authorization.k8s.io";
      }
      return subject;
    });
    const roleRef = { apiGroup: "rbac.authorization.k8s.io", kind: values.roleKind || "Role", name: text(values.roleName) };
    // A binding without subjects is valid (and grants nothing): the list is left out, as kubectl would.
    return subjects.length ? { subjects, roleRef } : { roleRef };
  },
};

/** The manifest (a plain object) for `kind` and the form's values. */
export function manifestFor(kind, values) {
  const spec = KINDS[kind];
  if (!spec) throw new RangeError(`the field form has no kind ${kind}`);
  return { apiVersion: spec.apiVersion, kind, metadata: metadata(values), ...BUILDERS[kind](values) };
}

// -- checks -----------------------------------------------------------------------------------------

function checkInteger(errors, path, field, raw) {
  const value = text(raw);
  if (value === "") return;
  const number = /^-?\d+$/.test(value) ? Number(value) : NaN;
  if (!(number >= field.min && number <= field.max)) errors.push({ path, code: "integer", params: { min: field.min, max: field.max } });
}

function checkDuplicates(errors, prefix, keys) {
  const seen = new Set();
  keys.forEach((name, index) => {
    if (name === "") return;
    if (seen.has(name)) errors.push({ path: `${prefix}.${index}.key`, code: "duplicate", params: { key: name } });
    seen.add(name);
  });
}

/** Pairs: every filled row needs a key that the `keyRule` accepts, once; values checked by `valueRule`. */
function checkPairs(errors, id, pairs, { keyRule, keyCode, valueRule, valueCode }) {
  (pairs || []).forEach((pair, index) => {
    const name = text(pair.key);
    const filled = name !== "" || (pair.value ?? "") !== "";
    if (!filled) return;
    if (name === "") errors.push({ path: `${id}.${index}.key`, code: "required", params: { field: "field.key" } });
    else if (!keyRule(name)) errors.push({ path: `${id}.${index}.key`, code: keyCode });
    if (valueRule && !valueRule(text(pair.value))) errors.push({ path: `${id}.${index}.value`, code: valueCode });
  });
  checkDuplicates(
    errors,
    id,
    (pairs || []).map((pair) => text(pair.key)),
  );
}

const NAME_RULES = {
  subdomain: [isDNS1123Subdomain, "dns_subdomain"],
  dns1035: [isDNS1035Label, "dns1035_label"],
  path: [isPathSegmentName, "path_segment"],
};

/**
 * What is wrong with the values for `kind`, as `[{path, code, params}]` (empty when nothing is). A
 * `required` error's params name the field's label key (`{field: "field.name"}`) for the message.
 */
export function validate(kind, values) {
  const spec = KINDS[kind];
  if (!spec) throw new RangeError(`the field form has no kind ${kind}`);
  const errors = [];
  const name = text(values.name);
  const [nameRule, nameCode] = NAME_RULES[spec.name];
  if (name === "") errors.push({ path: "name", code: "required", params: { field: "field.name" } });
  else if (!nameRule(name)) errors.push({ path: "name", code: nameCode });
  const namespace = text(values.namespace);
  if (namespace && !isDNS1123Label(namespace)) errors.push({ path: "namespace", code: "dns_label" });
  const labelPairs = { keyRule: isLabelKey, keyCode: "label_key", valueRule: isLabelValue, valueCode: "label_value" };
  checkPairs(errors, "labels", values.labels, labelPairs);

  for (const field of spec.fields) {
    const value = values[field.id];
    if (METADATA.includes(field) || field.id === "labels") continue;
    if (field.type === "text" && field.required && text(value) === "") {
      errors.push({ path: field.id, code: "required", params: { field: field.label } });
    }
    if (field.type === "integer") checkInteger(errors, field.id, field, value);
    if (field.type === "rows") checkRows(errors, kind, field, value);
  }

  if (kind === "Pod" || kind === "Deployment") {
    // An empty container name borrows the object's, which may be a valid name but not a valid container
    // name (`web.v2` has a dot): the container name field says so (an invalid name is reported once).
    const containerName = text(values.containerName) || (nameRule(name) ? name : "");
    if (containerName && !isDNS1123Label(containerName)) errors.push({ path: "containerName", code: "dns_label" });
    if (/\s/.test(text(values.image))) errors.push({ path: "image", code: "no_spaces", params: { field: "field.image" } });
    checkPairs(errors, "env", values.env, { keyRule: (key) => !key.includes("="), keyCode: "env_name" });
    checkPairs(errors, "nodeSelector", values.nodeSelector, labelPairs);
  }
  if (kind === "Service") checkPairs(errors, "selector", values.selector, labelPairs);
  if (kind === "ConfigMap") checkPairs(errors, "data", values.data, { keyRule: isConfigMapKey, keyCode: "data_key" });
  if (kind === "Secret") checkPairs(errors, "stringData", values.stringData, { keyRule: isConfigMapKey, keyCode: "data_key" });
  return errors;
}

function checkRows(errors, kind, field, rows) {
  const all = rows || [];
  const filled = all.map((row) => isFilledRow(field, row));
  if (field.required && !filled.some(Boolean)) {
    // Point at the first row's first input (or the group when there is no row).
    const first = field.fields.find((sub) => sub.required) || field.fields[0];
    const path = all.length ? `${field.id}.0.${first.id}` : field.id;
    errors.push({ path, code: "required", params: { field: first.label } });
  }
  all.forEach((row, index) => {
    if (!filled[index]) return;
    const at = (id) => `${field.id}.${index}.${id}`;
    for (const sub of field.fields) {
      const value = row[sub.id];
      const empty = Array.isArray(value) ? value.length === 0 : text(value) === "";
      if (sub.required && empty) errors.push({ path: at(sub.id), code: "required", params: { field: sub.label } });
      if (sub.type === "integer") checkInteger(errors, at(sub.id), sub, value);
    }
    if (field.id === "ports") {
      const portName = text(row.name);
      const rule = kind === "Service" ? isDNS1123Label : isPortName;
      if (portName && !rule(portName)) errors.push({ path: at("name"), code: kind === "Service" ? "dns_label" : "port_name" });
      const target = text(row.targetPort);
      if (target && !/^\d+$/.test(target) && !isPortName(target)) errors.push({ path: at("targetPort"), code: "port_name" });
      if (target && /^\d+$/.test(target)) checkInteger(errors, at("targetPort"), { min: 1, max: 65535 }, target);
    }
    if (field.id === "subjects" && row.kind === "ServiceAccount" && text(row.namespace) && !isDNS1123Label(text(row.namespace))) {
      errors.push({ path: at("namespace"), code: "dns_label" });
    }
  });
  if (field.id === "ports" && kind === "Service") {
    // Upstream: with more than one port, each needs a name, and the names must differ
    // (pkg/apis/core/validation/validation.go, validateServicePort).
    const used = all.map((row, index) => ({ row, index })).filter(({ index }) => filled[index]);
    if (used.length > 1) {
      const seen = new Set();
      for (const { row, index } of used) {
        const portName = text(row.name);
        if (portName === "" || seen.has(portName)) errors.push({ path: `ports.${index}.name`, code: "port_names" });
        seen.add(portName);
      }
    }
  }
}

/** A check's message in the page's words: `error.<code>` with its params (a label key param is looked up). */
export function errorMessage(error, format) {
  const params = { ...(error.params || {}) };
  if (params.field) params.field = format(params.field);
  return format(`error.${error.code}`, params);
}
