"""Chromium through Playwright now lives in the shared browser layer
(browsers/chromium.py); these names stay importable for existing callers."""
from browsers.chromium import HEADLESS_FLAGS, chromium_path, launch_chromium, launch_chromium_async

__all__ = ["HEADLESS_FLAGS", "chromium_path", "launch_chromium", "launch_chromium_async"]
