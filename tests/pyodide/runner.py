"""Inside Pyodide: import a portable test module and run its test_* functions (awaiting coroutines)."""
import importlib
import inspect
import sys
import time
import traceback


async def run_module(name: str) -> list[dict]:
    module = importlib.import_module(name)
    results = []
    for attr, fn in sorted(vars(module).items()):
        if not attr.startswith("test_") or not callable(fn):
            continue
        started = time.perf_counter()
        try:
            value = fn()
            if inspect.isawaitable(value):
                await value
            outcome, detail = "passed", ""
        except Exception:  # noqa: BLE001
            outcome, detail = "failed", traceback.format_exc()
        results.append({"test": f"{name}::{attr}", "outcome": outcome, "detail": detail,
                        "seconds": round(time.perf_counter() - started, 4),
                        "platform": sys.platform})
    return results
