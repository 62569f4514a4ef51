// Runs bench/operators.py's run_all() inside Pyodide under Node.js and prints
// its timings as one JSON line.  node bench/run_in_pyodide.mjs RUNTIME REPO '{"repeat":5,"only":[]}'
import path from "node:path";
import { pathToFileURL } from "node:url";

const [runtimeDir, repoDir, optionsJSON] = process.argv.slice(2);
const options = JSON.parse(optionsJSON || "{}");
const { loadPyodide } = await import(pathToFileURL(path.join(runtimeDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: path.resolve(runtimeDir) + "/" });
await pyodide.loadPackage(["numpy"], { messageCallback: () => {} });
pyodide.FS.mkdirTree("/repo");
pyodide.mountNodeFS("/repo", path.resolve(repoDir));
pyodide.runPython("import sys; sys.path.insert(0, '/repo'); sys.path.insert(0, '/repo/bench')");
const bench = pyodide.pyimport("operators");
const timings = await bench.run_all(options.repeat || 5, options.only && options.only.length ? options.only : null);
console.log(JSON.stringify(timings.toJs({ dict_converter: Object.fromEntries })));
