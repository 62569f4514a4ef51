// The memory snapshot dist/ ships, for tools/build_dist.py: Python's memory right after
// loadPyodide() from dist/'s runtime, made under Node with Pyodide 0.27's experimental
// `_makeSnapshot` / `makeMemorySnapshot()`. A page restores it with `_loadSnapshot`
// instead of initialising the interpreter (js_shim/webnn-polyfill.js, startPyodide).
//
//     node tools/dist_snapshot.mjs RUNTIME_DIR OUT
//
// RUNTIME_DIR is dist/'s runtime folder being built (runtime-config.json names Pyodide's
// folder as indexURL; the trimmed, compiled standard library is there). Nothing but
// loadPyodide() runs before the snapshot: it cannot hold a package with a binary
// extension (numpy) in 0.27, and the shim links and loads those after restoring it.
// Run with an empty environment (build_dist does), so no variable of the build machine
// is in the snapshot's os.environ.
import fs from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [runtimeDir, out] = process.argv.slice(2);
if (!runtimeDir || !out) {
  console.error("usage: node tools/dist_snapshot.mjs RUNTIME_DIR OUT");
  process.exit(2);
}
const runtimeURL = path.resolve(runtimeDir) + "/";
const config = JSON.parse(await fs.readFile(runtimeURL + "runtime-config.json", "utf8"));
const indexURL = path.resolve(runtimeURL, config.indexURL) + "/";
const { loadPyodide } = await import(pathToFileURL(indexURL + "pyodide.mjs").href);
// The options the shim boots with; argv[0] as in a page (Emscripten's default, not this script)
const pyodide = await loadPyodide({
  indexURL, fullStdLib: false, lockFileURL: runtimeURL + "pyodide-lock.json", stdLibURL: runtimeURL + "python_stdlib.zip",
  _sysExecutable: "./this.program", args: [], _makeSnapshot: true,
});
await fs.writeFile(out, pyodide.makeMemorySnapshot());
process.exit(0);
