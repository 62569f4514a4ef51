// loadPyodide() on a dist/ runtime folder under Node, with the options the shim boots it
// with (tools/dist_snapshot.mjs makes the snapshot this way; tests/dist/boot_imports.mjs
// restores it). RUNTIME_DIR is dist/'s runtime-<hash>/ folder: runtime-config.json names
// Pyodide's folder as indexURL; the trimmed, compiled standard library and the lock are here.
import fs from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";

export async function loadDistPyodide(runtimeDir, extraOptions = {}) {
  const runtimeURL = path.resolve(runtimeDir) + "/";
  const config = JSON.parse(await fs.readFile(runtimeURL + "runtime-config.json", "utf8"));
  const indexURL = path.resolve(runtimeURL, config.indexURL) + "/";
  const { loadPyodide } = await import(pathToFileURL(indexURL + "pyodide.mjs").href);
  // argv[0] as in a page (Emscripten's default, not the calling script)
  const pyodide = await loadPyodide({
    indexURL, fullStdLib: false, lockFileURL: runtimeURL + "pyodide-lock.json", stdLibURL: runtimeURL + "python_stdlib.zip",
    _sysExecutable: "./this.program", args: [], ...extraOptions,
  });
  return { pyodide, config, runtimeURL };
}
