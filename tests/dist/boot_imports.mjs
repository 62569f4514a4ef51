// What the polyfill's boot imports, for tests/dist/test_boot_imports.py: boots dist/'s
// runtime under Node as the shim boots it (loadPyodide() from the memory snapshot, numpy's
// extension modules linked, the wheels' files, extracted by the test into SITE_DIR, written
// into site-packages without loadPackage(), which would import Pyodide's installer), then
// runs CHECKS.py (Python, awaited; its last expression, a JSON string, is printed).
//
//     node tests/dist/boot_imports.mjs RUNTIME_DIR SITE_DIR CHECKS.py
import fs from "node:fs/promises";
import path from "node:path";

import { loadDistPyodide } from "../../tools/dist_pyodide.mjs";

const [runtimeDir, siteDir, checks] = process.argv.slice(2);
const snapshot = async (dir) => {
  const config = JSON.parse(await fs.readFile(path.join(dir, "runtime-config.json"), "utf8"));
  return new Uint8Array(await fs.readFile(path.join(dir, config.memorySnapshot.file)));
};
const { pyodide, config, runtimeURL } = await loadDistPyodide(runtimeDir, { _loadSnapshot: await snapshot(runtimeDir) });
for (const side of config.sideModules) {
  const module = await WebAssembly.compile(await fs.readFile(runtimeURL + side.file));
  const flags = { loadAsync: true, nodelete: true, allowUndefined: true };
  pyodide._module.preloadedWasm[side.path] = await pyodide._module.loadWebAssemblyModule(module, flags, side.path, {});
  pyodide.FS.mkdirTree(path.dirname(side.path));
  pyodide.FS.writeFile(side.path, new Uint8Array(0));
}
for (const entry of await fs.readdir(siteDir, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile()) continue;
  const file = path.join(entry.parentPath ?? entry.path, entry.name);
  const target = config.sitePackages + path.relative(siteDir, file);
  pyodide.FS.mkdirTree(path.dirname(target));
  pyodide.FS.writeFile(target, new Uint8Array(await fs.readFile(file)));
}
pyodide.globals.set("site_packages", config.sitePackages.slice(0, -1));
console.log(await pyodide.runPythonAsync(await fs.readFile(checks, "utf8")));
process.exit(0);
