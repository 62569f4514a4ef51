"""Runs web-platform-tests (the webnn/ directory of a WPT checkout) in headless Chromium
against the webnn-py polyfill: `python -m wpt_runner run --wpt-root PATH [TEST_PATH ...]`.

Modules: meta (META lines), manifest (test discovery, URL naming), wrappers (the
generated .any/.window/.worker boilerplate), server (the checkout on loopback),
runner (Chromium via Playwright), results (statuses, wptreport, summary),
expectations (expected statuses), cli, chromium (the browser launcher).
"""
