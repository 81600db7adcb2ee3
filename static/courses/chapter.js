// The chapter page: steps beside the live cluster (templates/courses/chapters/chapter.html).
//
// The page's socket (courses/chapters/consumer.py) starts the student's sandbox and says how far it
// is; once it runs, the page fetches the sandbox's topology and mounts it (static/topology/). The
// socket then streams the open step's check: "passed", or which condition failed and what it saw.
// Opening a step points the diagram at the parts it is about, filters the narration to the event
// types it talks about, and slows or pauses the animation if the step asks. A visitor without an
// account reads the text beside the demo cluster, with no socket.

import { start as startTopology } from "../topology/topology.js";
import { stepFocus, verdictView, nextDelay } from "./chapterstate.js";

const root = document.querySelector("[data-chapter=root]");
const config = JSON.parse(document.getElementById("chapter-config")?.textContent || "{}");
const steps = new Map((config.steps || []).map((step) => [step.id, step]));
let current = config.current;
let socket = null;
let attempts = 0;
let topology = null;
const verdicts = new Map(); // step id -> the last verdict
let shownMoment = null; // the seq of the step's moment the diagram was last pointed at

// -- steps ------------------------------------------------------------------------------------------

function articles() {
  return [...root.querySelectorAll("article[data-step]")];
}

// Each step that brings a starting manifest has its own draft in the form: the step's manifest, or
// what the student made of it when they last left the step. Another step's edits never carry over
// (its text says "the form holds ..."). Drafts last the browser tab's session, across a reload or a
// change of language. A step without a manifest of its own leaves the form as it is.
let editorStep = steps.get(current)?.editor ? current : null; // whose manifest the form holds

function draftKey(id) {
  return `kubelab:draft:${location.pathname}:${id}`;
}

function draftOf(id) {
  try {
    return sessionStorage.getItem(draftKey(id));
  } catch {
    return null; // storage refused (private mode): the step's own manifest
  }
}

function saveDraft() {
  const editor = window.kubelabEditor;
  const manifest = editorStep && steps.get(editorStep)?.editor;
  if (!editor || !manifest) return;
  const text = editor.getValue();
  try {
    if (text === manifest) sessionStorage.removeItem(draftKey(editorStep));
    else sessionStorage.setItem(draftKey(editorStep), text);
  } catch {
    // storage refused: the draft lives as long as the page
  }
}

function showStep(id, { push = true } = {}) {
  if (!steps.has(id)) return;
  current = id;
  const manifest = steps.get(id).editor;
  const editor = window.kubelabEditor;
  if (manifest && editor && editorStep !== id) {
    saveDraft();
    editor.setValue(draftOf(id) ?? manifest);
    editorStep = id;
  }
  const list = articles();
  const index = list.findIndex((a) => a.dataset.step === id);
  for (const article of list) article.hidden = article.dataset.step !== id;
  for (const item of root.querySelectorAll("[data-step-item]")) {
    const on = item.dataset.stepItem === id;
    item.classList.toggle("current", on);
    const link = item.querySelector("a");
    if (on) link.setAttribute("aria-current", "step");
    else link.removeAttribute("aria-current");
  }
  const previous = root.querySelector("[data-nav=previous]");
  const next = root.querySelector("[data-nav=next]");
  const prevId = list[index - 1]?.dataset.step;
  const nextId = list[index + 1]?.dataset.step;
  previous.hidden = !prevId;
  next.hidden = !nextId;
  if (prevId) previous.href = `?step=${prevId}`;
  if (nextId) next.href = `?step=${nextId}`;
  if (push) history.replaceState(null, "", `?step=${id}${location.hash}`);
  applyFocus();
  send({ action: "open", step: id });
  const verdict = verdicts.get(id);
  if (verdict) renderVerdict(verdict);
}

function applyFocus() {
  if (!topology) return;
  const focus = stepFocus(steps.get(current), config.student);
  topology.spotlight(focus.spotlight);
  topology.filterNarration(focus.narration);
  if (focus.paused) topology.setPaused(true);
  else if (focus.speed) topology.setSpeed(focus.speed);
}

function article(id) {
  return root.querySelector(`article[data-step="${CSS.escape(id)}"]`);
}

// -- the check --------------------------------------------------------------------------------------

function renderVerdict(verdict) {
  verdicts.set(verdict.step, verdict);
  const box = article(verdict.step)?.querySelector("[data-check]");
  if (!box) return;
  const view = verdictView(verdict, config.messages || {});
  box.dataset.status = view.status;
  box.querySelector("[data-check-status]").textContent = view.text;
  const list = box.querySelector("[data-check-failures]");
  list.replaceChildren(
    ...view.failures.map((text) => {
      const item = document.createElement("li");
      item.textContent = text;
      return item;
    }),
  );
  const failing = box.querySelector("[data-failing]");
  if (failing) failing.value = (verdict.failing || []).join(",");
  if (view.status === "passed") {
    const item = root.querySelector(`[data-step-item="${CSS.escape(verdict.step)}"]`);
    item?.classList.add("passed");
    const mark = item?.querySelector(".step-mark");
    if (mark) mark.textContent = "✓";
  }
  // The step's moment (timeline.at): once the check matched it, the diagram shows that event's chain.
  if (verdict.at && verdict.step === current && verdict.at !== shownMoment && topology) {
    shownMoment = verdict.at;
    topology.select({ seq: verdict.at });
  }
  const wait = article(verdict.step)?.querySelector("[data-wait]");
  if (wait && verdict.held !== undefined) {
    wait.hidden = !verdict.held;
    const text = article(verdict.step)?.querySelector("[data-step-text]");
    if (text) text.classList.toggle("held", Boolean(verdict.held));
  }
}

// -- the sandbox and its topology -------------------------------------------------------------------

function sandboxState(message) {
  const box = root.querySelector("[data-sandbox]");
  if (!box) return;
  const text = box.querySelector("[data-sandbox-text]");
  const bar = box.querySelector("[data-sandbox-progress]");
  text.textContent = message.text || "";
  box.dataset.state = message.state;
  if (message.state === "ready") {
    bar.hidden = true;
    box.hidden = true;
    mountTopology();
  } else if (message.state === "failed") {
    bar.hidden = true;
  } else if (message.expected) {
    // An honest bar: the time spent over the time it is expected to take, never past 95 %.
    const began = performance.now();
    const tick = () => {
      if (box.dataset.state !== "starting") return;
      const share = Math.min(0.95, (performance.now() - began) / 1000 / message.expected);
      bar.value = Math.round(share * 100);
      requestAnimationFrame(tick);
    };
    tick();
  }
}

async function mountTopology() {
  if (topology || !config.topology) return;
  const slot = root.querySelector("[data-topology-slot]");
  const response = await fetch(config.topology, { headers: { "HX-Request": "true" }, credentials: "same-origin" });
  if (!response.ok) return;
  slot.innerHTML = await response.text(); // our own server's fragment
  topology = startTopology(slot.querySelector("[data-topology=root]"));
  applyFocus();
}

function mountDemo() {
  const demo = root.querySelector(".chapter-lab [data-topology=root]");
  if (demo) {
    topology = startTopology(demo);
    applyFocus();
  }
}

// -- the socket -------------------------------------------------------------------------------------

function send(message) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

function connect() {
  if (!config.socket) return;
  const url = new URL(config.socket, location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  socket = new WebSocket(url);
  socket.addEventListener("open", () => {
    attempts = 0;
    send({ action: "open", step: current });
  });
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(event.data);
    if (message.type === "sandbox") sandboxState(message);
    else if (message.type === "verdict") renderVerdict(message);
    else if (message.type === "progress") say(message.text, message.state);
    else if (message.type === "jumped") location.assign(`?step=${message.step}`);
    else if (message.type === "error") say(message.text, "error");
  });
  socket.addEventListener("close", (event) => {
    socket = null;
    if (event.code === 4403 || event.code === 4404) {
      say(event.reason || config.messages?.refused || "", "error");
      return;
    }
    setTimeout(connect, nextDelay(attempts++));
  });
}

function say(text, state = "info") {
  const box = article(current)?.querySelector("[data-check-status]");
  if (box && text) {
    box.textContent = text;
    box.closest("[data-check]").dataset.status = state === "error" ? "unknown" : box.closest("[data-check]").dataset.status;
  }
}

// -- actions, buttons and keys ----------------------------------------------------------------------

function runInConsole(command) {
  selectTab("console");
  window.kubelabConsole?.run(command);
}

function addRunButtons() {
  for (const block of root.querySelectorAll(".step [data-kubectl]")) {
    if (block.querySelector("button.run")) continue;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "run";
    button.textContent = config.messages?.run || "Run";
    button.setAttribute("aria-label", `${button.textContent}: ${block.dataset.kubectl}`);
    button.addEventListener("click", () => runInConsole(block.dataset.kubectl));
    block.append(button);
  }
}

function selectTab(name) {
  for (const tab of root.querySelectorAll("[data-tab]")) {
    const on = tab.dataset.tab === name;
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    document.getElementById(tab.getAttribute("aria-controls")).hidden = !on;
  }
}

function firstAction() {
  const step = steps.get(current);
  const action = (step?.actions || []).find((a) => a.kubectl);
  if (action) return () => runInConsole(action.kubectl);
  const block = article(current)?.querySelector("[data-kubectl]");
  return block ? () => runInConsole(block.dataset.kubectl) : null;
}

root.addEventListener("click", (event) => {
  const link = event.target.closest("[data-step-link]");
  if (link) {
    event.preventDefault();
    showStep(link.dataset.stepLink);
    return;
  }
  const nav = event.target.closest("[data-nav]");
  if (nav && nav.href) {
    event.preventDefault();
    showStep(new URL(nav.href).searchParams.get("step"));
    return;
  }
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  const action = button.dataset.action;
  if (action === "kubectl") runInConsole(button.dataset.command);
  else if (action === "request") send({ action: "request", index: Number(button.dataset.index) });
  // A fault of the catalogue on the student's own sandbox: the server looks the action up by its index.
  else if (action === "fault") send({ action: "fault", index: Number(button.dataset.index) });
  else if (action === "check") send({ action: "check" });
  else if (action === "solve") send({ action: "solve" });
  else if (action === "jump" && window.confirm(config.messages?.jump || "")) send({ action: "jump", step: button.dataset.stepTarget });
});

root.addEventListener("click", (event) => {
  const tab = event.target.closest("[data-tab]");
  if (tab) selectTab(tab.dataset.tab);
});

// The hint request says which leaves fail now and which hints the page shows, so the next hint is
// the one for what the check saw.
document.body.addEventListener("htmx:configRequest", (event) => {
  const form = event.target.closest?.("[data-hint-form]");
  if (!form) return;
  const box = form.closest("[data-check]");
  const shown = [...box.querySelectorAll("[data-hint]")].map((li) => li.dataset.hint);
  event.detail.parameters.shown = shown.join(",");
  event.detail.parameters.failing = (verdicts.get(current)?.failing || []).join(",");
});

document.addEventListener("keydown", (event) => {
  if (!event.altKey || event.ctrlKey || event.metaKey) return;
  // In the editor, Alt+arrows are CodeMirror's own (move by syntax), and the console's input keeps its keys.
  if (event.defaultPrevented || event.target.closest?.(".cm-editor, [data-console-input]")) return;
  const list = articles();
  const index = list.findIndex((a) => a.dataset.step === current);
  if (event.key === "ArrowRight" && list[index + 1]) showStep(list[index + 1].dataset.step);
  else if (event.key === "ArrowLeft" && list[index - 1]) showStep(list[index - 1].dataset.step);
  else if (event.key.toLowerCase() === "r") firstAction()?.();
  else if (event.key.toLowerCase() === "e") {
    selectTab("form");
    window.kubelabEditor?.focus();
  } else if (event.key.toLowerCase() === "c") send({ action: "check" });
  else return;
  event.preventDefault();
});

addRunButtons();
if (config.signedIn) connect();
else mountDemo();

// The form's editor is mounted by its own module, after this one: restore the open step's draft then,
// and keep it when the page goes (a reload, a change of language).
document.addEventListener("DOMContentLoaded", () => {
  const draft = editorStep && draftOf(editorStep);
  if (draft) window.kubelabEditor?.setValue(draft);
});
window.addEventListener("pagehide", saveDraft);
