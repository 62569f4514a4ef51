// Compile a tree of Python sources to bytecode with Pyodide's own CPython (3.12),
// for tools/setup_runtime.py: the host's Python is another version, and its .pyc
// files would be ignored by Pyodide. Run under Node:
//
//     node tools/compile_pyc.mjs PYODIDE_DIR SRC_DIR INSTALLED_DIR
//
// writes SRC_DIR/**/__pycache__/*.cpython-312.pyc. INSTALLED_DIR is where SRC_DIR
// ends up in Pyodide (site-packages), recorded as the code's file names, so
// tracebacks name the installed files. The pyc files are hash-based and checked:
// Python verifies each against its source's hash on import (zip extraction does
// not keep mtimes, so the default mtime-based pyc would always be recompiled).
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, srcDir, installedDir] = process.argv.slice(2);
if (!installedDir) {
  console.error("usage: node tools/compile_pyc.mjs PYODIDE_DIR SRC_DIR INSTALLED_DIR");
  process.exit(2);
}
const { loadPyodide } = await import(pathToFileURL(path.join(path.resolve(pyodideDir), "pyodide.mjs")).href);
const pyodide = await loadPyodide({ indexURL: path.resolve(pyodideDir) + "/", fullStdLib: false });
pyodide.FS.mkdirTree("/src");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: path.resolve(srcDir) }, "/src");
pyodide.globals.set("installed_dir", installedDir);
const ok = pyodide.runPython(`
import compileall, py_compile, sys
ok = compileall.compile_dir("/src", quiet=1, stripdir="/src", prependdir=installed_dir,
                            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
print(f"compiled with Python {sys.version.split()[0]}", file=sys.stderr)
ok
`);
process.exit(ok ? 0 : 1);
