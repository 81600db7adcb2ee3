// The inspector's detail sections: what the API server's gates decided about one request, in words.
//
// A request passes flow control (API Priority and Fairness: which FlowSchema and priority level, how
// long it queued), authorization (RBAC or the Node authorizer: which binding, role and rule let it in,
// or every binding that names the user and why none of its rules fits), admission (each plugin or
// webhook, and the JSON patch a mutating one applied) and audit (the level the policy recorded it at).
// The trace says all of this in `flowcontrol.decision`, `rbac.decision`, `admission.step` and
// `request.completed`'s `audit` (docs/trace.md); these functions only lay those fields out. They build
// DOM nodes from event fields and nothing else, with text (✓, ✕, +, -, ~) beside every colour.

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
        lines.push({ sign: " ", op, text: `    … ${valueLines.length - shown.length} more line(s)`, value: true });
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
  pre.setAttribute("aria-label", "JSON patch, one operation per line");
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
  const who = event.user || "the user";
  const box = section("rbac", `Authorization (${event.authorizer || "RBAC"}): ${allowed ? "✓ allowed" : "✕ refused"}`, allowed ? "allow" : "deny");
  const target = event.path
    ? `${event.verb || "get"} ${event.path}`
    : [event.verb, event.group ? `${event.resource}.${event.group}` : event.resource, event.name && `"${event.name}"`]
        .filter(Boolean)
        .join(" ") + (event.namespace ? ` in namespace ${event.namespace}` : " (cluster-wide)");
  box.append(
    factList([
      ["user", who],
      ["groups", Array.isArray(event.groups) ? event.groups.join(", ") : ""],
      ["asked to", target],
      ["binding", event.binding],
      ["role", event.role],
      ["rule", event.rule ? ruleText(event.rule) : ""],
      ["why", event.reason],
      ["client is told", allowed ? "" : event.message],
    ]),
  );
  if (!allowed) {
    const considered = Array.isArray(event.considered) ? event.considered : [];
    if (considered.length) {
      const table = el("table", { className: "detail-table rbac-considered" });
      table.append(el("caption", { text: `Bindings that name ${who} or a group of theirs (${considered.length}), and why none fits` }));
      const head = table.createTHead().insertRow();
      for (const label of ["binding", "role", "subject", "why not"]) {
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
      box.append(el("p", { className: "muted", text: `No binding names ${who} or any of their groups.` }));
    }
  }
  return box;
}

/** Admission: each plugin or webhook in order, its phase and outcome, and its patch as a diff. */
export function admissionSection(steps) {
  const denied = steps.some((s) => s.outcome === "deny");
  const box = section("admission", `Admission: ${steps.length} step(s)${denied ? ", ✕ refused" : ""}`, denied ? "deny" : "allow");
  const list = el("ol", { className: "admission-steps" });
  for (const step of steps) {
    const item = el("li", { className: step.outcome === "deny" ? "deny" : "pass" });
    const where = step.to && step.to.startsWith("webhook:") ? " (webhook call)" : "";
    const verdict = step.outcome === "deny" ? "✕ refused" : "✓ passed";
    const patched = Array.isArray(step.patch) && step.patch.length ? `, patched ${step.patch.length} field(s)` : "";
    item.append(el("strong", { text: step.plugin }), ` ${step.phase}${where}: ${verdict}${patched}`);
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
  const heading = `Flow control${last.mode ? ` (${last.mode})` : " (API Priority and Fairness)"}: ${rejected ? "✕ rejected" : last.outcome || "?"}`;
  const box = section("flowcontrol", heading, rejected ? "deny" : "allow");
  const queued = decisions.find((d) => d.outcome === "queued");
  const seats =
    typeof last.seats_in_use === "number" && typeof last.concurrency_limit === "number"
      ? `${last.seats ?? 1} (level: ${last.seats_in_use} of ${last.concurrency_limit} in use)`
      : last.seats;
  box.append(
    factList([
      ["FlowSchema", last.flowschema],
      ["priority level", last.priority_level],
      ["flow", last.flow === "" ? "(none)" : last.flow],
      ["outcome", decisions.map((d) => d.outcome).join(" → ")],
      ["seats", seats],
      ["queue", queued || typeof last.queue === "number" ? `#${(queued || last).queue} (${(queued || last).queue_length ?? 0} waiting in it)` : ""],
      ["waiting in the level", last.waiting],
      ["waited", seconds(last.waited)],
      ["rejected because", last.reason],
      ["Retry-After", typeof last.retry_after === "number" ? `${last.retry_after} s` : ""],
    ]),
  );
  return box;
}

/** Audit: the level the policy recorded the request at, or that it was not recorded. */
export function auditSection(level, auditStage) {
  const box = section("audit", `Audit: ${level ? `recorded at level ${level}` : "not recorded"}`);
  box.append(
    factList([
      ["level", level || "None"],
      ["policy", auditStage?.detail],
      ["where", level ? "the cluster's audit log, auditID = this request's Audit-ID" : ""],
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
