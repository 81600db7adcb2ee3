// The field form's words, in English. The page can replace any of them with a translation: the template
// fills `<script type="application/json" id="fieldform-labels">` with the same keys, each string through
// Django's translation, and the form reads it (labelsFrom). A key the page leaves out keeps the English
// text below, so a new field never shows a bare key.
//
// `{name}` in a string is a placeholder the form fills in (formatLabel). Kubernetes' own words (kinds,
// field names in the YAML, verbs like `get` or `watch`) are not here: they are the same in every language,
// and the student will meet them in the YAML beside the form.

export const DEFAULT_LABELS = Object.freeze({
  // the form around the fields
  "form.kind": "Kind",
  "form.kindHelp": "The form writes one manifest of this kind into the editor, replacing its text.",
  "form.remove": "Remove",
  "form.removeRow": "Remove {row}",
  "form.handEdited": "You changed the YAML by hand, so the form stopped rewriting it.",
  "form.rewrite": "Rewrite the YAML from the form",
  "form.optional": "optional",
  // metadata, on every kind
  "field.name": "Name",
  "field.namespace": "Namespace",
  "help.namespace": "Leave empty for the default namespace.",
  "field.labels": "Labels",
  "add.labels": "Add a label",
  "row.labels": "Label {n}",
  "field.key": "Key",
  "field.value": "Value",
  // Pod and Deployment
  "field.replicas": "Replicas",
  "help.replicas": "How many copies of the pod the Deployment keeps running.",
  "help.deploymentLabels": "The Deployment finds its pods by these labels (app: its name when you give none).",
  "field.containerName": "Container name",
  "help.containerName": "Leave empty to use the name above.",
  "field.image": "Image",
  "help.image": "For example nginx:1.27",
  "field.ports": "Ports",
  "add.ports": "Add a port",
  "row.ports": "Port {n}",
  "field.containerPort": "Container port",
  "field.portName": "Port name",
  "field.protocol": "Protocol",
  "field.env": "Environment variables",
  "add.env": "Add a variable",
  "row.env": "Variable {n}",
  "field.nodeSelector": "Node selector",
  "help.nodeSelector": "The pod runs only on a node that has every one of these labels.",
  "add.nodeSelector": "Add a node label",
  "row.nodeSelector": "Node label {n}",
  // Service
  "field.serviceType": "Type",
  "field.selector": "Selector",
  "help.selector": "The Service sends traffic to the pods that have every one of these labels.",
  "add.selector": "Add a label",
  "row.selector": "Selector label {n}",
  "field.port": "Port",
  "field.targetPort": "Target port",
  "help.targetPort": "The container's port (a number or a port name); empty: the same as Port.",
  "field.nodePort": "Node port",
  "help.nodePort": "For NodePort: 30000–32767; empty lets the cluster choose.",
  // ConfigMap and Secret
  "field.data": "Data",
  "add.data": "Add an entry",
  "row.data": "Entry {n}",
  "field.stringData": "Values",
  "add.stringData": "Add a value",
  "row.stringData": "Value {n}",
  "note.secret":
    "stringData holds the values as plain text, so you can read them here. The API server stores them base64-encoded under data; base64 is not encryption: anyone allowed to read this Secret can read its values.",
  // Role and RoleBinding
  "field.rules": "Rules",
  "add.rules": "Add a rule",
  "row.rules": "Rule {n}",
  "field.apiGroups": "API groups",
  "help.apiGroups": "Comma-separated; leave empty for the core group (pods, configmaps, services …).",
  "field.resources": "Resources",
  "help.resources": "Comma-separated, for example pods, pods/log",
  "field.verbs": "Verbs",
  "verb.all": "* (every verb)",
  "field.resourceNames": "Resource names",
  "help.resourceNames": "Comma-separated; empty: every object of these resources.",
  "field.roleKind": "Role kind",
  "field.roleName": "Role name",
  "field.subjects": "Subjects",
  "add.subjects": "Add a subject",
  "row.subjects": "Subject {n}",
  "field.subjectKind": "Kind",
  "field.subjectName": "Name",
  "field.subjectNamespace": "Namespace",
  "help.subjectNamespace": "For a ServiceAccount: its namespace (empty: the binding's).",
  // what the checks say (the API server checks the same, and its answer is the final word)
  "error.required": "{field} is required.",
  "error.dns_subdomain":
    "Use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit (at most 253 characters).",
  "error.dns_label": "Use lower-case letters, digits and '-', starting and ending with a letter or digit (at most 63 characters).",
  "error.dns1035_label": "Use lower-case letters, digits and '-', starting with a letter and ending with a letter or digit (at most 63 characters).",
  "error.path_segment": "A name cannot be '.' or '..' or contain '/' or '%'.",
  "error.label_key": "A label key is a name (letters, digits, '-', '_', '.', at most 63 characters), optionally after a DNS prefix and '/'.",
  "error.label_value": "A label value is empty or letters, digits, '-', '_' and '.', starting and ending with a letter or digit (at most 63 characters).",
  "error.data_key": "A key uses letters, digits, '-', '_' and '.' (at most 253 characters, not '.' or '..').",
  "error.env_name": "A variable name cannot be empty or contain '='.",
  "error.port_name": "A port name has at most 15 lower-case letters, digits and '-', with at least one letter.",
  "error.integer": "Use a whole number from {min} to {max}.",
  "error.no_spaces": "{field} cannot contain spaces.",
  "error.duplicate": "“{key}” appears twice.",
  "error.port_names": "With several ports, every port needs a name, and each a different one.",
});

/** The labels a page provides (its JSON block) over the English defaults; a broken block changes nothing. */
export function labelsFrom(jsonText) {
  let given = {};
  try {
    const parsed = JSON.parse(jsonText || "{}");
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) given = parsed;
  } catch {
    given = {};
  }
  const labels = { ...DEFAULT_LABELS };
  for (const [key, value] of Object.entries(given)) if (typeof value === "string" && value) labels[key] = value;
  return labels;
}

/** `labels[key]` with `{name}` placeholders filled from `params` (a missing key shows the key itself). */
export function formatLabel(labels, key, params = {}) {
  const text = labels[key] ?? DEFAULT_LABELS[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
}
