// Runs the portable tests (tests/portable) inside Pyodide under Node.js.
//
//   node tests/pyodide/run_portable.mjs RUNTIME_DIR REPO_DIR MODULE [MODULE ...]
//
// The repo is mounted read-only-in-spirit at /repo and put first on sys.path,
// so the current sources are tested; numpy comes from the verified runtime.
// Prints one JSON object per test on stdout: {"test", "outcome", "detail"}.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [runtimeDir, repoDir, ...modules] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(path.join(runtimeDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: path.resolve(runtimeDir) + "/" });
await pyodide.loadPackage(["numpy"], { messageCallback: () => {} });
pyodide.FS.mkdirTree("/repo");
pyodide.mountNodeFS("/repo", path.resolve(repoDir));
pyodide.runPython("import sys; sys.path.insert(0, '/repo')");
const runner = pyodide.pyimport("tests.pyodide.runner");
let failed = 0;
for (const name of modules) {
  const results = (await runner.run_module(name)).toJs({ dict_converter: Object.fromEntries });
  for (const r of results) {
    if (r.outcome !== "passed") failed += 1;
    console.log(JSON.stringify(r));
  }
}
process.exit(failed ? 1 : 0);
