"""Runs web-platform-tests in headless Chromium (issue: wpt_runner). For now: the browser launcher."""
