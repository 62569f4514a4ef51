// The import log of the polyfill's Python, for tools/build_dist.py: which standard
// library modules and numpy modules dist/ has to ship. Run under Node:
//
//     node tools/dist_imports.mjs RUNTIME_DIR
//
// Boots Pyodide from RUNTIME_DIR (build/pyodide, or dist/'s runtime folder) the way the
// shim boots it (loadPyodide, dist/'s extension modules linked, then one loadPackage of numpy, webnn-py and numpy's bytecode, which
// imports Pyodide's own unpacking code), imports webnn_py.browser.bridge, then every
// module of webnn_py that runs in a page (all but the host-only serve and run_model)
// and every module those files import anywhere, at module level or inside a function
// (found by reading their syntax trees, so imports done lazily on first use count
// too; the sources read are the repository's webnn_py/, so the same check runs against
// dist/'s runtime, whose wheel holds bytecode only: tests/dist/test_trimmed_runtime.py),
// and numpy's lazily imported submodules they reach as `np.<name>`, and runs the standard
// library modules the boot defers (webnn_py/boot.py), so what they import ships. Prints
// {"modules": {name: file}} (every module then in sys.modules that came from a file)
// and {"failed": [...]} (imports that raised: a test asserts it is empty).
import path from "node:path";
import { pathToFileURL } from "node:url";

const [runtimeDir] = process.argv.slice(2);
if (!runtimeDir) {
  console.error("usage: node tools/dist_imports.mjs RUNTIME_DIR");
  process.exit(2);
}
const fs = await import("node:fs/promises");
const runtimeURL = path.resolve(runtimeDir) + "/";
const config = JSON.parse(await fs.readFile(runtimeURL + "runtime-config.json", "utf8"));
// dist/ keeps Pyodide's own files in a folder of their own (config.indexURL, relative)
const indexURL = config.indexURL && config.source !== "cdn" ? path.resolve(runtimeURL, config.indexURL) + "/" : runtimeURL;
const { loadPyodide } = await import(pathToFileURL(indexURL + "pyodide.mjs").href);
const pyodide = await loadPyodide({ indexURL, fullStdLib: false, lockFileURL: runtimeURL + "pyodide-lock.json",
                                    stdLibURL: runtimeURL + "python_stdlib.zip" });
// dist/'s extension modules, split out of the wheels, linked as the shim links them
// (js_shim/webnn-polyfill.js, linkSideModules): by Emscripten's linker, kept in preloadedWasm.
for (const side of config.sideModules || []) {
  const module = await WebAssembly.compile(await fs.readFile(runtimeURL + side.file));
  const flags = { loadAsync: true, nodelete: true, allowUndefined: true };
  pyodide._module.preloadedWasm[side.path] = await pyodide._module.loadWebAssemblyModule(module, flags, side.path, {});
  pyodide.FS.mkdirTree(path.dirname(side.path));
  pyodide.FS.writeFile(side.path, new Uint8Array(0));
}
const extra = config.numpyBytecode ? [runtimeURL + config.numpyBytecode] : [];
await pyodide.loadPackage(["numpy", "webnn-py", ...extra], { messageCallback: () => {} });
pyodide.FS.mkdirTree("/src");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS,
                 { root: path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "webnn_py") }, "/src");
// A graph computed end to end first: what runs only then (the SIMD kernels' wasm, read
// through importlib.resources) imports its modules too.
const computed = await pyodide.runPythonAsync(`
import numpy as np
import webnn_py

async def relu_difference_doubled():
    context = await webnn_py.ml.createContext()
    builder = webnn_py.MLGraphBuilder(context)
    desc = {"dataType": "float32", "shape": [2, 2]}
    a, b = builder.input("a", desc), builder.input("b", desc)
    two = builder.constant({"dataType": "float32", "shape": []}, np.array([2], np.float32))
    graph = await builder.build({"c": builder.mul(builder.relu(builder.sub(a, b)), two)})
    ta = await context.createTensor({**desc, "writable": True})
    tb = await context.createTensor({**desc, "writable": True})
    tc = await context.createTensor({**desc, "readable": True})
    context.writeTensor(ta, np.array([1.5, -2.0, 3.0, 0.25], np.float32))
    context.writeTensor(tb, np.array([0.5, 1.0, -1.0, 0.5], np.float32))
    context.dispatch(graph, {"a": ta, "b": tb}, {"c": tc})
    return np.frombuffer(await context.readTensor(tc), np.float32).tolist()

import webnn_py.kernels
result = await relu_difference_doubled()
# the page's fast path: the wasm kernels shipped in the wheel, loaded (not numpy's fallback)
result if webnn_py.kernels.available() is not None else "no wasm kernels"
`);
const expected = [2, 0, 8, 0];   // relu([1, -3, 4, -0.25]) * 2, by hand
const got = JSON.stringify(typeof computed === "string" ? computed : Array.from(computed.toJs()));
const graphFailure = got === JSON.stringify(expected) ? [] : [`a graph computed ${got}, expected ${JSON.stringify(expected)}`];
pyodide.globals.set("graph_failure", graphFailure);
const report = pyodide.runPython(`
import ast, importlib, json, pkgutil, re, sys
from pathlib import Path

import webnn_py.browser.bridge
import webnn_py
import numpy

HOST_ONLY = {"webnn_py.serve", "webnn_py.run_model"}
failed = list(graph_failure)

def load(name):
    try:
        importlib.import_module(name)
    except Exception as error:   # recorded: build_dist's test asserts there are none
        failed.append(f"{name}: {type(error).__name__}: {error}")

sources = []
for info in pkgutil.walk_packages(webnn_py.__path__, "webnn_py."):
    if info.name in HOST_ONLY or info.name.startswith(tuple(m + "." for m in HOST_ONLY)):
        continue
    load(info.name)
    module = sys.modules.get(info.name)
    if module is not None:
        sources.append((info.name, info.ispkg))

for name, is_package in sources:
    parts = name.split(".")[1:]
    source = Path("/src", *parts, "__init__.py") if is_package else Path("/src", *parts[:-1], parts[-1] + ".py")
    text = source.read_text(encoding="utf-8")
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                load(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \\
                if node.level else node.module
            load(base)
            for alias in node.names:   # "from package import submodule"
                if alias.name != "*" and importlib.util.find_spec(base) and \\
                        getattr(importlib.util.find_spec(base), "submodule_search_locations", None):
                    if importlib.util.find_spec(f"{base}.{alias.name}") is not None:
                        load(f"{base}.{alias.name}")
    for attribute in set(re.findall(r"\\bnp\\.([a-z_]+)\\b", text)):
        if importlib.util.find_spec(f"numpy.{attribute}") is not None:
            load(f"numpy.{attribute}")

# Standard-library modules the boot defers (webnn_py/boot.py) run at their first use: what
# they import then ships too.
import webnn_py.boot
for name in webnn_py.boot.deferred_modules():
    load(name)
    webnn_py.boot.load(sys.modules[name])

modules = {name: module.__file__ for name, module in sorted(sys.modules.items())
           if isinstance(getattr(module, "__file__", None), str)}
json.dumps({"modules": modules, "failed": failed})
`);
console.log(report);
process.exit(0);
