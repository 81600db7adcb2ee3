// A small YAML emitter for manifests: plain objects, arrays, strings, numbers, booleans and null, written
// in block style the way the Kubernetes documentation writes them:
//
//   apiVersion: v1
//   kind: ConfigMap
//   metadata:
//     name: game
//   data:
//     lives: "3"              <- a string that would read as a number is quoted
//     motd: |-                <- a multi-line string is a literal block, kept as typed
//       Welcome
//       to the game
//
// Why not a YAML library? The field form only ever writes these plain shapes, and the rule that matters
// is small enough to read: a string is written bare (a "plain scalar") only when every YAML parser reads
// it back as that same string; otherwise it is double-quoted with escapes. The server parses with
// PyYAML, which follows YAML 1.1, where `yes`, `no`, `on`, `off`, `y` and `n` are booleans, `1:30` is a
// number (base 60) and `2024-01-01` a date; YAML 1.2 parsers (kubectl's) differ on some of those.
// So the test here is deliberately wider than either spec: anything that starts like a number, any
// word a YAML version reads as a boolean or null, and anything with an indicator character where one
// could start a token is quoted. Quoting a string that did not need it is harmless; the reverse
// changes the student's manifest. tests/js/fieldform.test.mjs checks every rule, and reads the output
// back with PyYAML when Python is there.

/** Characters that start something other than a plain scalar when they come first (YAML 1.2 §5.3). */
const INDICATORS = new Set([..."-?:,[]{}#&*!|>'\"%@`"]);

/**
 * Words some YAML version resolves to a boolean, null or a special value (YAML 1.1's bool and null
 * types, 1.2's core schema, PyYAML's `=` value and `<<` merge keys). Compared case-insensitively,
 * which also covers spellings no spec lists: quoting them costs nothing.
 */
const RESERVED = new Set(["y", "yes", "n", "no", "true", "false", "on", "off", "null", "~", "=", "<<"]);

/**
 * The characters YAML allows in a document, as PyYAML's reader checks them (YAML 1.1 §5.1): tab, the
 * line breaks, printable ASCII, NEL, and the rest of Unicode except the surrogates, U+FFFE and U+FFFF.
 */
const PRINTABLE = /^[\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]*$/u;

/** Line breaks YAML 1.1 knows besides \n: a raw one inside a scalar would be read as a new line. */
const OTHER_BREAKS = /[\r\x85\u2028\u2029]/;

/** True when `text` can be written bare and reads back as the same string in YAML 1.1 and 1.2. */
export function isPlainSafe(text) {
  if (text === "" || text !== text.trim()) return false; // empty, or leading/trailing whitespace
  if (/[\n\t]/.test(text) || OTHER_BREAKS.test(text) || !PRINTABLE.test(text)) return false;
  if (text.includes("\ufeff")) return false; // a byte order mark is stripped by some readers
  const first = text[0];
  if (INDICATORS.has(first)) return false;
  if (/[0-9+.]/.test(first)) return false; // numbers, dates, times, .inf, .nan, +1 ...
  if (RESERVED.has(text.toLowerCase())) return false;
  if (text.includes(": ") || text.includes(" #") || text.endsWith(":")) return false;
  return true;
}

/** The escape YAML's double-quoted style uses for one character that cannot appear raw. */
function escapeCharacter(ch) {
  const named = {
    "\0": "\\0",
    "\x07": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
  }[ch];
  if (named) return named;
  const code = ch.codePointAt(0);
  if (code <= 0xff) return `\\x${code.toString(16).padStart(2, "0")}`;
  return `\\u${code.toString(16).padStart(4, "0")}`;
}

/** Printable characters that still cannot appear raw between double quotes. */
const RAW_EXCLUDED = new Set(['"', "\\", "\ufeff", "\u2028", "\u2029"]);

/**
 * `text` in double quotes. Quotes, backslashes, control characters, YAML's extra line breaks, the byte
 * order mark and anything YAML does not allow raw are escaped; everything else (accents, Chinese,
 * emoji) stays as typed, so the student can read it.
 */
export function doubleQuoted(text) {
  let out = '"';
  for (const ch of text) {
    // One code point at a time (for ... of), so an emoji is one character, not two surrogates.
    const raw = !RAW_EXCLUDED.has(ch) && /^[\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]$/u.test(ch);
    out += raw ? ch : escapeCharacter(ch);
  }
  return `${out}"`;
}

/**
 * How a multi-line string is written as a literal block (`|`), or null when it cannot be written as one
 * and stays the same string: a literal block keeps every character as typed, except that it cannot
 * hold carriage returns or other control characters, and trailing spaces on a line would be invisible.
 * The header's chomping indicator says what to do with the final line break: `|-` none, `|` one, `|+`
 * all of them. A first line that starts with a space needs an explicit indentation indicator (`|2-`),
 * or the parser would take its spaces for the block's indentation.
 */
export function literalBlock(text) {
  if (!text.includes("\n") || text.trim() === "") return null;
  if (OTHER_BREAKS.test(text) || !PRINTABLE.test(text) || text.includes("\ufeff")) return null;
  let body = text;
  let chomp = "-";
  if (body.endsWith("\n")) {
    body = body.slice(0, -1);
    chomp = "";
    if (body.endsWith("\n")) chomp = "+";
  }
  const lines = body.split("\n");
  if (chomp === "+") {
    // Keep chomping: the trailing empty lines are the extra breaks. Their count is what matters.
    while (lines.length && lines.at(-1) === "") lines.pop();
  }
  if (lines.some((line) => /[ \t]$/.test(line))) return null;
  // The first line with content decides the indentation a parser detects (YAML 1.2 §8.1.1.1).
  const firstContent = lines.find((line) => line !== "");
  const indicator = /^[ \t]/.test(firstContent) ? "2" : "";
  const extra = chomp === "+" ? text.match(/\n*$/)[0].length - 1 : 0;
  return { header: `|${indicator}${chomp}`, lines, trailingEmpty: extra };
}

/** A scalar as it appears after `key: ` or `- ` on one line (strings that need no block). */
export function scalar(value) {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`cannot write ${value} in a manifest`);
    // YAML 1.1 (PyYAML) reads an exponent only after a dot: 1e+21 would be a string, 1.0e+21 a float.
    return String(value).replace(/^(-?\d+)e/, "$1.0e");
  }
  if (typeof value === "bigint") return String(value);
  const text = String(value);
  return isPlainSafe(text) ? text : doubleQuoted(text);
}

function isMapping(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function isEmptyCollection(value) {
  return Array.isArray(value) ? value.length === 0 : isMapping(value) && Object.keys(value).length === 0;
}

/** The lines of a value that follows `prefix` (`key:`, `-` or `:`), nested lines indented from `indent`. */
function valueLines(prefix, value, indent) {
  if (Array.isArray(value) && value.length) {
    // Kubernetes' documentation writes a list under a key at the key's own indentation:
    //   containers:
    //   - name: web
    return [prefix, ...sequenceLines(value, indent)];
  }
  if (isMapping(value) && Object.keys(value).length) return [prefix, ...mappingLines(value, indent + 2)];
  if (isEmptyCollection(value)) return [`${prefix} ${Array.isArray(value) ? "[]" : "{}"}`];
  if (typeof value === "string") {
    const block = literalBlock(value);
    if (block) {
      const inner = " ".repeat(indent + 2);
      const lines = block.lines.map((line) => (line === "" ? "" : inner + line));
      return [`${prefix} ${block.header}`, ...lines, ...Array(block.trailingEmpty).fill("")];
    }
  }
  return [`${prefix} ${scalar(value)}`];
}

/** A mapping key: written like a string scalar, but never as a block (a key is one line). */
export function key(name) {
  const text = String(name);
  return isPlainSafe(text) ? text : doubleQuoted(text);
}

/**
 * YAML parsers look at most 1024 characters ahead for the `:` of a key (YAML 1.2 §7.4.2's "implicit
 * key"); a longer key is written in the explicit form, `? key` on one line and `: value` on the next.
 */
const IMPLICIT_KEY_LIMIT = 1000;

function mappingLines(object, indent) {
  const pad = " ".repeat(indent);
  const lines = [];
  for (const [name, value] of Object.entries(object)) {
    if (value === undefined) continue; // an absent field, as JSON.stringify leaves it out
    const written = key(name);
    if (written.length <= IMPLICIT_KEY_LIMIT) {
      lines.push(...valueLines(`${pad}${written}:`, value, indent));
    } else {
      // After an explicit `:` a list is indented like a mapping's, not at the `:`'s own column.
      const nested = Array.isArray(value) && value.length ? [`${pad}:`, ...sequenceLines(value, indent + 2)] : null;
      lines.push(`${pad}? ${written}`, ...(nested || valueLines(`${pad}:`, value, indent)));
    }
  }
  return lines;
}

function sequenceLines(items, indent) {
  const pad = " ".repeat(indent);
  const lines = [];
  for (const item of items) {
    if ((isMapping(item) && Object.keys(item).length) || (Array.isArray(item) && item.length)) {
      // The item's first line goes on the dash's line; the others line up under it.
      const inner = Array.isArray(item) ? sequenceLines(item, indent + 2) : mappingLines(item, indent + 2);
      lines.push(`${pad}- ${inner[0].slice(indent + 2)}`, ...inner.slice(1));
    } else {
      lines.push(...valueLines(`${pad}-`, item === undefined ? null : item, indent));
    }
  }
  return lines;
}

/** One YAML document for a mapping (a manifest), ending with a newline. */
export function toYAML(object) {
  if (!isMapping(object)) throw new TypeError("a manifest is a mapping");
  if (Object.keys(object).length === 0) return "{}\n";
  return `${mappingLines(object, 0).join("\n")}\n`;
}

/** Several manifests as one text, separated by `---` lines (what the form's editor accepts). */
export function toYAMLDocuments(objects) {
  return objects.map(toYAML).join("---\n");
}
