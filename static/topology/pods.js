// Pods as a student tells them apart: the part of a pod's name that differs, and its state in words.
//
// Pods of one Deployment share all of their name but the end: `web-7d4b9c8f5-x2kq4` and
// `web-7d4b9c8f5-p9rtz` are told apart only by `x2kq4` and `p9rtz`, the suffix Kubernetes generated
// after the pod's `generateName`. `podSuffix(pod)` finds that suffix (from `generateName` when the trace
// has it, else from the shape of the name), so a chip in the diagram shows what differs rather than
// what every chip shares. `POD_STATES` gives each state a glyph and words besides its colour (a chip
// says its state by glyph and outline too, never by colour alone), and `podListSection` lays out every
// pod of a node for the inspector, when a node has more pods than its box can draw.
//
// Pure, apart from `podListSection` (which builds DOM nodes, with text only): nothing here touches
// `document` when imported, so the tests import it in Node (tests/js/pods.test.mjs).

import { gettext, interpolate, lazy } from "./i18n.js";

/**
 * How each state of a pod in the diagram reads: a glyph (on its chip, before its name) and words.
 * The states are the model's (static/topology/model.js `storedPodState`): `scheduled` is bound to a
 * node and not running yet (phase Pending), `terminating` is being deleted; `unknown` is also how any
 * other state reads.
 */
export const POD_STATES = Object.freeze({
  // The phases are Kubernetes' own words (kubectl and the Chinese docs keep them too); `scheduled`
  // says more than its phase, in the page's language (i18n.js).
  scheduled: Object.freeze({
    glyph: "○",
    get words() {
      return WORDS().scheduled;
    },
  }),
  running: Object.freeze({ glyph: "●", words: "Running" }),
  succeeded: Object.freeze({ glyph: "✓", words: "Succeeded" }),
  failed: Object.freeze({ glyph: "✕", words: "Failed" }),
  terminating: Object.freeze({ glyph: "◌", words: "Terminating" }),
  unknown: Object.freeze({ glyph: "?", words: "Unknown" }),
});

/** The words of this module, looked up once. */
const WORDS = lazy(() => ({
  scheduled: gettext("Pending (bound, starting)"),
  phase: gettext("%(state)s (phase %(phase)s)"),
}));

/** The characters Kubernetes draws generated name suffixes from (no vowels, no 0, 1 or 3). */
export const SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
const GENERATED_SUFFIX = new RegExp(`^[${SUFFIX_ALPHABET}]{5}$`);

/** A pod's name: its `name`, or the last part of its `namespace/name` key. */
function nameOf(pod) {
  if (typeof pod?.name === "string" && pod.name) return pod.name;
  return String(pod?.key ?? "").split("/").pop();
}

/** A pod's namespace: its `namespace`, or the first part of its `namespace/name` key. */
export function podNamespace(pod) {
  if (typeof pod?.namespace === "string") return pod.namespace;
  const key = String(pod?.key ?? "");
  return key.includes("/") ? key.slice(0, key.indexOf("/")) : "";
}

/**
 * The part of a pod's name that tells it apart from its siblings: `web-7d4b9c8f5-x2kq4` -> `x2kq4`.
 * The name minus `generateName` when that is a prefix of it; else the last `-`-separated segment when
 * it looks generated (5 characters of `SUFFIX_ALPHABET`, with something before it); else the whole
 * name (`web`, `db-0`, `my-pod-hello`).
 */
export function podSuffix(pod) {
  const name = nameOf(pod);
  const prefix = pod?.generateName;
  if (typeof prefix === "string" && prefix && name.length > prefix.length && name.startsWith(prefix)) {
    return name.slice(prefix.length);
  }
  const dash = name.lastIndexOf("-");
  if (dash > 0 && GENERATED_SUFFIX.test(name.slice(dash + 1))) return name.slice(dash + 1);
  return name;
}

/** A pod's state as `POD_STATES` says it (`unknown` for a state it does not know). */
export function podState(pod) {
  return Object.hasOwn(POD_STATES, pod?.state) ? POD_STATES[pod.state] : POD_STATES.unknown;
}

/**
 * A pod's state in words, with its phase when the state does not already say it: `Running`,
 * `Pending (bound, starting)`, `Terminating (phase Running)`.
 */
export function podStateWords(pod) {
  const { words } = podState(pod);
  const phase = typeof pod?.phase === "string" ? pod.phase : "";
  return phase && !words.startsWith(phase) ? interpolate(WORDS().phase, { state: words, phase }, true) : words;
}

/** A pod in a few words: `x2kq4 · Running`. */
export function podWords(pod) {
  return `${podSuffix(pod)} · ${podState(pod).words}`;
}

const isDigit = (code) => code >= 48 && code <= 57; // NaN (past the end) is not

/**
 * Compare two strings by character code, but the runs of digits where they differ by their number:
 * `db-2` < `db-10` (leading zeros aside). Intl.Collator's numeric order does this too, several times
 * slower, and a node's pods are sorted again whenever one of them changes.
 */
export function compareNatural(a, b) {
  if (a === b) return 0;
  const shorter = Math.min(a.length, b.length);
  let i = 0;
  while (i < shorter && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  let run = i; // where the digits around the first difference start, if it is in a number
  while (run > 0 && isDigit(a.charCodeAt(run - 1))) run--;
  if (isDigit(a.charCodeAt(run)) && isDigit(b.charCodeAt(run))) {
    let endA = i;
    let endB = i;
    while (isDigit(a.charCodeAt(endA))) endA++;
    while (isDigit(b.charCodeAt(endB))) endB++;
    if (endA !== endB) return endA < endB ? -1 : 1; // the longer number is the greater
  }
  if (i === shorter) return a.length < b.length ? -1 : 1;
  return a.charCodeAt(i) < b.charCodeAt(i) ? -1 : 1;
}

/** Order pods by namespace, then name (`db-2` before `db-10`): the order chips and lists show them. */
export function comparePods(a, b) {
  return compareNatural(podNamespace(a), podNamespace(b)) || compareNatural(nameOf(a), nameOf(b));
}

/** The pods of `pods` (an array, a Map of pods or any iterable of them) in `comparePods` order. */
export function sortedPods(pods) {
  const list = pods instanceof Map ? [...pods.values()] : [...(pods ?? [])];
  return list.sort(comparePods);
}

function element(tag, { className, text } = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * Every pod of the node `nodeName` as an inspector section: a table with one row per pod, sorted by
 * namespace and name, of its glyph, full name, namespace and state in words. Text only (no markup
 * from data); the glyph is hidden from screen readers, which read the words beside it.
 */
export function podListSection(nodeName, pods) {
  const list = sortedPods(pods);
  const section = element("section", { className: "detail detail-pods" });
  section.dataset.detail = "pods";
  const values = { node: nodeName, count: list.length };
  section.append(element("h3", { text: interpolate(gettext("Pods on %(node)s (%(count)s)"), values, true) }));
  if (!list.length) {
    section.append(element("p", { text: interpolate(gettext("No pods on %(node)s."), values, true) }));
    return section;
  }
  const table = element("table", { className: "detail-table pod-table" });
  table.append(element("caption", { text: gettext("Sorted by namespace, then name") }));
  const head = element("tr");
  const headings = [gettext("State"), "Pod", gettext("Namespace"), gettext("Phase")];
  for (const [i, heading] of headings.entries()) {
    const cell = element("th", { text: heading });
    cell.setAttribute("scope", "col");
    if (i === 0) cell.setAttribute("aria-hidden", "true"); // its glyphs: the Phase column says them
    head.append(cell);
  }
  table.append(element("thead"));
  table.lastChild.append(head);
  const body = element("tbody");
  for (const pod of list) {
    const row = element("tr", { className: `pod-row pod-${pod.state}` });
    row.dataset.pod = pod.key ?? `${podNamespace(pod)}/${nameOf(pod)}`;
    const glyph = element("td", { className: "pod-glyph", text: podState(pod).glyph });
    glyph.setAttribute("aria-hidden", "true");
    const name = element("th", { className: "mono", text: nameOf(pod) });
    name.setAttribute("scope", "row");
    row.append(glyph, name, element("td", { text: podNamespace(pod) }), element("td", { text: podStateWords(pod) }));
    body.append(row);
  }
  table.append(body);
  section.append(table);
  return section;
}
