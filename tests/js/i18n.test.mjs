// The topology's words: English without a catalog (these tests, a page whose catalog did not load),
// the page's language with Django's JavaScriptCatalog (`globalThis.django`), looked up once.
//
// Each test file runs in a process of its own, so the catalog this file installs reaches only it.
import assert from "node:assert/strict";
import { test } from "node:test";

import { capital, gettext, interpolate, lazy, ngettext, pgettext } from "../../static/topology/i18n.js";

/** A catalog shaped like the one JavaScriptCatalog defines (django/views/i18n.py), for Chinese. */
function chineseCatalog(catalog) {
  const django = {
    catalog,
    pluralidx: () => 0, // Plural-Forms: nplurals=1; plural=0;
    gettext(msgid) {
      const value = django.catalog[msgid];
      if (typeof value === "undefined") return msgid;
      return typeof value === "string" ? value : value[0];
    },
    ngettext(singular, plural, count) {
      const value = django.catalog[singular];
      if (typeof value === "undefined") return count === 1 ? singular : plural;
      return value.constructor === Array ? value[django.pluralidx(count)] : value;
    },
    pgettext(context, msgid) {
      const value = django.gettext(`${context}\x04${msgid}`);
      return value.includes("\x04") ? msgid : value;
    },
  };
  return django;
}

test("without a catalog every message is its English source, with English plurals", () => {
  assert.equal(globalThis.django, undefined);
  assert.equal(gettext("the scheduler"), "the scheduler");
  assert.equal(ngettext("%(count)s node", "%(count)s nodes", 1), "%(count)s node");
  assert.equal(ngettext("%(count)s node", "%(count)s nodes", 0), "%(count)s nodes");
  assert.equal(ngettext("%(count)s node", "%(count)s nodes", 2), "%(count)s nodes");
  assert.equal(pgettext("pipeline stage", "storage"), "storage");
});

test("interpolate fills named values in one pass, in the translation's order", () => {
  assert.equal(interpolate("%(b)s then %(a)s", { a: 1, b: "two" }, true), "two then 1");
  // A value that looks like a placeholder is not filled again.
  assert.equal(interpolate("%(a)s / %(b)s", { a: "%(b)s", b: "x" }, true), "%(b)s / x");
  assert.equal(interpolate("%s and %s", ["a", "b"]), "a and b");
});

test("capital starts English sentences; lazy makes its value once", () => {
  assert.equal(capital("the API server"), "The API server");
  assert.equal(capital(""), "");
  let made = 0;
  const words = lazy(() => ({ n: ++made }));
  assert.equal(words().n, 1);
  assert.equal(words().n, 1);
  assert.equal(made, 1);
});

test("with Django's catalog the narration speaks Chinese, values in the translation's order", async () => {
  globalThis.django = chineseCatalog({
    "the scheduler": "调度器",
    "user %(name)s": "用户 %(name)s",
    "pipeline stage\x04authorization": "鉴权",
    ": %(detail)s": "：%(detail)s",
    "%(Request)s passed %(stage)s%(detail)s.": "%(request)s 通过了%(stage)s%(detail)s。",
    "The scheduler placed %(pod)s on %(node)s (%(feasible)s of %(total)s nodes fit).":
      "调度器将 %(pod)s 调度到 %(node)s（%(total)s 个节点中有 %(feasible)s 个可行）。",
    "%(count)s watch event": ["%(count)s 个监视事件"],
    "To keep up, %(count)s event was drawn at once%(parts)s.": ["为了跟上进度，%(count)s 个事件被一次性绘制%(parts)s。"],
    "Pending (bound, starting)": "Pending（已绑定，正在启动）",
  });
  try {
    // Imported after the catalog; they look their messages up at first use in any case.
    const { describe, nodeName, summariseBurst } = await import("../../static/topology/narration.js");
    const { TopologyModel } = await import("../../static/topology/model.js");
    const { POD_STATES } = await import("../../static/topology/pods.js");
    assert.equal(nodeName("scheduler"), "调度器");
    assert.equal(nodeName("user:alice"), "用户 alice");
    const model = new TopologyModel();
    model.apply({ type: "request.received", seq: 1, id: "r1", from: "user:alice", method: "POST", path: "/api/v1/namespaces/default/pods" });
    // The translation uses %(request)s, not English's capitalised %(Request)s.
    const stage = { type: "request.stage", seq: 2, id: "r1", stage: "authorization", outcome: "pass", detail: "RBAC: allowed" };
    assert.equal(describe(stage, model), "create pods 通过了鉴权：RBAC: allowed。");
    const decision = { type: "scheduler.decision", seq: 3, pod: "default/web", chosen: "node-1", nodes: { "node-1": {}, "node-2": {} }, feasible: ["node-1"] };
    assert.equal(describe(decision, model), "调度器将 default/web 调度到 node-1（2 个节点中有 1 个可行）。");
    // Untranslated messages stay English (the catalog here is partial): nothing reads `undefined`.
    assert.equal(describe({ type: "store.compact", seq: 4, revision: 9 }, model).startsWith("etcd compacted"), true);
    assert.equal(summariseBurst([{ type: "watch.event" }, { type: "watch.event" }], model), "为了跟上进度，2 个事件被一次性绘制：2 个监视事件。");
    assert.equal(POD_STATES.scheduled.words, "Pending（已绑定，正在启动）");
  } finally {
    delete globalThis.django;
  }
});
