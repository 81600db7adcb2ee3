// The field form: for students who do not read YAML yet, a form for one object of a kind the first
// chapters use (Pod, Deployment, Service, ConfigMap, Secret, ServiceAccount, Role, RoleBinding). As
// they type, the YAML in the manifest editor beside it is rewritten, so they learn to read YAML by
// watching their fields land in it, and they submit that YAML with the form's buttons like everyone else.
//
//   inputs -> values -> fieldform/kinds.js (manifestFor, validate) -> fieldform/yaml.js (toYAML)
//          -> the manifest textarea (its value, then an `input` event; editor.js follows it)
//
// The form only writes once the student changes something in it, so a step's starting manifest stays
// until then. If the student then edits the YAML by hand, the form stops overwriting it and offers to
// rewrite it. CodeMirror's undo (Ctrl-Z) brings back what a rewrite replaced.
//
// The page provides (templates/courses/manifests/_form.html):
//
//   <div data-fieldform data-fieldform-for="manifest-input"      the manifest textarea's id (the default)
//        data-fieldform-kinds="ConfigMap Pod"                     optional: the kinds offered, in order
//        data-fieldform-kind="ConfigMap"></div>                   optional: the kind shown first
//   <script type="application/json" id="fieldform-labels">{...}</script>   optional translations (labels.js)
//
// Everything is built with DOM calls (textContent, never innerHTML), so nothing a student types can
// become markup. Inputs have no `name`, so they are never posted with the manifest form, and Enter in
// them does not submit it.

import { KIND_NAMES, KINDS, carryOver, emptyRow, errorMessage, manifestFor, validate } from "./fieldform/kinds.js";
import { formatLabel, labelsFrom } from "./fieldform/labels.js";
import { toYAML } from "./fieldform/yaml.js";

let forms = 0; // a prefix per form on the page, so that element ids never collide

/** Shift the touched paths of a group's rows after row `removed` was removed (`ports.3.x` -> `ports.2.x`). */
export function shiftPaths(paths, group, removed) {
  const result = new Set();
  for (const path of paths) {
    const match = path.match(/^([^.]+)\.(\d+)(\..*)?$/);
    if (!match || match[1] !== group) {
      result.add(path);
      continue;
    }
    const index = Number(match[2]);
    if (index === removed) continue;
    result.add(index > removed ? `${group}.${index - 1}${match[3] || ""}` : path);
  }
  return result;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "className") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children.filter(Boolean));
  return node;
}

export class FieldForm {
  constructor(root, { textarea, labels, kinds = KIND_NAMES, kind } = {}) {
    this.root = root;
    this.textarea = textarea;
    this.labels = labels || labelsFrom("{}");
    this.kinds = kinds.filter((name) => KINDS[name]);
    if (!this.kinds.length) this.kinds = [...KIND_NAMES];
    this.kind = this.kinds.includes(kind) ? kind : this.kinds[0];
    this.values = carryOver(this.kind, {});
    this.touched = new Set();
    this.showAll = false; // after a submission every problem shows, touched or not
    this.lastWritten = null; // the YAML the form last wrote, to notice hand edits
    this.prefix = `ff${++forms}`;
    this.inputs = new Map(); // path -> {control, error}
    this.render();
    root.addEventListener("keydown", (event) => {
      // Enter in a one-line input would submit the manifest form around it (implicit submission).
      if (event.key === "Enter" && event.target instanceof HTMLInputElement) event.preventDefault();
    });
    const form = textarea.form;
    if (form) {
      const reveal = () => {
        // Only when the YAML being submitted is the form's: a form nobody used has nothing to say.
        if (this.lastWritten === null || this.textarea.value !== this.lastWritten) return;
        this.showAll = true;
        this.showErrors(validate(this.kind, this.values));
      };
      form.addEventListener("submit", reveal);
      form.addEventListener("htmx:beforeRequest", reveal);
    }
  }

  t(key, params) {
    return formatLabel(this.labels, key, params);
  }

  id(path) {
    return `${this.prefix}-${path.replaceAll(".", "-")}`;
  }

  // -- drawing ------------------------------------------------------------------------------------

  render() {
    this.inputs.clear();
    const kindId = this.id("kind");
    const select = element("select", { id: kindId, "aria-describedby": `${kindId}-help` });
    for (const name of this.kinds) select.append(element("option", { value: name, text: name }));
    select.value = this.kind;
    select.addEventListener("change", () => this.switchKind(select.value));
    const kindField = element(
      "div",
      { className: "ff-field ff-kind" },
      element("label", { for: kindId, text: this.t("form.kind") }),
      select,
      element("p", { className: "ff-help", id: `${kindId}-help`, text: this.t("form.kindHelp") }),
    );

    const spec = KINDS[this.kind];
    const note = spec.note ? element("p", { className: "ff-note", text: this.t(spec.note) }) : null;
    const fields = element("div", { className: "ff-fields" });
    for (const field of spec.fields) fields.append(this.renderField(field, field.id, this.values, field.id));

    const rewrite = element("button", { type: "button", className: "ff-rewrite", text: this.t("form.rewrite") });
    rewrite.addEventListener("click", () => {
      this.lastWritten = null;
      this.update();
      // The button hides itself: the focus goes to the YAML it just rewrote.
      if (window.kubelabEditor) window.kubelabEditor.focus();
      else this.textarea.focus();
    });
    this.stale = element("div", { className: "ff-stale", role: "status" });
    this.staleBody = element("div", { hidden: true }, element("p", { text: this.t("form.handEdited") }), rewrite);
    this.stale.append(this.staleBody);

    this.root.replaceChildren(element("div", { className: "ff" }, kindField, note, fields, this.stale));
    this.showErrors(validate(this.kind, this.values));
  }

  /** One field: `holder[key]` is its value; `path` names it for errors and ids. */
  renderField(field, path, holder, key) {
    if (field.type === "pairs") return this.renderPairs(field, path, holder[key]);
    if (field.type === "rows") return this.renderRows(field, path, holder[key]);
    if (field.type === "choices") return this.renderChoices(field, path, holder, key);
    const id = this.id(path);
    const helpId = field.help ? `${id}-help` : null;
    const errorId = `${id}-error`;
    let control;
    if (field.type === "select") {
      control = element("select", { id });
      for (const option of field.options) control.append(element("option", { value: option, text: option }));
    } else if (field.multiline) {
      control = element("textarea", { id, rows: 3, spellcheck: "false" });
    } else {
      control = element("input", {
        id,
        type: "text",
        inputmode: field.type === "integer" ? "numeric" : null,
        autocomplete: "off",
        spellcheck: "false",
      });
    }
    if (field.required) control.setAttribute("aria-required", "true");
    control.setAttribute("aria-describedby", [helpId, errorId].filter(Boolean).join(" "));
    control.value = holder[key] ?? "";
    const changed = () => {
      holder[key] = control.value;
      this.touched.add(path);
      this.update();
    };
    control.addEventListener(field.type === "select" ? "change" : "input", changed);
    control.addEventListener("blur", () => {
      this.touched.add(path);
      this.showErrors(validate(this.kind, this.values));
    });
    const error = element("p", { className: "ff-error", id: errorId, hidden: true });
    this.inputs.set(path, { control, error });
    return element(
      "div",
      { className: `ff-field ff-${field.type}` },
      element("label", { for: id, text: this.t(field.label) }),
      control,
      helpId ? element("p", { className: "ff-help", id: helpId, text: this.t(field.help) }) : null,
      error,
    );
  }

  renderChoices(field, path, holder, key) {
    const id = this.id(path);
    const errorId = `${id}-error`;
    const box = element(
      "fieldset",
      { className: "ff-choices", id, "aria-describedby": errorId },
      element("legend", { text: this.t(field.label) }),
    );
    for (const option of field.options) {
      const optionId = `${id}-${option === "*" ? "all" : option}`;
      const checkbox = element("input", { type: "checkbox", id: optionId, value: option });
      checkbox.checked = (holder[key] || []).includes(option);
      checkbox.addEventListener("change", () => {
        // Kept in the options' order, whatever the order of the clicks.
        const checked = new Set([...box.querySelectorAll("input:checked")].map((input) => input.value));
        holder[key] = field.options.filter((name) => checked.has(name));
        this.touched.add(path);
        this.update();
      });
      const text = option === "*" ? this.t("verb.all") : option;
      box.append(element("span", { className: "ff-choice" }, checkbox, element("label", { for: optionId, text })));
    }
    const error = element("p", { className: "ff-error", id: errorId, hidden: true });
    box.append(error);
    this.inputs.set(path, { control: box, error });
    return box;
  }

  /** A group of rows (pairs or rows of fields) with an "add" button and a "remove" button per row. */
  renderGroup(field, path, rows, drawRow, newRow) {
    const id = this.id(path);
    const helpId = field.help ? `${id}-help` : null;
    const errorId = `${id}-error`;
    const group = element(
      "fieldset",
      { className: `ff-group ff-${field.type}`, id, "aria-describedby": [helpId, errorId].filter(Boolean).join(" ") },
      element("legend", { text: this.t(field.label) }),
      helpId ? element("p", { className: "ff-help", id: helpId, text: this.t(field.help) }) : null,
    );
    rows.forEach((row, index) => {
      const rowPath = `${path}.${index}`;
      const rowName = this.t(`row.${field.id}`, { n: index + 1 });
      const box = element("div", { className: "ff-row", role: "group", "aria-label": rowName });
      box.append(...drawRow(row, rowPath));
      const remove = element("button", {
        type: "button",
        className: "ff-remove",
        text: this.t("form.remove"),
        "aria-label": this.t("form.removeRow", { row: rowName }),
      });
      remove.addEventListener("click", () => {
        rows.splice(index, 1);
        this.touched = shiftPaths(this.touched, path, index);
        this.rerender(`${this.id(path)}-add`);
      });
      box.append(remove);
      group.append(box);
    });
    const add = element("button", { type: "button", className: "ff-add", id: `${id}-add`, text: this.t(`add.${field.id}`) });
    add.addEventListener("click", () => {
      rows.push(newRow());
      this.rerender(this.id(`${path}.${rows.length - 1}`), true);
    });
    const error = element("p", { className: "ff-error", id: errorId, hidden: true });
    group.append(add, error);
    this.inputs.set(path, { control: group, error });
    return group;
  }

  renderPairs(field, path, pairs) {
    const valueField = { id: "value", type: "text", label: "field.value", multiline: field.multiline };
    return this.renderGroup(
      field,
      path,
      pairs,
      (pair, rowPath) => [
        this.renderField({ id: "key", type: "text", label: "field.key" }, `${rowPath}.key`, pair, "key"),
        this.renderField(valueField, `${rowPath}.value`, pair, "value"),
      ],
      () => ({ key: "", value: "" }),
    );
  }

  renderRows(field, path, rows) {
    return this.renderGroup(
      field,
      path,
      rows,
      (row, rowPath) => field.fields.map((sub) => this.renderField(sub, `${rowPath}.${sub.id}`, row, sub.id)),
      () => emptyRow(field),
    );
  }

  /** Draw again (after a row came or went), then put the focus on `focusId` or the first input inside it. */
  rerender(focusId, inside = false) {
    this.render();
    this.update();
    const target = focusId && document.getElementById(inside ? `${focusId}-key` : focusId);
    const first = inside && !target ? this.root.querySelector(`[id^="${focusId}-"]:is(input, select, textarea)`) : null;
    (target || first)?.focus();
  }

  switchKind(kind) {
    if (!KINDS[kind] || kind === this.kind) return;
    this.values = carryOver(kind, this.values);
    this.kind = kind;
    this.touched = new Set();
    this.render();
    this.root.querySelector("select")?.focus();
    this.update();
  }

  // -- what the form says, and writes ---------------------------------------------------------------

  showErrors(errors) {
    const byPath = new Map();
    for (const error of errors) if (!byPath.has(error.path)) byPath.set(error.path, error);
    const format = (key, params) => this.t(key, params);
    for (const [path, { control, error }] of this.inputs) {
      const problem = byPath.get(path);
      const shown = problem && (this.showAll || this.touched.has(path) || [...this.touched].some((p) => p.startsWith(`${path}.`)));
      error.hidden = !shown;
      error.textContent = shown ? errorMessage(problem, format) : "";
      if (shown) control.setAttribute("aria-invalid", "true");
      else control.removeAttribute("aria-invalid");
    }
  }

  /** Validate, show the problems, and write the manifest into the editor (unless edited by hand). */
  update() {
    const errors = validate(this.kind, this.values);
    this.showErrors(errors);
    this.write(toYAML(manifestFor(this.kind, this.values)));
    return errors;
  }

  write(yaml) {
    const current = this.textarea.value;
    if (this.lastWritten !== null && current !== this.lastWritten && current !== yaml) {
      this.staleBody.hidden = false;
      return;
    }
    this.staleBody.hidden = true;
    if (current !== yaml) {
      this.textarea.value = yaml;
      // editor.js listens for this and puts the text into CodeMirror.
      this.textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }
    this.lastWritten = yaml;
  }
}

/** Mount a field form on every `[data-fieldform]` element of `doc`; returns the forms. */
export function start(doc = document) {
  const labels = labelsFrom(doc.getElementById("fieldform-labels")?.textContent);
  const mounted = [];
  for (const root of doc.querySelectorAll("[data-fieldform]")) {
    if (root.fieldForm) {
      mounted.push(root.fieldForm);
      continue;
    }
    const textarea = doc.getElementById(root.dataset.fieldformFor || "manifest-input");
    if (!textarea) continue;
    const kinds = (root.dataset.fieldformKinds || "").split(/[\s,]+/).filter((name) => KINDS[name]);
    root.fieldForm = new FieldForm(root, {
      textarea,
      labels,
      kinds: kinds.length ? kinds : KIND_NAMES,
      kind: root.dataset.fieldformKind,
    });
    mounted.push(root.fieldForm);
  }
  return mounted;
}
