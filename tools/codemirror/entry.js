// The parts of CodeMirror 6 that static/courses/editor.js uses, re-exported from one module so that
// esbuild can bundle them (and only them, after tree shaking) into static/vendor/codemirror/codemirror.js.
// Add a name here, rebuild, and commit the new bundle when the editor needs more.

export { EditorState } from "@codemirror/state";
export {
  EditorView,
  drawSelection,
  highlightActiveLine,
  highlightActiveLineGutter,
  highlightSpecialChars,
  keymap,
  lineNumbers,
} from "@codemirror/view";
export { bracketMatching, defaultHighlightStyle, indentOnInput, indentUnit, syntaxHighlighting } from "@codemirror/language";
export { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
export { diagnosticCount, forEachDiagnostic, lintGutter, lintKeymap, setDiagnostics } from "@codemirror/lint";
export { yaml } from "@codemirror/lang-yaml";
