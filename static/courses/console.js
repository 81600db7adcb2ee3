// The kubectl console: a command line beside the chapter that runs the real kubectl in the student's
// own sandbox (courses/console/consumer.py runs it; policy.py says what may run, and why not).
//
// The page is a plain output pane and an input line. A command is sent over the console's socket
// (ws/course/<course>/<chapter>/console/) as {"action": "run", "command", "stdin"} and its answer comes
// back in order: "started" then "output" chunks then "exit", or "refused" with the reason in words.
// The command is echoed at once; its answer is attached to it when it comes (answers arrive in the
// order the commands were sent). `kubectl apply -f -` reads the manifest editor's text, which goes along
// as "stdin" (the server passes it on only to a command that reads it).
//
// Keys: Enter runs; Up and Down walk the history; Ctrl-C stops the newest running command (when no text
// is selected, so copying still works); Ctrl-L clears the pane. The Stop button does what Ctrl-C does.
//
// For a screen reader the pane is a log, and new output is also read out through a polite live region,
// at most once a second and only its last lines, so a watch does not drown everything else.
//
// `window.kubelabConsole = {type(command), run(command), stop(), focus()}`: a step's "run" buttons use it.
// Every word shown comes from the template (data-label-* attributes), translated there.

/** At most this many characters stay in the pane: older runs go first. */
export const SCROLLBACK_CHARS = 200_000;
/** Commands the history keeps. */
export const HISTORY_SIZE = 200;
/** How often new output is read out to a screen reader, and how much of it. */
const ANNOUNCE_MS = 1000;
const ANNOUNCE_CHARS = 400;
/** Close codes after which reconnecting cannot help (courses/console/consumer.py). */
const FINAL_CODES = new Set([4403, 4404]);

// Terminal control sequences kubectl (or a container's log) may print: CSI (colours, cursor moves), OSC
// (window titles, links), two-character escapes, and every other control character but newline and tab.
const CSI = /\x1b\[[0-?]*[ -/]*[@-~]/g;
const OSC = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g;
const ESCAPE = /\x1b[@-Z\\-_]?/g;
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** `text` without terminal control sequences: what kubectl meant, as plain text. `\r\n` is a newline. */
export function stripAnsi(text) {
  return String(text).replace(/\r\n/g, "\n").replace(OSC, "").replace(CSI, "").replace(ESCAPE, "").replace(CONTROL, "");
}

/** The last `chars` characters of `text`, from a line's start where there is one. */
export function tail(text, chars = ANNOUNCE_CHARS) {
  if (text.length <= chars) return text;
  const cut = text.slice(-chars);
  const newline = cut.indexOf("\n");
  return newline >= 0 && newline < cut.length - 1 ? cut.slice(newline + 1) : cut;
}

/** The commands typed, newest last; `up` and `down` walk them, keeping what was being typed. */
export class History {
  constructor(size = HISTORY_SIZE) {
    this.size = size;
    this.items = [];
    this.position = 0;
    this.draft = "";
  }

  push(command) {
    if (command && this.items[this.items.length - 1] !== command) this.items.push(command);
    if (this.items.length > this.size) this.items.splice(0, this.items.length - this.size);
    this.position = this.items.length;
    this.draft = "";
  }

  /** The command before the one shown (`current` is the input's text, kept as a draft at the bottom). */
  up(current) {
    if (this.position === this.items.length) this.draft = current;
    if (this.position > 0) this.position -= 1;
    return this.items[this.position] ?? current;
  }

  down() {
    if (this.position < this.items.length) this.position += 1;
    return this.position === this.items.length ? this.draft : this.items[this.position];
  }
}

/** The socket's URL for a path, on this page's host (ws: or wss: as the page). */
export function socketUrl(path, location = window.location) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}

function labels(root) {
  const label = (name, fallback) => root.dataset[`label${name}`] || fallback;
  return {
    connecting: label("Connecting", "Connecting…"),
    ready: label("Ready", "Connected to your sandbox"),
    reconnecting: label("Reconnecting", "Disconnected. Reconnecting…"),
    waiting: label("Waiting", "Not connected yet: the command runs once the console is connected."),
    refused: label("Refused", "Not run:"),
    exit: label("Exit", "exit code"),
    empty: label("Empty", "Type a kubectl command, for example: kubectl get pods"),
  };
}

class Console {
  constructor(root) {
    this.root = root;
    this.labels = labels(root);
    this.output = root.querySelector("[data-console-output]");
    this.announcer = root.querySelector("[data-console-announce]");
    this.state = root.querySelector("[data-console-state]");
    this.form = root.querySelector("[data-console-form]");
    this.input = root.querySelector("[data-console-input]");
    this.stopButton = root.querySelector("[data-console-stop]");
    this.clearButton = root.querySelector("[data-console-clear]");
    this.history = new History();
    this.pending = []; // blocks of commands sent and not answered yet, in order
    this.runs = new Map(); // run id -> block
    this.queued = []; // commands typed before the socket was ready
    this.ready = false;
    this.closedForGood = false;
    this.retry = 500;
    this.unread = "";
    this.announceTimer = null;
    this.chars = 0;
    this.bind();
    this.connect();
  }

  // -- the socket ----------------------------------------------------------------------------------

  connect() {
    this.setState(this.labels.connecting);
    const socket = new WebSocket(socketUrl(this.root.dataset.consoleUrl));
    this.socket = socket;
    socket.addEventListener("message", (event) => this.receive(JSON.parse(event.data)));
    socket.addEventListener("close", (event) => this.closed(event.code));
  }

  closed(code) {
    this.ready = false;
    for (const block of this.runs.values()) this.finish(block, null, "");
    this.runs.clear();
    for (const block of this.pending.splice(0)) this.finish(block, null, this.labels.reconnecting);
    this.updateStop();
    if (this.closedForGood || FINAL_CODES.has(code)) return;
    this.setState(this.labels.reconnecting);
    setTimeout(() => this.connect(), this.retry);
    this.retry = Math.min(this.retry * 2, 15_000);
  }

  receive(message) {
    switch (message.type) {
      case "status":
        this.setState(message.message);
        break;
      case "ready":
        this.ready = true;
        this.retry = 500;
        this.setState(`${this.labels.ready}: ${message.cluster} (${message.user})`);
        for (const command of this.queued.splice(0)) this.send(command);
        break;
      case "started": {
        const block = this.pending.shift() || this.block(message.command);
        block.classList.add("running");
        this.runs.set(message.run, block);
        this.updateStop();
        break;
      }
      case "output": {
        const block = this.runs.get(message.run);
        if (block) this.write(block, stripAnsi(message.data));
        break;
      }
      case "exit": {
        const block = this.runs.get(message.run);
        this.runs.delete(message.run);
        if (block) this.finish(block, message.code, message.message, message.reason);
        this.updateStop();
        break;
      }
      case "refused": {
        const block = this.pending.shift() || this.block(message.command);
        block.classList.add("refused");
        this.note(block, `${this.labels.refused} ${message.message}`, "console-refusal");
        this.announce(`${this.labels.refused} ${message.message}`);
        break;
      }
      case "error":
        this.setState(message.message);
        if (FINAL_CODES.has(message.code)) this.closedForGood = true;
        break;
    }
  }

  // -- commands ------------------------------------------------------------------------------------

  submit(command) {
    const line = command.trim();
    if (!line) {
      this.setState(this.labels.empty);
      return;
    }
    this.history.push(line);
    this.input.value = "";
    if (!this.ready) {
      this.queued.push(line);
      this.note(this.block(line), this.labels.waiting, "console-note");
      return;
    }
    this.send(line);
  }

  send(line) {
    this.pending.push(this.block(line));
    this.socket.send(JSON.stringify({ action: "run", command: line, stdin: editorText() }));
  }

  stop() {
    const newest = Math.max(...this.runs.keys());
    if (Number.isFinite(newest) && this.socket?.readyState === WebSocket.OPEN) {
      this.socket.send(JSON.stringify({ action: "stop", run: newest }));
    }
  }

  // -- the pane ------------------------------------------------------------------------------------

  /** A new block for `command` at the bottom: its echoed line, then (later) its output. */
  block(command) {
    const block = document.createElement("div");
    block.className = "console-run";
    const echo = document.createElement("div");
    echo.className = "console-echo";
    echo.textContent = `$ ${command}`;
    const text = document.createElement("pre");
    text.className = "console-text";
    block.append(echo, text);
    this.append(block, command.length + 2);
    return block;
  }

  write(block, text) {
    if (!text) return;
    const pre = block.querySelector(".console-text");
    const stick = this.atBottom();
    pre.append(document.createTextNode(text));
    this.chars += text.length;
    this.trim();
    if (stick) this.output.scrollTop = this.output.scrollHeight;
    this.unread += text;
    this.scheduleAnnounce();
  }

  finish(block, code, message, reason = "") {
    block.classList.remove("running");
    if (reason) block.dataset.reason = reason;
    const parts = [];
    if (code !== null && code !== undefined && code !== 0) parts.push(`${this.labels.exit} ${code}`);
    if (message) parts.push(message);
    if (parts.length) {
      this.note(block, parts.join(" · "), "console-exit");
      this.announce(parts.join(" · "));
    }
  }

  note(block, text, className) {
    const note = document.createElement("div");
    note.className = className;
    note.textContent = text;
    block.append(note);
    this.chars += text.length;
    this.scrollDown();
  }

  /** A new block at the bottom; the pane follows it (the student just typed it). */
  append(block, chars) {
    this.output.append(block);
    this.chars += chars;
    this.trim();
    this.scrollDown();
  }

  /** Keep the pane under `SCROLLBACK_CHARS`: drop the oldest finished runs, then cut the oldest text. */
  trim() {
    while (this.chars > SCROLLBACK_CHARS && this.output.children.length > 1) {
      const oldest = this.output.firstElementChild;
      if (oldest.classList.contains("running")) break;
      this.chars -= oldest.textContent.length;
      oldest.remove();
    }
    if (this.chars > SCROLLBACK_CHARS) {
      const pre = this.output.querySelector(".console-text");
      if (pre) {
        const excess = this.chars - SCROLLBACK_CHARS;
        const text = pre.textContent;
        pre.textContent = text.slice(Math.min(excess, text.length));
        this.chars -= Math.min(excess, text.length);
      }
    }
  }

  atBottom() {
    return this.output.scrollHeight - this.output.scrollTop - this.output.clientHeight < 40;
  }

  scrollDown() {
    this.output.scrollTop = this.output.scrollHeight;
  }

  clear() {
    for (const child of [...this.output.children]) if (!child.classList.contains("running")) child.remove();
    this.chars = this.output.textContent.length;
  }

  setState(text) {
    if (this.state) this.state.textContent = text;
  }

  updateStop() {
    if (this.stopButton) this.stopButton.disabled = this.runs.size === 0;
  }

  // -- the screen reader ---------------------------------------------------------------------------

  scheduleAnnounce() {
    if (this.announceTimer !== null) return;
    this.announceTimer = setTimeout(() => {
      this.announceTimer = null;
      const text = tail(this.unread);
      this.unread = "";
      if (text.trim()) this.announce(text);
    }, ANNOUNCE_MS);
  }

  announce(text) {
    if (this.announcer) this.announcer.textContent = text;
  }

  // -- keys and buttons ----------------------------------------------------------------------------

  bind() {
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit(this.input.value);
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "ArrowUp") {
        event.preventDefault();
        this.input.value = this.history.up(this.input.value);
      } else if (event.key === "ArrowDown") {
        event.preventDefault();
        this.input.value = this.history.down();
      }
    });
    this.root.addEventListener("keydown", (event) => {
      if (!event.ctrlKey || event.altKey || event.metaKey) return;
      const key = event.key.toLowerCase();
      if (key === "c" && !String(window.getSelection?.() ?? "") && this.runs.size) {
        event.preventDefault();
        this.stop();
      } else if (key === "l") {
        event.preventDefault();
        this.clear();
      }
    });
    this.stopButton?.addEventListener("click", () => this.stop());
    this.clearButton?.addEventListener("click", () => this.clear());
  }

  type(command) {
    this.input.value = command;
    this.input.focus();
  }

  run(command) {
    this.type(command);
    this.submit(command);
  }
}

/** The manifest editor's text, for `kubectl apply -f -` (editor.js's API, else its textarea). */
function editorText() {
  const editor = window.kubelabEditor;
  if (editor?.getValue) return editor.getValue();
  return document.getElementById("manifest-input")?.value ?? "";
}

/**
 * Mount the console on `root` (an element with data-console-url, from _console.html) and make it the
 * page's `window.kubelabConsole`. Returns it.
 */
export function start(root) {
  const mounted = new Console(root);
  window.kubelabConsole = {
    type: (command) => mounted.type(command),
    run: (command) => mounted.run(command),
    stop: () => mounted.stop(),
    focus: () => mounted.input.focus(),
  };
  return mounted;
}
