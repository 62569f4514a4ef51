"""The main job: open the demo page in headless Chromium and print what it computed.

Run through `./dev demo`, which sets everything up first.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wpt_runner.chromium import launch_chromium  # noqa: E402
from webnn_py.serve import PolyfillServer  # noqa: E402

DEMO_DIR = Path(__file__).resolve().parent


def main() -> int:
    with PolyfillServer(root=DEMO_DIR) as server, launch_chromium() as browser:
        page = browser.new_page()
        page.on("console", lambda msg: msg.type == "error" and print(f"[page] {msg.text}", file=sys.stderr))
        started = time.perf_counter()
        page.goto(f"{server.url}/index.html")
        outcome = page.evaluate("window.demoResult")
        elapsed = time.perf_counter() - started
        print(page.inner_text("#log"))
        print(f"page load to result: {elapsed:.2f} s")
        expected = [0.2 * a + 0.8 for a in (1, 2, 3, 4)]
        ok = all(abs(x - y) < 1e-6 for x, y in zip(outcome["result"], expected))
        print("demo OK" if ok else f"demo WRONG: expected {expected}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
