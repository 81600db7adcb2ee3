// Builds static/vendor/codemirror/ from the pinned packages in node_modules (run `npm ci` first):
//
//   codemirror.js   entry.js and everything it imports, one minified ES module (no CDN, no build at run time)
//   licenses/       the LICENSE file of every package that ended up in the bundle
//   README.md       which versions, the bundle's sha256, and how to rebuild
//
// esbuild's output is deterministic: the same lock file gives the same bytes, so a rebuild that changes
// codemirror.js means a dependency changed.
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(here, "../../static/vendor/codemirror");
const bundle = join(out, "codemirror.js");

const result = await build({
  entryPoints: [join(here, "entry.js")],
  outfile: bundle,
  bundle: true,
  format: "esm",
  minify: true,
  target: ["es2020"],
  legalComments: "none", // the licenses are copied next to the bundle instead
  metafile: true,
  logLevel: "warning",
});

// The packages whose files esbuild put into the bundle: node_modules/<name>/... or node_modules/@scope/<name>/...
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (!match || packages.has(match[1])) continue;
  const root = join(here, "node_modules", match[1]);
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  packages.set(match[1], { root, version: manifest.version, license: manifest.license });
}
const names = [...packages.keys()].sort();

rmSync(join(out, "licenses"), { recursive: true, force: true });
mkdirSync(join(out, "licenses"), { recursive: true });
for (const name of names) {
  const file = name.replace("@", "").replace("/", "-") + ".LICENSE";
  copyFileSync(join(packages.get(name).root, "LICENSE"), join(out, "licenses", file));
}

const sha256 = createHash("sha256").update(readFileSync(bundle)).digest("hex");
const size = readFileSync(bundle).length;
const tool = JSON.parse(readFileSync(join(here, "node_modules/esbuild/package.json"), "utf8")).version;
const rows = names.map((name) => {
  const { version, license } = packages.get(name);
  return `| \`${name}\` | ${version} | ${license} | \`licenses/${name.replace("@", "").replace("/", "-")}.LICENSE\` |`;
});
writeFileSync(
  join(out, "README.md"),
  `# CodeMirror 6 (vendored, built once)

\`codemirror.js\` is CodeMirror 6 with its YAML language, bundled by esbuild ${tool} into one minified ES
module (${Math.round(size / 1024)} KiB) from the pinned packages of \`tools/codemirror/\` (\`package.json\` pins the
direct ones exactly, \`package-lock.json\` every one). It exports only what \`tools/codemirror/entry.js\`
re-exports; \`static/courses/editor.js\` imports it when it mounts an editor. Nothing is fetched from a CDN
and nothing is built when the lab starts: this file is committed.

sha256 of \`codemirror.js\`: \`${sha256}\`

| package | version | license | license file |
| --- | --- | --- | --- |
${rows.join("\n")}

To rebuild (after changing \`entry.js\` or upgrading a pin with \`npm install --save-exact <pkg>@<version>\`):

    cd tools/codemirror && npm ci && npm run build

The build rewrites this README, \`codemirror.js\` and \`licenses/\`; commit all three with the lock file.
The same lock file gives the same bytes (esbuild is deterministic), so the checksum above should not change
on a rebuild that changes nothing.
`,
);
console.log(`codemirror.js: ${size} bytes, sha256 ${sha256}, ${names.length} packages`);
