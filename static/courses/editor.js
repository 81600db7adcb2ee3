// The manifest editor: the form's plain `<textarea data-editor="yaml">` becomes a code editor
// (CodeMirror 6: line numbers, YAML highlighting, a gutter for error markers), and the API server's
// answer to a submission is drawn on the lines it is about.
//
// It is progressive enhancement. The textarea is the form's real field: the editor keeps it up to date
// on every change, so forms and htmx post it as they would without any script, and when the CodeMirror
// bundle (static/vendor/codemirror/, built once by tools/codemirror/) cannot load, the textarea simply
// stays and works. Someone else's script may also set the textarea's value and dispatch an `input`
// event on it (the field form does): the editor takes the new text.
//
// Diagnostics. After a submission htmx swaps the result into #manifest-result; the result carries
//   <script type="application/json" id="manifest-diagnostics">[{"line": 3, "column": 5, "message": "..."}]</script>
// with 1-based lines and columns in the whole text (across `---` documents). parseDiagnostics reads it,
// diagnosticRanges turns lines and columns into positions, and @codemirror/lint draws them: a marker in
// the gutter, an underline, and the message on hover. From the keyboard: the message of the line the
// cursor is on shows under the editor (a polite live region, so a screen reader says it), F8 moves to
// the next one and Ctrl/Cmd-Shift-M lists them all. The first edit after that clears them: they were
// about the text the server saw, not the one being typed.
//
// Keyboard: Tab indents (YAML is indentation); Escape then Tab moves the focus out of the editor, as
// CodeMirror does for every editor that takes Tab, and Ctrl-M (Shift-Alt-M on macOS) switches Tab
// between the two for good.
//
// The page gets `window.kubelabEditor = {focus(), setValue(text), getValue()}` for the manifest editor
// (the one whose textarea is #manifest-input, else the first): its "focus the editor" key and the steps'
// buttons that load a manifest use it. It works before the bundle has loaded, on the textarea.

/** Where the bundle is, next to this file once collected; a textarea's `data-editor-bundle` overrides it. */
const BUNDLE = new URL("../vendor/codemirror/codemirror.js", import.meta.url).href;

const SEVERITIES = new Set(["error", "warning", "info", "hint"]);

/**
 * The diagnostics in a result's JSON block, cleaned: `[{line, column, message, severity}]` with
 * 1-based whole-number lines (missing: 1), columns (missing: null, the whole line) and a message. A
 * block that is not a JSON list gives no diagnostics rather than an error: the result area still says
 * what happened in words.
 */
export function parseDiagnostics(jsonText) {
  let data;
  try {
    data = JSON.parse(jsonText || "[]");
  } catch {
    return [];
  }
  if (!Array.isArray(data)) return [];
  const positive = (value) => {
    const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
    return Number.isInteger(number) && number >= 1 ? number : null;
  };
  const result = [];
  for (const item of data) {
    if (!item || typeof item !== "object") continue;
    const message = typeof item.message === "string" ? item.message.trim() : "";
    if (!message) continue;
    result.push({
      line: positive(item.line) ?? 1,
      column: positive(item.column),
      message,
      severity: SEVERITIES.has(item.severity) ? item.severity : "error",
    });
  }
  return result;
}

/**
 * Each diagnostic's range in `text` (CodeMirror's `from`/`to` offsets): from its column to the end of
 * what the line holds, or the whole line's content when there is no column or the column is past it.
 * A line past the end of the text is the last line. The server counts columns in characters (Python's
 * code points); JavaScript strings count UTF-16 units, so a line with an emoji before the column is
 * counted character by character.
 */
export function diagnosticRanges(text, diagnostics) {
  const lines = String(text).split("\n");
  const starts = [];
  let offset = 0;
  for (const line of lines) {
    starts.push(offset);
    offset += line.length + 1;
  }
  return diagnostics.map((diagnostic) => {
    const index = Math.min(Math.max(diagnostic.line, 1), lines.length) - 1;
    const line = lines[index];
    const start = starts[index];
    const indent = line.length - line.trimStart().length;
    const end = line.trimEnd().length;
    let from = start + indent;
    if (diagnostic.column !== null && diagnostic.column !== undefined && diagnostic.line <= lines.length) {
      const at = [...line].slice(0, diagnostic.column - 1).join("").length;
      if (at < end) from = start + at;
    }
    const to = Math.max(from, start + end);
    return { from, to, severity: diagnostic.severity || "error", message: diagnostic.message };
  });
}

/** The editor's accessible name: the textarea's label, or its aria-label. */
export function labelFor(textarea) {
  const label = textarea.labels?.[0]?.textContent?.replace(/\s+/g, " ").trim();
  return label || textarea.getAttribute("aria-label") || "YAML manifest";
}

/** One manifest textarea, with or without CodeMirror on it. */
export class ManifestEditor {
  constructor(textarea) {
    this.textarea = textarea;
    this.view = null; // the CodeMirror view, once the bundle has loaded
    this.cm = null; // the bundle's exports
    this.diagnostics = []; // shown now (or waiting for the view)
    this.submitted = null; // the text of the last submission, to drop an answer about older text
    const form = textarea.form;
    if (form) {
      const remember = () => {
        this.submitted = this.getValue();
      };
      form.addEventListener("submit", remember);
      form.addEventListener("htmx:beforeRequest", remember);
      // A reset puts the textarea back to the page's text, after this event: follow it then.
      form.addEventListener("reset", () => setTimeout(() => this.followTextarea(), 0));
    }
    textarea.addEventListener("input", () => this.followTextarea());
    this.ready = Promise.resolve(this);
  }

  getValue() {
    return this.view ? this.view.state.doc.toString() : this.textarea.value;
  }

  /** Replace the whole text (undoable in the editor), clear the diagnostics, cursor at the start. */
  setValue(text) {
    const value = String(text);
    this.diagnostics = [];
    this.textarea.removeAttribute("aria-invalid");
    if (!this.view) {
      this.textarea.value = value;
      return;
    }
    const { setDiagnostics } = this.cm;
    const doc = this.view.state.doc;
    this.view.dispatch({
      changes: { from: 0, to: doc.length, insert: value },
      selection: { anchor: 0 },
      ...setDiagnostics(this.view.state, []),
    });
  }

  focus() {
    const target = this.view ? this.view.dom : this.textarea;
    target.scrollIntoView?.({ block: "nearest" });
    (this.view || this.textarea).focus();
  }

  /** Show `diagnostics` (parseDiagnostics' shape) on the text; an empty list clears them. */
  showDiagnostics(diagnostics) {
    this.diagnostics = diagnostics;
    if (diagnostics.length) this.textarea.setAttribute("aria-invalid", "true");
    else this.textarea.removeAttribute("aria-invalid");
    if (!this.view) return; // kept, and drawn when the view comes
    const { EditorView, setDiagnostics } = this.cm;
    const ranges = diagnosticRanges(this.view.state.doc.toString(), diagnostics);
    const spec = setDiagnostics(this.view.state, ranges);
    const effects = [...[spec.effects].flat().filter(Boolean)];
    if (ranges.length) effects.push(EditorView.scrollIntoView(ranges[0].from, { y: "nearest" }));
    this.view.dispatch({ effects });
    this.showStatus(this.view.state);
  }

  /** Under the editor: the message of a diagnostic on the cursor's line (the keyboard's "hover"). */
  showStatus(state) {
    if (!this.status) return;
    const line = state.doc.lineAt(state.selection.main.head).number;
    const messages = [];
    this.cm.forEachDiagnostic(state, (diagnostic, from) => {
      if (state.doc.lineAt(from).number === line) messages.push(diagnostic.message);
    });
    const text = messages.join(" ");
    if (this.status.textContent !== text) this.status.textContent = text;
  }

  clearDiagnostics() {
    this.showDiagnostics([]);
  }

  /** The textarea's value changed under us (a script, a form reset): take it into the editor. */
  followTextarea() {
    if (!this.view || this.textarea.value === this.view.state.doc.toString()) return;
    this.setValue(this.textarea.value);
  }

  /** Load the bundle and put CodeMirror over the textarea; on failure, the textarea stays as it is. */
  async upgrade(bundle = this.textarea.dataset.editorBundle || BUNDLE) {
    let cm;
    try {
      cm = await import(bundle);
    } catch (error) {
      console.warn("The code editor could not load; the plain text area stays.", error);
      return this;
    }
    if (this.view) return this;
    this.cm = cm;
    const textarea = this.textarea;
    const hadFocus = document.activeElement === textarea;
    const selection = { anchor: Math.min(textarea.selectionStart ?? 0, textarea.value.length) };
    const attributes = { "aria-label": labelFor(textarea) };
    const describedBy = textarea.getAttribute("aria-describedby");
    if (describedBy) attributes["aria-describedby"] = describedBy;

    const sync = cm.EditorView.updateListener.of((update) => {
      if (update.selectionSet || update.docChanged) this.showStatus(update.state);
      if (!update.docChanged) return;
      // The form posts the textarea: it always holds what the editor shows.
      textarea.value = update.state.doc.toString();
      if (this.diagnostics.length) {
        // The first edit makes the server's diagnostics stale (they were about the text it saw).
        this.diagnostics = [];
        textarea.removeAttribute("aria-invalid");
        queueMicrotask(() => {
          this.view?.dispatch(cm.setDiagnostics(this.view.state, []));
          if (this.status) this.status.textContent = "";
        });
      }
    });

    const state = cm.EditorState.create({
      doc: textarea.value,
      selection,
      extensions: [
        cm.lineNumbers(),
        cm.highlightActiveLineGutter(),
        cm.highlightSpecialChars(),
        cm.history(),
        cm.drawSelection(),
        cm.indentOnInput(),
        cm.syntaxHighlighting(cm.defaultHighlightStyle, { fallback: true }),
        cm.bracketMatching(),
        cm.highlightActiveLine(),
        cm.lintGutter(),
        cm.yaml(),
        cm.indentUnit.of("  "),
        cm.EditorState.tabSize.of(2),
        cm.keymap.of([...cm.defaultKeymap, ...cm.historyKeymap, ...cm.lintKeymap, cm.indentWithTab]),
        cm.EditorView.contentAttributes.of(attributes),
        sync,
      ],
    });

    const wrapper = document.createElement("div");
    wrapper.className = "kubelab-editor";
    textarea.after(wrapper);
    this.view = new cm.EditorView({ state, parent: wrapper });
    this.status = document.createElement("p");
    this.status.className = "kubelab-editor-status";
    this.status.setAttribute("aria-live", "polite");
    wrapper.append(this.status);
    // Hidden, the textarea is still the form's field (hidden fields are posted; disabled ones are not).
    // `required` would make the browser refuse to submit while pointing at a field nobody can see.
    textarea.hidden = true;
    textarea.removeAttribute("required");
    for (const label of textarea.labels || []) {
      label.addEventListener("click", (event) => {
        event.preventDefault();
        this.view.focus();
      });
    }
    if (hadFocus) this.view.focus();
    if (this.diagnostics.length) this.showDiagnostics(this.diagnostics);
    return this;
  }
}

const editors = new Map(); // textarea -> ManifestEditor

/** The editor that `window.kubelabEditor` drives: #manifest-input's, else the first one. */
function primary() {
  for (const editor of editors.values()) if (editor.textarea.id === "manifest-input" && editor.textarea.isConnected) return editor;
  for (const editor of editors.values()) if (editor.textarea.isConnected) return editor;
  return null;
}

/** A result's diagnostics block: which editor it is about (`data-for`, a textarea id) and its list. */
function takeDiagnostics(doc) {
  const block = doc.getElementById("manifest-diagnostics");
  if (!block || block.dataset.read) return null;
  block.dataset.read = "true";
  const owner = block.dataset.for ? doc.getElementById(block.dataset.for) : null;
  const editor = (owner && editors.get(owner)) || primary();
  return editor ? { editor, diagnostics: parseDiagnostics(block.textContent) } : null;
}

function applyDiagnostics(doc, target) {
  const found = takeDiagnostics(doc);
  if (found) {
    const { editor, diagnostics } = found;
    // An answer about text the student has changed since would point at the wrong lines.
    if (editor.submitted !== null && editor.submitted !== editor.getValue()) return;
    editor.showDiagnostics(diagnostics);
  } else if (target?.id === "manifest-result" || target?.querySelector?.("#manifest-result")) {
    primary()?.clearDiagnostics();
  }
}

let listening = false;

/**
 * Mount an editor on every `textarea[data-editor="yaml"]` under `root` (again after an htmx swap
 * brings new ones), set `window.kubelabEditor`, and start following htmx's result swaps. Returns the
 * editors; each one's `ready` promise resolves once CodeMirror is on it (or failed to load).
 */
export function start(root = document) {
  const doc = root.ownerDocument || root;
  const mounted = [];
  for (const textarea of root.querySelectorAll('textarea[data-editor="yaml"]')) {
    let editor = editors.get(textarea);
    if (!editor) {
      editor = new ManifestEditor(textarea);
      editors.set(textarea, editor);
      editor.ready = editor.upgrade();
    }
    mounted.push(editor);
  }
  for (const [textarea] of editors) if (!textarea.isConnected) editors.delete(textarea);
  window.kubelabEditor = {
    focus: () => primary()?.focus(),
    setValue: (text) => primary()?.setValue(text),
    getValue: () => primary()?.getValue() ?? "",
  };
  if (!listening) {
    listening = true;
    const onSwap = (event) => applyDiagnostics(doc, event.detail?.target);
    doc.addEventListener("htmx:afterSwap", onSwap);
    doc.addEventListener("htmx:oobAfterSwap", onSwap);
    // New content may bring a new form (a whole partial swapped in): mount its editor too.
    doc.addEventListener("htmx:load", (event) => {
      const node = event.target;
      if (node?.matches?.('textarea[data-editor="yaml"]')) start(node.parentElement || doc);
      else if (node?.querySelector?.('textarea[data-editor="yaml"]')) start(node);
    });
  }
  // A page rendered after a plain (non-htmx) submission already holds its result.
  applyDiagnostics(doc, null);
  return mounted;
}
