// The trace stream: one websocket to /ws/lab/<cluster>/trace/, with gapless seq tracking.
//
// The protocol (Zulip's event-queue pattern, with an informer's list before its watch): the server
// says `hello` with its `last_seq`; a page that holds nothing yet answers `subscribe` with `state: true`
// and gets the cluster's state first (`state`, as of a seq), then every event after it; a page that
// reconnects answers `subscribe` with the last seq it holds. Frames carry events gapless from
// `first` to `last`; a frame's `summary` stands for events the server left out under load. A frame
// whose `first` is not our last + 1 means we missed some: we ask for `resync` from our last seq and drop
// frames until the missing ones arrive (no duplicates: events at or below our last seq are skipped).
// An error 410 means the server no longer has what we asked for: we start again from the state now
// (`requestState`, which the page also asks for after a summary: it missed those events). Errors
// 4403/4404 (not allowed, no such cluster) come before the server closes: we say so and stay closed.
// Any other close reconnects with a growing delay and subscribes from the last seq we hold: 4001 (the
// cluster's trace ended there: the lab stopped, or a relay's mirror lost its owner), 4011 (the server's
// stream broke), or a dropped connection.
//
// With `?perf=1` in the page's address, the time each frame takes to handle is measured (perf.js).

import { gettext, interpolate, lazy } from "./i18n.js";
import { perf } from "./perf.js";

/** What the stream says on the page (its status line and the narration's notes), looked up once. */
const S = lazy(() => ({
  connecting: gettext("Connecting to the trace stream …"),
  failed: gettext("The trace stream failed."),
  notJSON: gettext("The server sent something that is not JSON; ignored."),
  restarted: gettext("The server's trace restarted (seq %(seq)s < %(last)s); following from now."),
  live: gettext("Live"),
  missed: gettext("Missed events %(first)s–%(last)s; asking the server for them."),
  catchingUp: gettext("Catching up …"),
  gone: gettext("The server no longer holds the events we asked for; starting again from the cluster's state now."),
  noState: gettext("%(error)s; following the trace from now without it."),
  forbidden: gettext("You may not watch this cluster."),
  forbiddenWhy: gettext("You may not watch this cluster: %(detail)s."),
  noCluster: gettext("There is no such cluster."),
  noClusterWhy: gettext("There is no such cluster: %(detail)s."),
  error: gettext("The server reported an error %(code)s%(detail)s."),
  detail: gettext(": %(detail)s"),
  offline: gettext("Disconnected; reconnecting in %(seconds)s s …"),
}));

const say = (template, values) => interpolate(template, values, true);

export class TraceStream {
  /**
   * @param {string} url absolute ws(s):// URL
   * @param {{onHello?, onState?, onEvents?, onSummary?, onStatus?, onNote?, since?: number|null}} handlers
   *   `onHello` returns the seq to subscribe after, `"state"` to start from the cluster's state, or
   *   undefined to keep the last seq held
   */
  constructor(url, handlers = {}) {
    this.url = url;
    this.handlers = handlers;
    this.last = handlers.since ?? null;
    this.resyncing = false;
    this.awaitingState = false;
    this.refused = false;
    this.retry = 0;
    this.socket = null;
    this.timer = null;
    this.stopped = false;
  }

  connect() {
    this.stopped = false;
    this._status("connecting", S().connecting);
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener("message", (message) => {
      const started = perf ? performance.now() : 0;
      const type = this._receive(message.data);
      if (perf && type === "frame") perf.time("frame", performance.now() - started);
    });
    socket.addEventListener("close", (close) => this._closed(close));
    socket.addEventListener("error", () => this._status("error", S().failed));
  }

  close() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.socket?.close();
  }

  send(message) {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  _status(state, text) {
    this.handlers.onStatus?.(state, text);
  }

  /** Handle one message from the server; returns its type (null if it was not JSON). */
  _receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      this.handlers.onNote?.(S().notJSON);
      return null;
    }
    switch (message.type) {
      case "hello":
        this._hello(message);
        break;
      case "frame":
        if (!this.awaitingState) this._frame(message);
        break;
      case "state":
        this._state(message);
        break;
      case "error":
        this._error(message);
        break;
      default:
        break;
    }
    return message.type;
  }

  _hello(hello) {
    this.retry = 0;
    if (this.last !== null && typeof hello.last_seq === "number" && hello.last_seq < this.last) {
      // The server's history restarted below what we hold: start from now.
      this.handlers.onNote?.(say(S().restarted, { seq: hello.last_seq, last: this.last }));
      this.last = null;
    }
    const since = this.handlers.onHello?.(hello, this.last);
    this.resyncing = false;
    this._status("live", S().live);
    if ((since === "state" || this.awaitingState) && this.last === null) {
      this.requestState();
      return;
    }
    if (since !== undefined && this.last === null) this.last = since;
    this.send({ action: "subscribe", since: this.last });
  }

  /** Start again from the cluster's state now (what is queued for the old stream is dropped). */
  requestState() {
    this.last = null;
    this.resyncing = false;
    this.awaitingState = true;
    this.send({ action: "subscribe", since: null, state: true });
  }

  _state(state) {
    if (typeof state.seq !== "number") return;
    this.awaitingState = false;
    this.last = state.seq;
    this.handlers.onState?.(state);
  }

  _frame(frame) {
    const first = frame.first;
    const last = frame.last;
    if (typeof first !== "number" || typeof last !== "number") return;
    if (this.last !== null && last <= this.last) return; // all seen already
    if (this.last !== null && first > this.last + 1) {
      if (!this.resyncing) {
        this.resyncing = true;
        this.handlers.onNote?.(say(S().missed, { first: this.last + 1, last: first - 1 }));
        this._status("resync", S().catchingUp);
        this.send({ action: "resync", since: this.last });
      }
      return;
    }
    if (this.resyncing) {
      this.resyncing = false;
      this._status("live", S().live);
    }
    const floor = this.last ?? first - 1;
    const events = (frame.events || []).filter((event) => typeof event.seq === "number" && event.seq > floor);
    this.last = last;
    perf?.count("events", events.length);
    if (events.length) this.handlers.onEvents?.(events);
    if (frame.summary && (frame.summary.last ?? last) > floor) {
      perf?.count("summarised", (frame.summary.last ?? last) - (frame.summary.first ?? first) + 1);
      this.handlers.onSummary?.(frame.summary);
    }
  }

  _error(error) {
    if (error.code === 410) {
      this.handlers.onNote?.(S().gone);
      this.requestState();
      return;
    }
    if (error.code === 501 && this.awaitingState) {
      // A process that only mirrors the cluster has no store to read its state from.
      this.handlers.onNote?.(say(S().noState, { error: error.message }));
      this.awaitingState = false;
      this.send({ action: "subscribe", since: null });
      return;
    }
    if (error.code === 4403 || error.code === 4404) {
      this.refused = true;
      const forbidden = error.code === 4403;
      const detail = error.message;
      const text = detail ? say(forbidden ? S().forbiddenWhy : S().noClusterWhy, { detail }) : forbidden ? S().forbidden : S().noCluster;
      this._status("refused", text);
      return;
    }
    const detail = error.message ? say(S().detail, { detail: error.message }) : "";
    this.handlers.onNote?.(say(S().error, { code: error.code ?? "", detail }));
  }

  _closed(close) {
    this.socket = null;
    if (this.stopped) return;
    if (this.refused || close.code === 4403 || close.code === 4404) {
      if (!this.refused) this._status("refused", close.code === 4403 ? S().forbidden : S().noCluster);
      return;
    }
    const delay = Math.min(10000, 500 * 2 ** this.retry);
    this.retry += 1;
    this._status("offline", say(S().offline, { seconds: Math.round(delay / 1000) }));
    this.timer = setTimeout(() => this.connect(), delay);
  }
}

/** The websocket URL of a path on this page's own origin. */
export function sameOriginSocketURL(path, location = window.location) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}
