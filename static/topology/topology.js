// The live topology page: wires the trace stream, the timeline, the model, the view, the narration,
// the inspector and the controls together. Everything it shows comes from trace events the cluster
// emitted (docs/trace.md); nothing is a canned animation.
//
//   stream (websocket, gapless seq) -> timeline (buffer, pause, step, speed) -> model.apply(event)
//        -> changes -> view (SVG) + narration (aria-live log); selection -> inspector + causal chain
//
// On load the page asks for the cluster's state (controlplane/diagram.py: every Node and Pod the store
// holds, who leads, the components, the open watches, as of one seq) and draws it, then follows the
// trace from that seq on; it asks again after a gap it cannot fill. A deep link (`#paused=<seq>`)
// asks for everything the server still holds instead and stops at that seq.
//
// Live means live: the timeline (timeline.js) never lets the diagram fall more than about a second
// behind at 1×. The cluster's own periodic traffic (background.js) is folded into a quiet line on the
// parts that do it, and a burst too big to animate in time is drawn at once and summarised; the
// requests people make always animate.
//
// Rewound (rewind.js: the scrubber, a revision, the etcd panel, or `#revision=<R>`), the view draws
// another model, the cluster as it was at store revision R, and the controls drive its replay; the
// live model waits aside while live events queue, until "Back to live".

import { Controls, readHash, selectionKey, writeHash } from "./controls.js";
import { gettext, interpolate, lazy, ngettext } from "./i18n.js";
import { eventSection, requestSections } from "./details.js";
import { EtcdPanel } from "./etcd.js";
import { Background } from "./background.js";
import { STAGES, TopologyModel, requestTitle, setBounded, setStages } from "./model.js";
import { Narration, backgroundSentence, describe, nodeName, summariseBurst } from "./narration.js";
import { podListSection } from "./pods.js";
import { Rewind } from "./rewind.js";
import { TraceStream, sameOriginSocketURL } from "./stream.js";
import { BASE_DELAY, Timeline } from "./timeline.js";
import { TopologyView, storedNodeWords } from "./view.js";

/** The page's words, looked up once (i18n.js). */
const P = lazy(() => ({
  timing: {
    classroom: gettext("classroom: Kubernetes' timers, five times faster (same ratios)"),
    upstream: gettext("upstream: Kubernetes' default timers"),
  },
  quiet: {
    "node-lease": "Lease",
    "leader-lease": "Lease",
    "master-lease": gettext("master lease"),
    "identity-lease": "Lease",
    check: gettext("check"),
    heartbeat: gettext("status"),
    informer: gettext("re-watch"),
    resync: gettext("resync"),
    "proxy-resync": gettext("re-sync"),
  },
  inspector: gettext("Inspector"),
  selectHint: gettext("Select a packet, a node, a watch line or a line of the narration to see its events and causal chain."),
  request: gettext("Request: %(request)s"),
  requestGone: gettext("Request (no longer held)"),
  from: gettext("from"),
  path: gettext("path"),
  answer: gettext("answer"),
  answerIn: gettext("%(code)s in %(ms)s ms"),
  refusedAt: gettext("refused at"),
  clientWasTold: gettext("client was told"),
  wroteRevision: gettext("wrote revision"),
  node: gettext("Node: %(node)s"),
  state: gettext("state"),
  leaderLease: gettext("leader-election Lease"),
  heldBy: gettext("held by %(holder)s"),
  notHeld: gettext("not held"),
  inBackground: gettext("in the background"),
  nodeObject: gettext("Node object as etcd holds it"),
  nodeObjectAt: gettext("Node object at revision %(revision)s"),
  pods: gettext("pods"),
  controllers: gettext("controllers"),
  revision: gettext("revision"),
  compactedBelow: gettext("compacted below"),
  watches: gettext("Watches: %(edge)s"),
  delivered: gettext("%(resource)s: %(count)s event(s) delivered"),
  event: gettext("Event #%(seq)s: %(type)s"),
  eventGone: gettext("Event #%(seq)s (no longer held)"),
  says: gettext("says"),
  rewindTo: gettext("Rewind to revision %(revision)s"),
  rewindTitle: gettext("The diagram and the etcd panel show the cluster as it was at this revision"),
  rawEvent: gettext("Raw event"),
  rawEvents: gettext("Raw events (%(count)s)"),
  scheduling: gettext("Scheduling %(pod)s: each node's filters and score"),
  skipped: gettext(" (skipped, nothing to check for this pod: %(plugins)s)"),
  columns: [gettext("node"), gettext("fits?"), gettext("filters that failed"), gettext("score")],
  chosen: gettext(" ✓ chosen"),
  yes: gettext("yes"),
  no: gettext("no"),
}));

const say = (template, values) => interpolate(template, values, true);

/** The revision a selection names in the store (a write, a watch event, a request that wrote), or null. */
function revisionOf(model, selection) {
  if (selection?.request) return model.requests.get(selection.request)?.revisions.at(-1) ?? null;
  if (typeof selection?.seq !== "number") return null;
  const event = model.events.get(selection.seq);
  if (!event || typeof event.revision !== "number") return null;
  if (event.type === "watch.event" || event.type === "reconcile" || event.type === "scheduler.decision") return event.revision;
  if (event.type === "store.txn" || event.type === "request.completed") return event.revision;
  return null;
}

/** The short line a part shows for its most frequent background activity: `Lease 2 s`. */
function quietLabel(activity) {
  if (!activity) return "";
  const labels = P().quiet;
  const what = (Object.hasOwn(labels, activity.kind) && labels[activity.kind]) || activity.kind;
  // Seconds, one decimal: the line is short (the inspector has the sentence).
  return activity.every ? `${what} ${Number(activity.every.toFixed(1))} s` : what;
}

function renderInspector(root, model, selection, { showRevision } = {}) {
  const T = P();
  const title = root.querySelector("[data-inspector=title]");
  const body = root.querySelector("[data-inspector=body]");
  body.replaceChildren();
  if (!selection) {
    title.textContent = T.inspector;
    const hint = document.createElement("p");
    hint.className = "muted";
    hint.textContent = T.selectHint;
    body.append(hint);
    return;
  }
  let events = [];
  const facts = [];
  if (selection.request) {
    const request = model.requests.get(selection.request);
    title.textContent = request ? say(T.request, { request: requestTitle(request) }) : T.requestGone;
    if (request) {
      facts.push([T.from, nodeName(request.from)], ["Audit-ID", request.id], [T.path, `${request.method} ${request.path}`]);
      if (request.code !== null) facts.push([T.answer, say(T.answerIn, { code: request.code, ms: ((request.duration ?? 0) * 1000).toFixed(1) })]);
      if (request.stoppedAt) facts.push([T.refusedAt, `${request.stoppedAt}: ${request.reason}`]);
      if (request.rbac && !request.rbac.allowed && request.rbac.message) facts.push([T.clientWasTold, request.rbac.message]);
      if (request.revisions.length) facts.push([T.wroteRevision, request.revisions.join(", ")]);
    }
    events = model.eventsOfRequest(selection.request);
    if (request) body.append(...requestSections(request, events));
  } else if (selection.node) {
    const node = model.nodes.get(selection.node);
    title.textContent = say(T.node, { node: nodeName(selection.node) });
    if (node) {
      if (node.state) facts.push([T.state, node.state]);
      if (node.leader !== undefined) facts.push([T.leaderLease, node.leader ? say(T.heldBy, { holder: node.leader }) : T.notHeld]);
      if (node.quiet) facts.push([T.inBackground, node.quiet]);
      if (node.stored) {
        const term = model.storeRevision === null ? T.nodeObject : say(T.nodeObjectAt, { revision: model.storeRevision });
        facts.push([term, storedNodeWords(node.stored)]);
      }
      if (node.pods.size && !selection.pods) facts.push([T.pods, [...node.pods.values()].map((p) => `${p.key} (${p.phase}${p.deleting ? ", Terminating" : ""})`).join(", ")]);
      if (node.pods.size && selection.pods) body.append(podListSection(nodeName(selection.node), [...node.pods.values()]));
      if (node.controllers.size) facts.push([T.controllers, [...node.controllers].join(", ")]);
      if (selection.node === "etcd") facts.push([T.revision, String(model.revision)], [T.compactedBelow, String(model.compacted || "–")]);
    }
    events = [...model.events.values()].filter((e) => e.from === selection.node || e.to === selection.node).slice(-20);
  } else if (selection.watch) {
    title.textContent = say(T.watches, { edge: selection.watch.replace("->", " → ") });
    const [from, to] = selection.watch.split("->");
    for (const watch of model.watches.values()) {
      if (watch.from === from && watch.to === to) facts.push([watch.watch, say(T.delivered, { resource: watch.resource || "?", count: watch.delivered })]);
    }
    events = [...model.events.values()]
      .filter((e) => e.type.startsWith("watch.") && e.from === from && e.to === to)
      .slice(-20);
  } else if (typeof selection.seq === "number") {
    const event = model.events.get(selection.seq);
    title.textContent = event ? say(T.event, { seq: event.seq, type: event.type }) : say(T.eventGone, { seq: selection.seq });
    if (event) {
      facts.push([T.says, describe(event, model)]);
      events = [event];
      if (event.type === "scheduler.decision") body.append(schedulerTable(event));
      const detail = eventSection(event);
      if (detail) body.append(detail);
      else if (event.type.startsWith("request.") && model.requests.has(event.id)) {
        // A stage or an answer: show the gates of its request (why it was refused, at which step).
        body.append(...requestSections(model.requests.get(event.id), model.eventsOfRequest(event.id)));
      }
    }
  }
  const revision = showRevision ? revisionOf(model, selection) : null;
  if (revision) {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.inspector = "show-revision";
    button.textContent = say(T.rewindTo, { revision });
    button.title = T.rewindTitle;
    button.addEventListener("click", () => showRevision(revision));
    body.prepend(button);
  }
  if (facts.length) {
    const list = document.createElement("dl");
    for (const [term, value] of facts) {
      const dt = document.createElement("dt");
      dt.textContent = term;
      const dd = document.createElement("dd");
      dd.textContent = value;
      list.append(dt, dd);
    }
    body.prepend(list);
  }
  const heading = document.createElement("h3");
  heading.textContent = events.length === 1 ? T.rawEvent : say(T.rawEvents, { count: events.length });
  const pre = document.createElement("pre");
  pre.tabIndex = 0;
  pre.textContent = events.map((event) => JSON.stringify(event, null, 1)).join("\n");
  body.append(heading, pre);
}

function schedulerTable(event) {
  const table = document.createElement("table");
  table.className = "scheduler-table";
  const caption = document.createElement("caption");
  const T = P();
  caption.textContent = say(T.scheduling, { pod: event.pod });
  const skipped = [...((event.skipped || {}).filters || []), ...((event.skipped || {}).scores || [])];
  if (skipped.length) {
    caption.textContent += say(T.skipped, { plugins: [...new Set(skipped)].join(", ") });
  }
  table.append(caption);
  const head = table.createTHead().insertRow();
  for (const label of T.columns) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = label;
    head.append(th);
  }
  const body = table.createTBody();
  for (const [name, verdict] of Object.entries(event.nodes || {})) {
    const row = body.insertRow();
    const failed = Object.entries(verdict.filters || {})
      .filter(([, result]) => result.code && result.code !== "Success")
      .map(([plugin, result]) => `${plugin}: ${(result.reasons || []).join("; ") || result.code}`);
    const chosen = name === event.chosen ? T.chosen : "";
    for (const value of [`${name}${chosen}`, verdict.feasible ? T.yes : T.no, failed.join(", ") || "–", String(verdict.total ?? "–")]) {
      row.insertCell().textContent = value;
    }
  }
  return table;
}

/**
 * Mount the topology inside `root` and return its parts (also `window.kubelabTopology`).
 * `options.keys: false` leaves the keyboard to the page: presenter mode (present.js) drives the
 * returned `togglePause`, `step`, `nudgeSpeed`, `rewindBy` and `live` from keys of its own.
 */
export function start(root, { keys = true } = {}) {
  const config = JSON.parse(root.querySelector("#topology-config").textContent);
  const model = new TopologyModel(); // the live model (kept aside, untouched, while rewound)
  const background = new Background(); // which events are the cluster's own periodic traffic
  const own = new Map(); // Audit-IDs of requests people made (kubectl, a form): they always animate
  let lastState = null; // the state the live model started from (the trace socket's `state`)
  /** An event's kind for the timeline, decided once, in seq order, as it arrives. */
  const kindOf = (event) => {
    const quiet = background.classify(event);
    if (event.type === "request.received" && String(event.from).startsWith("user:")) setBounded(own, event.id, true, 2000);
    if (event.id && own.has(event.id)) return "own";
    return quiet ? "background" : null;
  };
  const hash = readHash();
  let selection = hash.select;
  const status = root.querySelector("[data-topology=status]");
  const timing = root.querySelector("[data-topology=timing]");
  const inspector = root.querySelector("[data-topology=inspector]");
  let rewind = null;
  let controls = null;
  /** The model the view draws: the rewound one, or the live one. */
  const shown = () => rewind?.model ?? model;

  const etcdRoot = root.querySelector("[data-etcd=root]");
  const etcd =
    etcdRoot && config.etcd
      ? new EtcdPanel(etcdRoot, {
          url: config.etcd,
          // The panel's own scrubber, revision field and "Back to live" rewind the whole page.
          onShowRevision: (revision) => (revision === null ? rewind.back() : rewind.show(revision)),
          onMarks: (marks) => controls?.setMarks(marks),
        })
      : null;
  const inspectorActions = config.etcd
    ? {
        showRevision(revision) {
          if (etcd) etcd.showRevision(revision);
          else rewind.show(revision);
          root.querySelector("[data-rewind=banner]")?.scrollIntoView({ block: "nearest", behavior: "auto" });
        },
      }
    : {};

  const updateHash = () =>
    writeHash({
      select: selection,
      paused: timeline.paused ? model.lastSeq : null,
      revision: rewind?.active ? rewind.revision : null,
    });

  const select = (next) => {
    selection = next && selectionKey(next) === selectionKey(selection) ? selection : next;
    const chain = selection ? shown().chain(selection) : null;
    view.highlight(chain);
    narration.highlight(chain ? chain.seqs : new Set());
    renderInspector(inspector, shown(), selection, inspectorActions);
    updateHash();
  };

  const view = new TopologyView(root.querySelector("svg.topology"), model, { onSelect: (s) => select(s) });
  const narration = new Narration(root.querySelector("[data-topology=narration]"), { onSelect: (s) => select(s) });


  // One event played into a model the view draws (the live one, or the rewound one replaying history).
  const show = (event, shownModel, changes) => {
    view.handle(changes);
    narration.add(event, shownModel);
    if (selection) {
      const chain = shownModel.chain(selection);
      view.highlight(chain);
      if (chain.seqs.has(event.seq)) narration.highlight(chain.seqs);
    }
  };
  const play = (event) => {
    const changes = model.apply(event);
    etcd?.noteEvent(event);
    if (!rewind.active) show(event, model, changes);
  };
  // What the cluster does in the background, said on the parts that do it (at most once a second).
  let quietAt = 0;
  let quietTimer = null;
  let toldAboutBackground = false;
  const sayQuiet = () => {
    quietTimer = null;
    quietAt = performance.now();
    for (const id of background.nodes()) {
      const activities = background.activities(id);
      const node = model.nodes.get(id);
      if (!node) continue;
      node.quiet = backgroundSentence(id, activities);
      node.quietShort = quietLabel(activities[0]);
      if (!rewind?.active) view.handle([{ kind: "quiet", id }]);
    }
    if (!toldAboutBackground && background.nodes().length && !timeline.showBackground) {
      toldAboutBackground = true;
      // Without the controls' keys (presenter mode) there is no switch to name.
      narration.note(
        keys
          ? gettext(
              "The cluster's own periodic traffic (Lease renewals, node heartbeats, re-watches, resyncs) is folded into a quiet line on the parts that do it; its effects are drawn, not animated. Tick “Show background traffic” (b) to see each one.",
            )
          : gettext(
              "The cluster's own periodic traffic (Lease renewals, node heartbeats, re-watches, resyncs) is folded into a quiet line on the parts that do it; its effects are drawn, not animated.",
            ),
      );
    }
  };
  const quietChanged = () => {
    if (quietTimer !== null) return;
    quietTimer = setTimeout(sayQuiet, Math.max(0, 1000 - (performance.now() - quietAt)));
  };
  const skip = (events, { restoring, kinds = [] }) => {
    if (!events.length) return;
    const changes = [];
    for (const event of events) for (const change of model.apply(event)) changes.push(change);
    if (!rewind.active) view.handleQuietly(changes);
    etcd?.noteSkipped(events);
    const first = events[0].seq;
    const last = events[events.length - 1].seq;
    if (restoring) {
      narration.note(say(gettext("Caught up with %(count)s earlier events (#%(first)s–#%(last)s) without animating them."), { count: events.length, first, last }));
      return;
    }
    const news = events.filter((_, i) => kinds[i] !== "background" || timeline.showBackground);
    if (news.length) narration.note(summariseBurst(news, model), "summary");
    if (news.length < events.length) quietChanged();
  };
  const changed = () => {
    if (rewind?.active) controls?.update(rewind.model.lastSeq, { liveWaiting: timeline.queue.length });
    else controls?.update(model.lastSeq);
    controls?.setMarks({ current: model.revision, compacted: model.compacted });
    view.setDuration((rewind?.active ? rewind.timeline : timeline).delay());
  };
  /** A watch event from etcd whose write was traced just after it, in the same batch. */
  const recheck = (event) =>
    event.type === "watch.event" && background.revisions.has(event.revision) ? "background" : null;
  const timeline = new Timeline({ play, skip, changed, kind: kindOf, recheck });
  const showBackground = (show) => {
    timeline.setShowBackground(show);
    narration.note(show ? gettext("Showing background traffic event by event.") : gettext("Background traffic is folded again."));
  };
  rewind = new Rewind({
    url: config.etcd,
    live: { model, timeline, base: () => lastState },
    hooks: {
      draw(rewound) {
        view.setModel(rewound ?? model);
        root.dataset.mode = rewound ? "past" : "live";
        if (!rewound) view.setPast(null);
        if (!rewound && etcd?.pinned) etcd.showRevision(null, { notify: false });
        select(selection);
      },
      shown(revision) {
        view.setPast(revision);
        if (etcd && etcd.pinned !== revision) etcd.showRevision(revision, { notify: false });
        controls?.setMarks({ current: rewind.current });
        updateHash();
      },
      play: show,
      apply: (changes) => view.handle(changes, { quiet: true }),
      note: (text) => narration.note(text),
      say: (state, text) => controls?.say(state, text),
      changed,
    },
  });
  controls = new Controls(root.querySelector("[data-topology=controls]"), {
    // The buttons drive the rewound history while rewound, else the live timeline.
    get timeline() {
      return rewind.active ? rewind.timeline : timeline;
    },
    setSpeed(speed) {
      timeline.setSpeed(speed);
      rewind.timeline?.setSpeed(speed);
    },
    rewind: {
      show: (revision) => rewind.show(revision),
      back: () => rewind.back(),
      get revision() {
        return rewind.active ? rewind.revision : null;
      },
    },
    setAnimate: (on) => view.setAnimate(on),
    setShowBackground: showBackground,
    clearSelection: () => select(null),
  }, { keys });
  root.querySelector("[data-control=pause]").addEventListener("click", updateHash);
  root.querySelector("[data-control=step]").addEventListener("click", updateHash);
  view.setDuration(BASE_DELAY);
  // A deep link to a revision (`#revision=<R>`): everything the server holds is applied at once,
  // then the page rewinds to R. Back to live then plays on.
  let rewindTo = null;
  let rewindAfter = 0;
  const rewindWhenCaughtUp = () => {
    if (rewindTo === null || model.lastSeq < rewindAfter) return;
    const revision = rewindTo;
    rewindTo = null;
    rewind.show(revision, { liveWasPaused: false });
  };

  const stream = new TraceStream(sameOriginSocketURL(config.socket), {
    onHello(hello) {
      if (setStages(hello.stages)) view.drawStages(STAGES);
      const scoped = hello.scope && typeof hello.scope.namespace === "string" ? hello.scope.namespace : null;
      if (scoped !== null && root.dataset.scope !== scoped) {
        // A classroom's shared cluster: the server leaves the classmates' namespaces out of the trace.
        root.dataset.scope = scoped;
        narration.note(say(gettext("You see your namespace %(namespace)s and the cluster around it: the nodes, the components, kube-system. Your classmates' namespaces and requests are left out, as the API leaves them out for you."), { namespace: scoped }));
      }
      const profile = hello.timing || config.timing;
      const notes = P().timing;
      timing.textContent = (Object.hasOwn(notes, profile) && notes[profile]) || profile;
      timing.dataset.profile = profile;
      if (hash.revision !== null) {
        // The live page starts from the state as always; once it has it, it rewinds to the revision.
        rewindTo = hash.revision;
        rewindAfter = Infinity;
        hash.revision = null;
        return "state";
      }
      if (hash.paused !== null) {
        timeline.pauseAt(hash.paused);
        return 0; // everything the server holds, up to the linked moment
      }
      return "state";
    },
    onState(state) {
      timeline.clear();
      lastState = state;
      model.applyState(state);
      if (rewindTo !== null) rewindAfter = state.seq;
      if (!rewind.active) view.setModel(model);
      const objects = state.objects || {};
      const nodes = (objects.nodes || []).length;
      const pods = (objects.pods || []).length;
      const watches = (state.watches || []).length;
      narration.note(
        say(gettext("Drew the cluster as etcd holds it at revision %(revision)s: %(nodes)s, %(pods)s, %(watches)s; following its trace from event #%(seq)s on."), {
          revision: state.revision,
          nodes: say(ngettext("%(count)s node", "%(count)s nodes", nodes), { count: nodes }),
          pods: say(ngettext("%(count)s pod", "%(count)s pods", pods), { count: pods }),
          watches: say(ngettext("%(count)s open watch", "%(count)s open watches", watches), { count: watches }),
          seq: state.seq + 1,
        }),
      );
      changed();
      rewindWhenCaughtUp();
      if (selection) select(selection);
    },
    onEvents(events) {
      timeline.push(events);
      rewindWhenCaughtUp();
      if (hash.paused !== null && model.lastSeq >= hash.paused && selection) {
        select(selection);
        hash.paused = null;
      }
    },
    onSummary(summary) {
      narration.note(summary.text || say(gettext("%(count)s events left out by the server"), { count: summary.last - summary.first + 1 }), "summary");
      // The model missed those events: start again from the cluster's state now (a deep link's history
      // replay has nothing to start again from, so it keeps what it has).
      if (hash.paused === null && rewindTo === null) stream.requestState();
    },
    onStatus(state, text) {
      status.textContent = text;
      status.dataset.state = state;
    },
    onNote(text) {
      narration.note(text);
    },
  });
  renderInspector(inspector, model, selection, inspectorActions);
  controls.update(0);
  stream.connect();
  etcd?.load();
  // For the browser tests and the curious: the page's parts, on the console.
  window.kubelabTopology = {
    model,
    view,
    timeline,
    stream,
    narration,
    select,
    etcd,
    rewind,
    shown,
    background,
    // A chapter step may ask to see the background traffic (or fold it again), point at parts of the
    // diagram, show only some event types in the narration, slow or pause the animation.
    showBackground: (show) => controls.setShowBackground(show),
    spotlight: (parts) => view.spotlight(parts),
    filterNarration: (types) => narration.setFilter(types),
    setSpeed: (speed) => controls.setSpeed(speed),
    setPaused: (paused) => controls.setPaused(paused),
    // What the controls' buttons and keys do, for a page with keys of its own (presenter mode):
    // pause or resume, play one event, speed up or down (+0.5 or -0.5 on the log2 slider), rewind one
    // store revision earlier (-1) or later (+1), back to live (`{play: true}`: and play what waited,
    // even if live was paused before rewinding); and what the controls drive now.
    togglePause: () => controls.togglePause(),
    step: () => controls.step(),
    nudgeSpeed: (delta) => controls.nudgeSpeed(delta),
    rewindBy: (delta) => controls.rewindBy(delta),
    live: (options) => rewind.back(options),
    state: () => {
      const driven = rewind.active ? rewind.timeline : timeline;
      return { paused: driven.paused, speed: timeline.speed, revision: rewind.active ? rewind.revision : null };
    },
  };
  return window.kubelabTopology;
}

// Importing this module starts nothing: a page mounts its topology onto its root element from a module
// script, `import { start } from ".../topology/topology.js"; start(root)`
// (templates/courses/lab/cluster.html), so a chapter page can mount one onto an element of its own.
