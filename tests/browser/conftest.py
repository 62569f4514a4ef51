"""Which engines the browser tests run in: `--browser chromium|firefox|webkit|all`
(or a comma list; `./dev test tests/browser --browser firefox`; the option is
declared in tests/conftest.py so that it works from any starting folder), or
WEBNN_PY_BROWSERS. Default: all three — `./dev setup` installs them.

A test that takes `engine` (directly or through the module-scoped `browser`
fixture) runs once per selected engine, and each module starts one browser per
engine (a page boots Pyodide in 3-25 s; starting the browser is cheap beside it).
An engine that is not installed is skipped with the reason, except in CI, where
that is a failure (./dev setup must have installed it)."""
import os

import pytest

import browsers


def selected_engines(config) -> list[str]:
    value = config.getoption("--browser", default=None) or os.environ.get("WEBNN_PY_BROWSERS") or "all"
    engines = list(browsers.ENGINES) if value == "all" else [e.strip() for e in value.split(",") if e.strip()]
    unknown = [e for e in engines if e not in browsers.ENGINES]
    if unknown:
        raise pytest.UsageError(f"--browser: unknown engine(s) {', '.join(unknown)}; "
                                f"expected {', '.join(browsers.ENGINES)} or all")
    return engines


def pytest_generate_tests(metafunc):
    if "engine" in metafunc.fixturenames:
        metafunc.parametrize("engine", selected_engines(metafunc.config), scope="module")


def require(engine: str) -> None:
    """Skip (fail in CI) when `engine` is not installed."""
    reason = browsers.unavailable(engine)
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def browser(engine, pyodide_runtime):
    """One browser of `engine` for the whole module (pages are opened per test)."""
    require(engine)
    with browsers.launch(engine) as running:
        yield running
