// The memory snapshot dist/ ships, for tools/build_dist.py: Python's memory right after
// loadPyodide() from dist/'s runtime, made under Node with Pyodide 0.27's experimental
// `_makeSnapshot` / `makeMemorySnapshot()`. A page restores it with `_loadSnapshot`
// instead of initialising the interpreter (js_shim/webnn-polyfill.js, startPyodide).
//
//     node tools/dist_snapshot.mjs RUNTIME_DIR OUT
//
// RUNTIME_DIR is dist/'s runtime folder being built (runtime-config.json names Pyodide's
// folder as indexURL; the trimmed, compiled standard library is there). Nothing but
// loadPyodide() and the import of BOOT_STDLIB runs before the snapshot: it cannot hold a
// package with a binary extension (numpy) in 0.27, and the shim links and loads those
// after restoring it.
// Run with an empty environment (build_dist does), so no variable of the build machine
// is in the snapshot's os.environ.
import fs from "node:fs/promises";

import { loadDistPyodide } from "./dist_pyodide.mjs";

const [runtimeDir, out] = process.argv.slice(2);
if (!runtimeDir || !out) {
  console.error("usage: node tools/dist_snapshot.mjs RUNTIME_DIR OUT");
  process.exit(2);
}
const { pyodide } = await loadDistPyodide(runtimeDir, { _makeSnapshot: true });
// The standard-library modules the boot imports that loadPyodide() has not (numpy's import:
// datetime, numbers; the bindings: decimal; `from __future__ import annotations`), less what
// it defers (webnn_py/boot.py): imported here, they are in the snapshot, and a page restoring
// it does not read, unmarshal and run them again (tests/dist/test_boot_imports.py fails when
// the boot imports another one). Pure Python or built into Pyodide's main module: nothing a
// snapshot cannot hold.
const BOOT_STDLIB = ["__future__", "datetime", "decimal", "numbers"];
pyodide.runPython(`import ${BOOT_STDLIB.join(", ")}`);
await fs.writeFile(out, pyodide.makeMemorySnapshot());
process.exit(0);
