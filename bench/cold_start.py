"""Cold start of the polyfill in headless Chromium: navigation → createContext() resolved.

    .venv/bin/python bench/cold_start.py [--runs N]

Each run opens a page in a fresh browser context (its own empty HTTP cache, so every
asset is fetched again from the local server: build/pyodide and the polyfill) whose
only script includes webnn-polyfill.js and awaits navigator.ml.createContext().
Times are ms since navigation start (performance.now()). The phases come from the
shim's User Timing marks ("webnn-py:<phase>"): runtime-config.json fetched, pyodide.js
loaded, loadPyodide() (pyodide.asm.js/.wasm, python_stdlib.zip; or restored from dist/'s
memory snapshot) done, dist/'s extension modules linked (sideModules), loadPackage of
numpy and webnn-py done, `import webnn_py.browser.bridge` done, runtime ready; each
phase is shown as the time since the previous mark. Prints the median and min of each.
No assertion: numbers only, and noisy on a shared machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PAGE = """<!doctype html>
<meta charset="utf-8">
<title>cold start</title>
<script src="%(script)s"></script>
<script>
  self.result = navigator.ml.createContext().then(
    () => {
      const resolved = performance.now();
      const marks = {};
      for (const m of performance.getEntriesByType("mark")) {
        if (m.name.startsWith("webnn-py:")) marks[m.name.slice(9)] = m.startTime;
      }
      return { resolved, marks };
    },
    (e) => ({ error: String(e) }));
</script>
"""

PHASES = ["boot", "config", "pyodide.js", "loadPyodide", "sideModules", "packages", "import", "ready"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from webnn_py.serve import PolyfillServer
    from browsers.chromium import HEADLESS_FLAGS, chromium_path

    load_before = os.getloadavg()[0]
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "index.html").write_text(PAGE % {"script": "/webnn-polyfill.js"})
        with PolyfillServer(root=root) as server, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=HEADLESS_FLAGS)
            try:
                for i in range(args.runs):
                    context = browser.new_context()       # fresh cache and storage per run
                    page = context.new_page()
                    page.goto(f"{server.url}/index.html")
                    result = page.evaluate("self.result")
                    context.close()
                    if "error" in result:
                        raise SystemExit(f"run {i + 1}: createContext() rejected: {result['error']}")
                    runs.append(result)
                    print(f"run {i + 1}: createContext() resolved at {result['resolved']:.0f} ms",
                          file=sys.stderr, flush=True)
            finally:
                browser.close()

    rows: list[tuple[str, list[float]]] = []
    previous = None
    for phase in PHASES:
        if all(phase in r["marks"] for r in runs):
            if previous is None:
                values = [r["marks"][phase] for r in runs]
                label = f"navigation → {phase}"
            else:
                values = [r["marks"][phase] - r["marks"][previous] for r in runs]
                label = f"{previous} → {phase}"
            rows.append((label, values))
            previous = phase
    rows.append(("navigation → createContext() resolved", [r["resolved"] for r in runs]))
    print(f"{len(runs)} fresh browser contexts, ms (load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after)")
    print(f"{'phase':45} {'median':>8} {'min':>8}")
    for label, values in rows:
        print(f"{label:45} {statistics.median(values):8.0f} {min(values):8.0f}")


if __name__ == "__main__":
    main()
