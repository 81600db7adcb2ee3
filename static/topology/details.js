// The inspector's detail sections: what the API server's gates decided about one request, in words.
//
// A request passes flow control (API Priority and Fairness: which FlowSchema and priority level, how
// long it queued), authorization (RBAC or the Node authorizer: which binding, role and rule let it in,
// or every binding that names the user and why none of its rules fits), admission (each plugin or
// webhook, and the JSON patch a mutating one applied) and audit (the level the policy recorded it at).
// The trace says all of this in `flowcontrol.decision`, `rbac.decision`, `admission.step` and
// `request.completed`'s `audit` (docs/trace.md); these functions only lay those fields out. They build
// DOM nodes from event fields and nothing else, with text (✓, ✕, +, -, ~) beside every colour. Their
// words are in the page's language (i18n.js); what the trace names (users, groups, bindings, roles,
// rules, verbs, plugins, FlowSchemas, priority levels, audit levels) stays as the API spells it.

import { gettext, interpolate, lazy } from "./i18n.js";

/** The sections' words, looked up once. */
const W = lazy(() => ({
  moreLines: gettext("… %(count)s more line(s)"),
  patchLabel: gettext("JSON patch, one operation per line"),
  theUser: gettext("the user"),
  rbacAllowed: gettext("Authorization (%(authorizer)s): ✓ allowed"),
  rbacRefused: gettext("Authorization (%(authorizer)s): ✕ refused"),
  inNamespace: gettext(" in namespace %(namespace)s"),
  clusterWide: gettext(" (cluster-wide)"),
  user: gettext("user"),
  groups: gettext("groups"),
  askedTo: gettext("asked to"),
  binding: gettext("binding"),
  role: gettext("role"),
  rule: gettext("rule"),
  why: gettext("why"),
  clientIsTold: gettext("client is told"),
  considered: gettext("Bindings that name %(user)s or a group of theirs (%(count)s), and why none fits"),
  subject: gettext("subject"),
  whyNot: gettext("why not"),
  noBinding: gettext("No binding names %(user)s or any of their groups."),
  admission: gettext("Admission: %(count)s step(s)"),
  admissionRefused: gettext("Admission: %(count)s step(s), ✕ refused"),
  webhookCall: gettext(" (webhook call)"),
  refused: gettext("✕ refused"),
  passed: gettext("✓ passed"),
  patched: gettext(", patched %(count)s field(s)"),
  step: gettext(" %(phase)s%(webhook)s: %(verdict)s%(patched)s"),
  apf: gettext("API Priority and Fairness"),
  flowHeading: gettext("Flow control (%(mode)s): %(outcome)s"),
  rejected: gettext("✕ rejected"),
  seatsInUse: gettext("%(seats)s (level: %(used)s of %(limit)s in use)"),
  none: gettext("(none)"),
  queued: gettext("#%(queue)s (%(count)s waiting in it)"),
  priorityLevel: gettext("priority level"),
  flow: gettext("flow"),
  outcome: gettext("outcome"),
  seats: gettext("seats"),
  queue: gettext("queue"),
  waitingInLevel: gettext("waiting in the level"),
  waited: gettext("waited"),
  rejectedBecause: gettext("rejected because"),
  auditAt: gettext("Audit: recorded at level %(level)s"),
  auditNot: gettext("Audit: not recorded"),
  level: gettext("level"),
  policy: gettext("policy"),
  where: gettext("where"),
  auditLog: gettext("the cluster's audit log, auditID = this request's Audit-ID"),
}));

const say = (template, values) => interpolate(template, values, true);

/** `{verbs: ["get"], apiGroups: [""], resources: ["pods"]}` -> `verbs [get] · apiGroups [""] · resources [pods]`. */
export function ruleText(rule) {
  if (!rule || typeof rule !== "object") return String(rule ?? "");
  return Object.entries(rule)
    .map(([field, value]) => {
      const items = Array.isArray(value) ? value.map((v) => (v === "" ? '""' : String(v))) : [String(value)];
      return `${field} [${items.join(", ")}]`;
    })
    .join(" · ");
}

const PATCH_SIGNS = { add: "+", remove: "-", replace: "~", move: "→", copy: "⧉", test: "?" };

/**
 * A JSON patch (RFC 6902) as readable diff lines: one `{sign, op, text}` per operation, then one per
 * line of its value (pretty-printed, indented). `add /spec/tolerations` + the value's lines.
 */
export function patchLines(patch, { maxValueLines = 40 } = {}) {
  const lines = [];
  for (const operation of Array.isArray(patch) ? patch : []) {
    const op = String(operation?.op ?? "?");
    const sign = PATCH_SIGNS[op] || "•";
    const from = operation?.from !== undefined ? ` from ${operation.from}` : "";
    lines.push({ sign, op, text: `${op} ${operation?.path ?? ""}${from}` });
    if (operation && "value" in operation) {
      const valueLines = JSON.stringify(operation.value, null, 2).split("\n");
      const shown = valueLines.slice(0, maxValueLines);
      for (const line of shown) lines.push({ sign: " ", op, text: `    ${line}`, value: true });
      if (valueLines.length > shown.length) {
        lines.push({ sign: " ", op, text: `    ${say(W().moreLines, { count: valueLines.length - shown.length })}`, value: true });
      }
    }
  }
  return lines;
}

function el(tag, { className, text } = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function factList(facts) {
  const list = el("dl");
  for (const [term, value] of facts) {
    if (value === undefined || value === null || value === "") continue;
    list.append(el("dt", { text: term }), el("dd", { text: String(value) }));
  }
  return list;
}

function section(kind, heading, verdict) {
  const box = el("section", { className: `detail detail-${kind}${verdict ? ` verdict-${verdict}` : ""}` });
  box.dataset.detail = kind;
  box.append(el("h3", { text: heading }));
  return box;
}

/** The patch of a mutating admission step as a diff (a `<pre>` the keyboard can scroll). */
export function patchDiff(patch) {
  const pre = el("pre", { className: "patch-diff" });
  pre.tabIndex = 0;
  pre.setAttribute("aria-label", W().patchLabel);
  for (const line of patchLines(patch)) {
    const span = el("span", { className: `patch-line patch-${line.op}${line.value ? " patch-value" : ""}` });
    span.textContent = `${line.sign} ${line.text}\n`;
    pre.append(span);
  }
  return pre;
}

/** Authorization: allowed by which binding/role/rule, or refused and why no binding fits. */
export function rbacSection(event) {
  const allowed = event.allowed === true;
  const who = event.user || W().theUser;
  const heading = say(allowed ? W().rbacAllowed : W().rbacRefused, { authorizer: event.authorizer || "RBAC" });
  const box = section("rbac", heading, allowed ? "allow" : "deny");
  const target = event.path
    ? `${event.verb || "get"} ${event.path}`
    : [event.verb, event.group ? `${event.resource}.${event.group}` : event.resource, event.name && `"${event.name}"`]
        .filter(Boolean)
        .join(" ") + (event.namespace ? say(W().inNamespace, { namespace: event.namespace }) : W().clusterWide);
  box.append(
    factList([
      [W().user, who],
      [W().groups, Array.isArray(event.groups) ? event.groups.join(", ") : ""],
      [W().askedTo, target],
      [W().binding, event.binding],
      [W().role, event.role],
      [W().rule, event.rule ? ruleText(event.rule) : ""],
      [W().why, event.reason],
      [W().clientIsTold, allowed ? "" : event.message],
    ]),
  );
  if (!allowed) {
    const considered = Array.isArray(event.considered) ? event.considered : [];
    if (considered.length) {
      const table = el("table", { className: "detail-table rbac-considered" });
      table.append(el("caption", { text: say(W().considered, { user: who, count: considered.length }) }));
      const head = table.createTHead().insertRow();
      for (const label of [W().binding, W().role, W().subject, W().whyNot]) {
        const th = el("th", { text: label });
        th.scope = "col";
        head.append(th);
      }
      const body = table.createTBody();
      for (const entry of considered) {
        const row = body.insertRow();
        for (const value of [entry.binding, entry.role, entry.subject, entry.why]) row.insertCell().textContent = value ?? "–";
      }
      box.append(table);
    } else if (event.authorizer !== "Node") {
      box.append(el("p", { className: "muted", text: say(W().noBinding, { user: who }) }));
    }
  }
  return box;
}

/** Admission: each plugin or webhook in order, its phase and outcome, and its patch as a diff. */
export function admissionSection(steps) {
  const denied = steps.some((s) => s.outcome === "deny");
  const heading = say(denied ? W().admissionRefused : W().admission, { count: steps.length });
  const box = section("admission", heading, denied ? "deny" : "allow");
  const list = el("ol", { className: "admission-steps" });
  for (const step of steps) {
    const item = el("li", { className: step.outcome === "deny" ? "deny" : "pass" });
    const webhook = step.to && step.to.startsWith("webhook:") ? W().webhookCall : "";
    const verdict = step.outcome === "deny" ? W().refused : W().passed;
    const patched = Array.isArray(step.patch) && step.patch.length ? say(W().patched, { count: step.patch.length }) : "";
    item.append(el("strong", { text: step.plugin }), say(W().step, { phase: step.phase, webhook, verdict, patched }));
    if (step.detail) item.append(el("p", { className: "detail-reason", text: step.detail }));
    if (Array.isArray(step.patch) && step.patch.length) item.append(patchDiff(step.patch));
    list.append(item);
  }
  box.append(list);
  return box;
}

function seconds(value) {
  return typeof value === "number" ? `${(value * 1000).toFixed(1)} ms` : "";
}

/** Flow control: FlowSchema, priority level, queued/dispatched/rejected, seats and the wait. */
export function flowcontrolSection(decisions) {
  const last = decisions[decisions.length - 1] || {};
  const rejected = last.outcome === "rejected";
  const heading = say(W().flowHeading, { mode: last.mode || W().apf, outcome: rejected ? W().rejected : last.outcome || "?" });
  const box = section("flowcontrol", heading, rejected ? "deny" : "allow");
  const queued = decisions.find((d) => d.outcome === "queued");
  const seats =
    typeof last.seats_in_use === "number" && typeof last.concurrency_limit === "number"
      ? say(W().seatsInUse, { seats: last.seats ?? 1, used: last.seats_in_use, limit: last.concurrency_limit })
      : last.seats;
  box.append(
    factList([
      ["FlowSchema", last.flowschema],
      [W().priorityLevel, last.priority_level],
      [W().flow, last.flow === "" ? W().none : last.flow],
      [W().outcome, decisions.map((d) => d.outcome).join(" → ")],
      [W().seats, seats],
      [W().queue, queued || typeof last.queue === "number" ? say(W().queued, { queue: (queued || last).queue, count: (queued || last).queue_length ?? 0 }) : ""],
      [W().waitingInLevel, last.waiting],
      [W().waited, seconds(last.waited)],
      [W().rejectedBecause, last.reason],
      ["Retry-After", typeof last.retry_after === "number" ? `${last.retry_after} s` : ""],
    ]),
  );
  return box;
}

/** Audit: the level the policy recorded the request at, or that it was not recorded. */
export function auditSection(level, auditStage) {
  const box = section("audit", level ? say(W().auditAt, { level }) : W().auditNot);
  box.append(
    factList([
      [W().level, level || "None"],
      [W().policy, auditStage?.detail],
      [W().where, level ? W().auditLog : ""],
    ]),
  );
  return box;
}

/** Every gate's section for one request (from the events the model keeps for it), in pipeline order. */
export function requestSections(request, events) {
  const sections = [];
  const flow = events.filter((e) => e.type === "flowcontrol.decision");
  const rbac = events.filter((e) => e.type === "rbac.decision");
  const admission = events.filter((e) => e.type === "admission.step");
  const completed = events.find((e) => e.type === "request.completed");
  const auditStage = events.find((e) => e.type === "request.stage" && e.stage === "audit");
  if (completed && ("audit" in completed || auditStage)) sections.push(auditSection(completed.audit, auditStage));
  if (flow.length) sections.push(flowcontrolSection(flow));
  for (const decision of rbac) sections.push(rbacSection(decision));
  if (admission.length) sections.push(admissionSection(admission));
  // A refusal's explanation first (then the gates in pipeline order): it is what the reader came for.
  const refused = sections.filter((s) => s.classList.contains("verdict-deny"));
  return [...refused, ...sections.filter((s) => !refused.includes(s))];
}

/** The section of one selected event, if it is one of these types. */
export function eventSection(event) {
  switch (event.type) {
    case "rbac.decision":
      return rbacSection(event);
    case "admission.step":
      return admissionSection([event]);
    case "flowcontrol.decision":
      return flowcontrolSection([event]);
    case "request.completed":
      return "audit" in event ? auditSection(event.audit, null) : null;
    default:
      return null;
  }
}
