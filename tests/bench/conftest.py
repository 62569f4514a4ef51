"""tests/bench: the benchmark's models are correct, and the benchmark script runs end to end."""


def pytest_configure(config):
    config.addinivalue_line("markers", "bench_smoke: runs bench/webnn_bench.py --quick end to end "
                            "(headless Chromium; well under a minute)")
