// The etcd panel: the cluster's store as etcd holds it, key by key, beside the diagram.
//
// kube-apiserver keeps each object under a key (`/registry/pods/default/web`) in an MVCC store: one
// revision counter for the cluster, bumped by every write, and per key its create revision, mod
// revision and version. History is kept back to the compaction mark; older revisions are gone (410).
// The panel lists the keys with those numbers, the current revision and the compaction mark, and shows
// one key's stored bytes: JSON as JSON, an encrypted Secret as its `k8s:enc:aescbc:v1:key1:` prefix
// and the start of its ciphertext. A Secret's plaintext never reaches the page: the server
// (courses/etcdpanel.py) never sends it.
//
// Live, without polling: when the diagram plays a `store.txn` that wrote keys, the panel asks the
// server for those keys *at that transaction's revision*, so it agrees with the moment the diagram
// shows. Pinned to a past revision ("time travel"), it reads the whole store as it was then, and says
// plainly when that revision is compacted away. Pinning it (its scrubber, its revision field, or the
// inspector's button) rewinds the whole page, the diagram too (rewind.js), and rewinding the page pins it.

import { gettext, interpolate, lazy } from "./i18n.js";

/** The panel's words, looked up once (i18n.js). */
const E = lazy(() => ({
  answered: gettext("the server answered %(status)s"),
  encrypted: gettext("encrypted (%(provider)s, key %(key)s), %(bytes)s B"),
  hidden: gettext("Secret, not encrypted, %(bytes)s B: not shown"),
  json: gettext("JSON, %(bytes)s B"),
  unreadable: gettext("The store could not be read: %(error)s."),
  compacted: gettext(
    "Revision %(revision)s is compacted: etcd keeps history only from revision %(compacted)s on, so the store as it was then cannot be shown. Pick a later revision, or go back to live.",
  ),
  cannotRead: gettext("The store cannot be read here: %(error)s."),
  pinned: gettext("Showing the store as it was at revision %(revision)s (now %(current)s); live writes wait until you go back to live."),
  live: gettext("Live: each write the diagram plays updates its key here."),
  liveSome: gettext("Live: each write the diagram plays updates its key here (only the first %(shown)s of %(count)s keys are listed)."),
  shownPinned: gettext("showing the store as it was at revision %(revision)s"),
  shownLive: gettext("showing revision %(revision)s (where the diagram is)"),
  keptFrom: gettext("history kept from revision %(revision)s (compacted below it)"),
  neverCompacted: gettext("never compacted"),
  marks: gettext("Current revision %(current)s · %(shown)s · %(compacted)s"),
  scrubPinned: gettext("revision %(revision)s"),
  scrubLive: gettext("live, revision %(revision)s"),
  count: gettext("%(shown)s of %(count)s keys"),
  changed: {
    created: gettext(" ✱ created at %(revision)s"),
    updated: gettext(" ✱ updated at %(revision)s"),
    deleted: gettext(" ✱ deleted at %(revision)s"),
  },
  deleted: gettext("✕ %(key)s deleted at revision %(revision)s"),
  keyUnreadable: gettext("could not be read: %(error)s"),
  missing: gettext("This key does not exist at this revision."),
  createdAt: gettext("created at revision"),
  writtenAt: gettext("last written at revision"),
  version: gettext("version (writes since created)"),
  lease: gettext("lease"),
  noLease: gettext("none"),
  stored: gettext("stored"),
  atRest: gettext(
    "Encrypted at rest: the API server wrote this prefix, then the IV and the ciphertext. Only the API server, holding the key, can read it; etcd and its backups cannot.",
  ),
  prefix: gettext("prefix"),
  firstBytes: gettext("first %(count)s bytes, hex"),
  base64: gettext("the same, base64"),
  valueOf: gettext("The value of %(key)s as stored"),
}));

const say = (template, values) => interpolate(template, values, true);

const REFRESH_DELAY = 150; // ms: the keys of writes played close together are fetched together
const MAX_KEYS_PER_FETCH = 100;
const CHANGED_FOR = 6000; // ms a changed row stays marked

function el(tag, { className, text } = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/**
 * GET `url` with `params` (`[[name, value], ...]`) as JSON, with the page's session: `{status, data}`,
 * `data` saying the status in `error` when the answer is not JSON. A network failure throws.
 */
export async function readJSON(fetcher, url, params = []) {
  const query = new URLSearchParams();
  for (const [name, value] of params) query.append(name, String(value));
  const search = query.toString();
  const response = await fetcher(`${url}${search ? `?${search}` : ""}`, {
    credentials: "same-origin",
    headers: { Accept: "application/json" },
  });
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = { error: say(E().answered, { status: response.status }) };
  }
  return { status: response.status, data };
}

/** Write `text` into `element` unless it holds it already (a write costs a layout, even of the same text). */
function setText(element, text) {
  if (element && element.textContent !== text) element.textContent = text;
}

/** The keys a `store.txn` event wrote, with PUT/DELETE: `[{key, type}]` (none for a read or a failed txn). */
export function writtenKeys(event) {
  if (event?.type !== "store.txn" || event.succeeded === false) return [];
  if (Array.isArray(event.writes)) return event.writes.filter((w) => w && typeof w.key === "string");
  return [];
}

/** A stored value in a few words: `JSON, 412 B`, `encrypted (aescbc, key key1), 318 B`. */
export function valueSummary(value) {
  if (!value) return "";
  switch (value.form) {
    case "ciphertext":
      return say(E().encrypted, { provider: value.provider, key: value.key_name, bytes: value.bytes });
    case "hidden":
      return say(E().hidden, { bytes: value.bytes });
    case "json":
      return say(E().json, { bytes: value.bytes });
    default:
      return `${value.bytes} B`;
  }
}

export class EtcdPanel {
  /**
   * @param {HTMLElement} root the panel's section (see templates/courses/cluster.html)
   * @param {{url: string, fetch?: typeof fetch, onShowRevision?: (revision) => void,
   *   onMarks?: ({current, compacted}) => void}} options
   *   onShowRevision: the panel was pinned to a revision (null: live) by its own controls;
   *   onMarks: it learnt the store's current revision or compaction mark
   */
  constructor(root, { url, fetch: fetcher, onShowRevision, onMarks } = {}) {
    this.root = root;
    this.url = url;
    this.fetch = fetcher || ((...args) => window.fetch(...args));
    this.onShowRevision = onShowRevision;
    this.onMarks = onMarks;
    this.rows = new Map(); // key -> row from the server
    this.changed = new Map(); // key -> {what, revision, at}
    this.revision = 0; // the revision the list shows
    this.current = 0;
    this.compacted = 0;
    this.pinned = null; // a past revision the panel is pinned to, or null: live
    this.selected = null;
    this.pending = new Map(); // key -> revision of the latest played write to it
    this.reloadAt = null; // the revision the next whole-list read is at (where the diagram is), or null: now
    this.timer = null;
    this.reloadAfter = false;
    this.generation = 0; // answers to an older request than the last reload are dropped
    this.rowElements = new Map(); // key -> {tr, drawn}: the rows on the page and what they show

    this.marks = root.querySelector("[data-etcd=marks]");
    this.message = root.querySelector("[data-etcd=message]");
    this.filter = root.querySelector("[data-etcd=filter]");
    this.body = root.querySelector("[data-etcd=keys]");
    this.detail = root.querySelector("[data-etcd=detail]");
    this.form = root.querySelector("[data-etcd=at-form]");
    this.atInput = root.querySelector("[data-etcd=at]");
    this.liveButton = root.querySelector("[data-etcd=live]");
    this.scrub = root.querySelector("[data-etcd=scrub]");

    this.filter?.addEventListener("input", () => this.render());
    this.form?.addEventListener("submit", (event) => {
      event.preventDefault();
      const revision = Number(this.atInput.value);
      if (Number.isInteger(revision) && revision > 0) this.showRevision(revision);
    });
    this.liveButton?.addEventListener("click", () => this.showRevision(null));
    // The scrubber: from the compaction mark (the oldest readable revision) to the current one. It
    // reads on `change` (released, or each arrow key), not on every pixel of a drag.
    this.scrub?.addEventListener("input", () => {
      if (this.atInput) this.atInput.value = this.scrub.value;
    });
    this.scrub?.addEventListener("change", () => {
      const revision = Number(this.scrub.value);
      this.showRevision(revision >= this.current ? null : revision);
    });
    this.body?.addEventListener("keydown", (event) => this._arrowKeys(event));
  }

  // -- reading the server ----------------------------------------------------------------------------

  async _get(params) {
    return readJSON(this.fetch, this.url, params);
  }

  /** Read the whole list (at the pinned revision, or where the diagram is: `reloadAt`, else now). */
  async load() {
    const generation = ++this.generation;
    this.reloadAfter = false;
    const at = this.pinned ?? this.reloadAt ?? null;
    this.reloadAt = null;
    const params = at ? [["revision", at]] : [];
    let answer;
    try {
      answer = await this._get(params);
    } catch (error) {
      this._say(say(E().unreadable, { error: error.message || error }), "error");
      return;
    }
    if (generation !== this.generation) return;
    const { status, data } = answer;
    if (status === 410) {
      this.compacted = data.compacted ?? this.compacted;
      this.rows.clear();
      this._renderMarks();
      this._say(say(E().compacted, { revision: this.pinned, compacted: data.compacted }), "compacted");
      this.render();
      return;
    }
    if (status !== 200) {
      this._say(say(E().cannotRead, { error: data?.error || `HTTP ${status}` }), "error");
      return;
    }
    this.rows = new Map(data.keys.map((row) => [row.key, row]));
    this._marks(data);
    const live = data.more ? say(E().liveSome, { shown: data.keys.length, count: data.count }) : E().live;
    this._say(this.pinned ? say(E().pinned, { revision: data.revision, current: data.current_revision }) : live, this.pinned ? "past" : "live");
    this.render();
    if (this.selected) this._showKey(this.selected);
  }

  /** Fetch the given keys at `revision` and fold them into the list. */
  async _refresh(keys, revision) {
    const generation = this.generation;
    const params = keys.map((key) => ["key", key]);
    if (revision) params.push(["revision", revision]);
    let answer;
    try {
      answer = await this._get(params);
    } catch {
      return;
    }
    if (generation !== this.generation || this.pinned) return;
    let { status, data } = answer;
    if (status === 410 && revision) {
      ({ status, data } = await this._get(keys.map((key) => ["key", key])).catch(() => ({ status: 0 })));
    }
    if (status !== 200) return;
    for (const row of data.keys) {
      const known = this.rows.get(row.key);
      if (known && known.mod_revision > row.mod_revision) continue; // never go back in time
      this.rows.set(row.key, row);
      this.changed.set(row.key, { what: known ? "updated" : "created", revision: row.mod_revision, at: Date.now() });
      if (this.selected === row.key) this._renderDetail(row);
    }
    for (const key of data.absent || []) {
      const known = this.rows.get(key);
      if (known && known.mod_revision > data.revision) continue;
      if (this.rows.delete(key)) this.changed.set(key, { what: "deleted", revision: data.revision, at: Date.now() });
      if (this.selected === key) this._renderDetail(null, key);
    }
    this._marks(data);
    this.render();
  }

  // -- following the diagram -------------------------------------------------------------------------

  /** The diagram played `event`: a write refreshes its keys (batched), a compaction moves the mark. */
  noteEvent(event) {
    if (event?.type === "store.compact" && typeof event.revision === "number") {
      this.compacted = Math.max(this.compacted, event.revision);
      this._renderMarks();
      return;
    }
    const written = writtenKeys(event);
    if (!written.length) return;
    if (typeof event.revision === "number") this.current = Math.max(this.current, event.revision);
    if (this.pinned) {
      this.reloadAfter = true;
      this._renderMarks();
      return;
    }
    for (const { key } of written) this.pending.set(key, event.revision);
    this._schedule();
  }

  /**
   * Events applied at once (folded background traffic, a burst drawn to keep up): their keys are
   * read at their revisions like a played write's, so the panel stays where the diagram is; only
   * when more keys wait than a few reads can take is the whole list read again (at the newest of
   * them), never at a revision the diagram has not reached.
   */
  noteSkipped(events) {
    let newest = 0;
    for (const event of events) {
      this.noteEvent(event);
      if (typeof event.revision === "number" && writtenKeys(event).length) newest = Math.max(newest, event.revision);
    }
    if (this.pending.size > 2 * MAX_KEYS_PER_FETCH && !this.pinned) {
      this.pending.clear();
      this.reloadAt = newest || null;
      this._schedule(true);
    }
  }

  _schedule(full = false) {
    if (full) this.reloadAfter = true;
    if (this.timer) return;
    this.timer = setTimeout(() => this._flush(), REFRESH_DELAY);
  }

  _flush() {
    this.timer = null;
    if (this.reloadAfter) {
      this.pending.clear();
      this.load();
      return;
    }
    const batch = [...this.pending.entries()].slice(0, MAX_KEYS_PER_FETCH);
    for (const [key] of batch) this.pending.delete(key);
    if (batch.length) this._refresh(batch.map(([key]) => key), Math.max(...batch.map(([, r]) => r || 0)) || null);
    if (this.pending.size) this._schedule();
  }

  /** Pin the panel to a past revision (null: back to live); `notify: false` when the page asked. */
  showRevision(revision, { notify = true } = {}) {
    this.pinned = revision;
    this.pending.clear();
    this.changed.clear();
    if (this.atInput && revision) this.atInput.value = String(revision);
    if (this.liveButton) this.liveButton.disabled = revision === null;
    this.root.dataset.mode = revision ? "past" : "live";
    if (notify) this.onShowRevision?.(revision);
    return this.load();
  }

  // -- drawing ---------------------------------------------------------------------------------------

  _say(text, state) {
    if (!this.message) return;
    setText(this.message, text);
    if (this.message.dataset.state !== state) this.message.dataset.state = state;
  }

  _marks(data) {
    if (typeof data.revision === "number") this.revision = this.pinned ? data.revision : Math.max(this.revision, data.revision);
    if (typeof data.current_revision === "number") this.current = Math.max(this.current, data.current_revision);
    if (typeof data.compacted === "number") this.compacted = Math.max(this.compacted, data.compacted);
    this._renderMarks();
  }

  _renderMarks() {
    this.onMarks?.({ current: this.current, compacted: this.compacted });
    if (!this.marks) return;
    const shown = this.pinned ? say(E().shownPinned, { revision: this.pinned }) : say(E().shownLive, { revision: this.revision });
    const compacted = this.compacted ? say(E().keptFrom, { revision: this.compacted }) : E().neverCompacted;
    setText(this.marks, say(E().marks, { current: this.current, shown, compacted }));
    if (this.scrub) {
      this.scrub.min = String(Math.max(1, this.compacted || 1));
      this.scrub.max = String(Math.max(1, this.current));
      if (document.activeElement !== this.scrub) this.scrub.value = String(this.pinned ?? this.current);
      this.scrub.setAttribute("aria-valuetext", this.pinned ? say(E().scrubPinned, { revision: this.pinned }) : say(E().scrubLive, { revision: this.current }));
    }
  }

  /**
   * Draw the list. Only rows whose content changed are drawn again (a busy diagram reloads the list
   * every second or so, and rebuilding hundreds of rows would cost the browser a frame or two each
   * time); the others stay as they are, in their place.
   */
  render() {
    if (!this.body) return;
    const filter = (this.filter?.value || "").trim();
    const now = Date.now();
    for (const [key, change] of this.changed) if (now - change.at > CHANGED_FOR) this.changed.delete(key);
    const rows = [...this.rows.values()].filter((row) => !filter || row.key.includes(filter));
    rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const wanted = rows.map((row) => this._rowElement(row, this.changed.get(row.key)));
    for (const [key, change] of this.changed) {
      if (change.what !== "deleted" || (filter && !key.includes(filter))) continue;
      wanted.push(this._deletedRowElement(key, change));
    }
    const keep = new Set(wanted);
    const focusedKey = document.activeElement?.dataset?.key;
    for (const tr of [...this.body.rows]) if (!keep.has(tr)) tr.remove();
    let next = this.body.firstElementChild;
    for (const tr of wanted) {
      if (tr === next) next = next.nextElementSibling;
      else this.body.insertBefore(tr, next);
    }
    for (const [id, entry] of this.rowElements) if (!keep.has(entry.tr)) this.rowElements.delete(id);
    if (focusedKey && !this.body.contains(document.activeElement)) {
      this.body.querySelector(`button[data-key="${CSS.escape(focusedKey)}"]`)?.focus();
    }
    setText(this.root.querySelector("[data-etcd=count]"), say(E().count, { shown: rows.length, count: this.rows.size }));
  }

  /** The row of one key: the one drawn before if it still shows the same, else a new one. */
  _rowElement(row, change) {
    const selected = row.key === this.selected;
    const drawn = [row.create_revision, row.mod_revision, row.version, valueSummary(row.value), selected,
                   change ? `${change.what} ${change.revision}` : ""].join("|"); // prettier-ignore
    const known = this.rowElements.get(row.key);
    if (known?.drawn === drawn) return known.tr;
    const tr = document.createElement("tr");
    tr.dataset.key = row.key;
    if (change) tr.classList.add("changed");
    if (selected) tr.classList.add("selected");
    const keyCell = tr.insertCell();
    const button = el("button", { className: "etcd-key", text: row.key });
    button.type = "button";
    button.dataset.key = row.key;
    button.setAttribute("aria-pressed", String(selected));
    button.addEventListener("click", () => this.select(row.key));
    keyCell.append(button);
    if (change) keyCell.append(el("span", { className: "etcd-change", text: say(E().changed[change.what], { revision: change.revision }) }));
    tr.insertCell().textContent = String(row.create_revision);
    tr.insertCell().textContent = String(row.mod_revision);
    tr.insertCell().textContent = String(row.version);
    tr.insertCell().textContent = valueSummary(row.value);
    this.rowElements.set(row.key, { tr, drawn });
    return tr;
  }

  _deletedRowElement(key, change) {
    const id = `deleted ${key}`;
    const drawn = String(change.revision);
    const known = this.rowElements.get(id);
    if (known?.drawn === drawn) return known.tr;
    const tr = document.createElement("tr");
    tr.className = "deleted";
    const cell = tr.insertCell();
    cell.colSpan = 5;
    cell.textContent = say(E().deleted, { key, revision: change.revision });
    this.rowElements.set(id, { tr, drawn });
    return tr;
  }

  _arrowKeys(event) {
    if (!["ArrowDown", "ArrowUp", "Home", "End"].includes(event.key)) return;
    const buttons = [...this.body.querySelectorAll("button.etcd-key")];
    if (!buttons.length) return;
    const at = buttons.indexOf(document.activeElement);
    let next = at;
    if (event.key === "ArrowDown") next = Math.min(buttons.length - 1, at + 1);
    else if (event.key === "ArrowUp") next = Math.max(0, at - 1);
    else if (event.key === "Home") next = 0;
    else next = buttons.length - 1;
    buttons[next].focus();
    event.preventDefault();
  }

  /** Select a key: its value (read at the revision the panel shows) in the detail area. */
  select(key) {
    this.selected = key;
    this.render();
    return this._showKey(key);
  }

  async _showKey(key) {
    const revision = this.pinned || this.revision || null;
    let answer;
    try {
      answer = await this._get([["key", key], ...(revision ? [["revision", revision]] : [])]);
    } catch (error) {
      this._renderDetail(null, key, say(E().keyUnreadable, { error: error.message || error }));
      return;
    }
    if (this.selected !== key) return;
    const { status, data } = answer;
    if (status !== 200) {
      this._renderDetail(null, key, data?.error || `HTTP ${status}`);
      return;
    }
    this._renderDetail(data.keys[0] || null, key);
  }

  _renderDetail(row, key = row?.key, problem = "") {
    if (!this.detail) return;
    this.detail.replaceChildren();
    const heading = el("h3", { text: key || "" });
    this.detail.append(heading);
    if (problem || !row) {
      this.detail.append(el("p", { className: "muted", text: problem || E().missing }));
      return;
    }
    const facts = el("dl");
    for (const [term, value] of [
      [E().createdAt, row.create_revision],
      [E().writtenAt, row.mod_revision],
      [E().version, row.version],
      [E().lease, row.lease || E().noLease],
      [E().stored, valueSummary(row.value)],
    ]) {
      facts.append(el("dt", { text: term }), el("dd", { text: String(value) }));
    }
    this.detail.append(facts);
    const value = row.value || {};
    if (value.form === "ciphertext") {
      this.detail.append(
        el("p", { text: E().atRest }),
      );
      const cipher = el("dl", { className: "ciphertext" });
      const more = value.truncated ? " …" : "";
      for (const [term, text] of [
        [E().prefix, value.prefix],
        [say(E().firstBytes, { count: value.hex.length / 2 }), `${value.hex.replace(/(..)/g, "$1 ").trim()}${more}`],
        [E().base64, `${value.base64}${more}`],
      ]) {
        cipher.append(el("dt", { text: term }), el("dd", { className: "mono", text }));
      }
      this.detail.append(cipher);
    } else if (value.form === "hidden") {
      this.detail.append(el("p", { text: value.why }));
    } else if (value.form === "json" && ("json" in value || value.text)) {
      const pre = el("pre", { text: value.text ?? JSON.stringify(value.json, null, 2) });
      pre.tabIndex = 0;
      pre.setAttribute("aria-label", say(E().valueOf, { key: row.key }));
      this.detail.append(pre);
    } else if (value.hex) {
      this.detail.append(el("pre", { className: "mono", text: value.hex }));
    }
  }
}
