// The topology's words in the reader's language: Django's JavaScript catalog, with English as the
// fallback.
//
// Django translates what the server writes (templates, Python) with the `django` catalogs; what a
// script writes comes from a second domain, `djangojs` (locale/<locale>/LC_MESSAGES/djangojs.po).
// The page loads `JavaScriptCatalog` (the `javascript-catalog` URL) before its modules: that classic
// script defines `globalThis.django` with `gettext`, `ngettext` and `pgettext` over the catalog of the
// page's language. These wrappers call them when they are there and otherwise return the English
// source text, with English plurals: so Node's unit tests (tests/js/), which have no catalog, and a
// page whose catalog failed to load read exactly as the English interface.
//
// `makemessages -d djangojs` (tools/i18n_check.py) finds the messages by these functions' names, so a
// message is always a string literal (or literals joined with `+`) in the call itself, never a
// variable. Values go in with `interpolate(gettext("… %(name)s …"), {name}, true)`, so a translation
// may put them in another order; counts use `ngettext`.
//
// The narration says hundreds of sentences a second: a module looks its messages up once, the first
// time it needs them (`lazy`), not once per event. Lazily rather than on import, so that importing a
// module needs no catalog and a test can install one before the first sentence.

/** The catalog's functions, when the page loaded `JavaScriptCatalog`. */
function catalog() {
  const django = globalThis.django;
  return django && typeof django.gettext === "function" ? django : null;
}

/** `msgid` in the page's language (the English `msgid` itself without a catalog or a translation). */
export function gettext(msgid) {
  const django = catalog();
  return django ? django.gettext(msgid) : msgid;
}

/** The singular or plural message for `count`, as the page's language counts (English: 1 is singular). */
export function ngettext(singular, plural, count) {
  const django = catalog();
  return django ? django.ngettext(singular, plural, count) : count === 1 ? singular : plural;
}

/** `msgid` in `context`, for the same English words that another language says differently. */
export function pgettext(context, msgid) {
  const django = catalog();
  return django && typeof django.pgettext === "function" ? django.pgettext(context, msgid) : msgid;
}

/**
 * Django's `interpolate`: `fmt` with each `%(name)s` replaced by `String(values[name])` (`named`), or
 * each `%s` by the next of the array `values`. A value that itself contains `%(name)s` is left as it
 * is. A named message is split at its placeholders once and kept (`compiled`), so filling it again is
 * a few string joins: the narration fills hundreds a second.
 */
export function interpolate(fmt, values, named = false) {
  if (!named) {
    let i = 0;
    return fmt.replace(/%s/g, () => String(values[i++]));
  }
  const parts = compiled(fmt);
  let text = parts[0];
  for (let i = 1; i < parts.length; i += 2) text += String(values[parts[i]]) + parts[i + 1];
  return text;
}

/** A message's text split at its `%(name)s`: `[text, name, text, name, text ...]`, made once per message. */
const COMPILED = new Map();
function compiled(fmt) {
  let parts = COMPILED.get(fmt);
  if (parts === undefined) {
    parts = fmt.split(/%\((\w+)\)s/);
    // Messages are few (the catalog's); a page that interpolates made-up strings must not grow this.
    if (COMPILED.size < 2000) COMPILED.set(fmt, parts);
  }
  return parts;
}

/**
 * `make()`, called the first time the returned function is, and its result kept: a module's messages,
 * looked up once. `const T = lazy(() => ({ paused: gettext("Paused") }))`, then `T().paused`.
 */
export function lazy(make) {
  let made = false;
  let value;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value;
  };
}

/**
 * `text` with its first letter in capitals: `the API server` -> `The API server`. Only for English-like
 * source words at the start of a sentence; a message that starts with a value gets it twice, as
 * `%(Name)s` (capitalised) and `%(name)s`, and each language's sentence uses the one it needs.
 */
export function capital(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}
