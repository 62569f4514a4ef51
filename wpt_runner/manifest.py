"""Which test URLs a WPT tree holds: discovery of test files and their expansion into URLs.

One source file can be many tests: an `.any.js` file is one test per global
scope its `global=` line names, times one per `variant=` line. The URL naming
follows WPT's, so test IDs in our reports match the ones other tools use.
The selection can be split into chunks for CI matrices (select_chunk).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from .meta import Meta, parse_html_meta, parse_js_meta

# The scopes of `// META: global=` and the URL suffix (replacing `.js`) each gets.
ANY_SCOPES = {
    "window": ".html",
    "dedicatedworker": ".worker.html",
    "dedicatedworker-module": ".worker-module.html",
    "sharedworker": ".sharedworker.html",
    "sharedworker-module": ".sharedworker-module.html",
    "serviceworker": ".serviceworker.html",
    "serviceworker-module": ".serviceworker-module.html",
}
# Group names WPT accepts on a global= line.
SCOPE_GROUPS = {
    "default": ["window", "dedicatedworker"],
    "worker": ["dedicatedworker", "sharedworker", "serviceworker"],
    "worker-module": ["dedicatedworker-module", "sharedworker-module", "serviceworker-module"],
}
DEFAULT_SCOPES = SCOPE_GROUPS["default"]
# What --global accepts: each scope, and "worker" for the three classic ones.
CLI_GLOBALS = sorted(ANY_SCOPES) + ["worker"]

TIMEOUTS = {"normal": 10.0, "long": 60.0}
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".xht")
# Directories that hold helpers, never tests (as in WPT's manifest).
SUPPORT_DIRS = {"resources", "support", "tools", ".git", "node_modules", "__pycache__"}


@dataclasses.dataclass(frozen=True)
class TestItem:
    __test__ = False   # a name pytest would otherwise try to collect
    url: str            # the test ID: absolute path plus variant, e.g. /webnn/add.any.worker.html?cpu
    scope: str          # window, dedicatedworker, sharedworker, serviceworker (or a -module form)
    timeout: str        # "normal" or "long"
    source: str         # the file it came from, relative to the web root
    title: str | None = None

    @property
    def timeout_seconds(self) -> float:
        return TIMEOUTS[self.timeout]

    @property
    def directory(self) -> str:
        return self.url.split("?", 1)[0].split("#", 1)[0].rsplit("/", 1)[0] + "/"


def expand_scopes(value: str | None) -> tuple[list[str], list[str]]:
    """A `global=` value as (scopes we run, scopes we recognise but cannot run).

    Items may be groups (`worker`, `default`), and `-name` removes a scope again;
    shadowrealm and jsshell scopes are listed as unsupported rather than dropped silently.
    """
    if value is None or not value.strip():
        return list(DEFAULT_SCOPES), []
    chosen: list[str] = []
    removed: set[str] = set()
    unsupported: list[str] = []
    for raw in value.split(","):
        item = raw.strip()
        if not item:
            continue
        negate = item[0] in "-!"
        item = item.lstrip("-!")
        names = SCOPE_GROUPS.get(item, [item])
        for name in names:
            if name not in ANY_SCOPES:
                if not negate and name not in unsupported:
                    unsupported.append(name)
                continue
            if negate:
                removed.add(name)
            elif name not in chosen:
                chosen.append(name)
    return [s for s in chosen if s not in removed], unsupported


def normalize_cli_globals(values: list[str] | None) -> set[str] | None:
    if not values:
        return None
    result: set[str] = set()
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if item:
                result.update(SCOPE_GROUPS.get(item, [item]))
    return result


@dataclasses.dataclass
class Discovery:
    tests: list[TestItem]
    skipped: list[tuple[str, str]]    # (source, reason): what exists but will not run


def _relative_url(root: Path, path: Path) -> str:
    return "/" + path.relative_to(root).as_posix()


def is_support_path(relative: str) -> bool:
    return any(part in SUPPORT_DIRS for part in relative.strip("/").split("/")[:-1])


def tests_for_file(root: Path, path: Path, skipped: list[tuple[str, str]] | None = None) -> list[TestItem]:
    """The test URLs one source file yields (none for helpers and non-tests)."""
    url = _relative_url(root, path)
    name = path.name
    if name.startswith((".", "_")) or "-manual." in name or "-ref." in name:
        return []
    skipped = skipped if skipped is not None else []
    if name.endswith(".any.js"):
        meta = _read_js_meta(path)
        scopes, unsupported = expand_scopes(meta.globals)
        for scope in unsupported:
            skipped.append((url, f"global={scope} is not supported by this runner"))
        base = url[: -len(".js")]
        return [TestItem(base + ANY_SCOPES[scope] + variant, scope, meta.timeout, url, meta.title)
                for scope in scopes for variant in meta.variant_suffixes()]
    if name.endswith(".window.js"):
        meta = _read_js_meta(path)
        base = url[: -len(".js")]
        return [TestItem(base + ".html" + v, "window", meta.timeout, url, meta.title) for v in meta.variant_suffixes()]
    if name.endswith(".worker.js"):
        meta = _read_js_meta(path)
        base = url[: -len(".js")]
        return [TestItem(base + ".html" + v, "dedicatedworker", meta.timeout, url, meta.title)
                for v in meta.variant_suffixes()]
    if name.endswith(HTML_SUFFIXES):
        # A generated wrapper's name on disk would shadow the wrapper; WPT forbids it, so do we.
        if any(name.endswith(".any" + s) for s in set(ANY_SCOPES.values())) or name.endswith((".window.html", ".worker.html")):
            return []
        try:
            source = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        meta, uses_testharness = parse_html_meta(source)
        if not uses_testharness:
            return []   # reftests, manual tests and helper pages are not testharness tests
        return [TestItem(url + v, "window", meta.timeout, url, meta.title) for v in meta.variant_suffixes()]
    return []


def _read_js_meta(path: Path) -> Meta:
    # META lines sit at the top; reading a bounded prefix keeps 100 KB data files cheap.
    with path.open(encoding="utf-8", errors="replace") as f:
        return parse_js_meta(f.read(16384))


def discover(root: Path, test_paths: list[str], globals_filter: set[str] | None = None) -> Discovery:
    root = root.resolve()
    found: dict[str, TestItem] = {}
    skipped: list[tuple[str, str]] = []
    for test_path in test_paths or ["webnn/"]:
        relative = test_path.split("?", 1)[0].lstrip("/")
        query = test_path[len(test_path.split("?", 1)[0]):]
        target = (root / relative).resolve()
        if target != root and root not in target.parents:
            raise ValueError(f"{test_path}: outside the WPT root {root}")
        files: list[Path]
        if target.is_dir():
            files = []
            for dirpath, dirnames, filenames in os.walk(target):
                dirnames[:] = sorted(d for d in dirnames if d not in SUPPORT_DIRS and not d.startswith("."))
                files.extend(Path(dirpath) / f for f in sorted(filenames))
        elif target.is_file():
            files = [target]
        else:
            # A test URL (e.g. /webnn/x.any.worker.html?cpu) names a generated test: find its source.
            items = _items_for_url(root, "/" + relative, skipped)
            items = [i for i in items if not query or i.url == "/" + relative + query]
            if not items:
                raise ValueError(f"{test_path}: no such file or test under {root}")
            for item in items:
                found.setdefault(item.url, item)
            continue
        for path in files:
            for item in tests_for_file(root, path, skipped):
                if query and item.url != _relative_url(root, path) and not item.url.endswith(query):
                    continue
                found.setdefault(item.url, item)
    tests = [t for t in found.values() if globals_filter is None or t.scope in globals_filter]
    return Discovery(sorted(tests, key=lambda t: t.url), skipped)


def _items_for_url(root: Path, url_path: str, skipped: list) -> list[TestItem]:
    """Tests whose URL path is `url_path`, found through the source file it was generated from."""
    candidates = []
    for suffix in set(ANY_SCOPES.values()):
        if url_path.endswith(".any" + suffix):
            candidates.append(url_path[: -len(suffix)] + ".js")
    for kind in (".window.html", ".worker.html"):
        if url_path.endswith(kind):
            candidates.append(url_path[: -len(".html")] + ".js")
    items = []
    for candidate in candidates:
        path = root / candidate.lstrip("/")
        if path.is_file():
            items.extend(i for i in tests_for_file(root, path, skipped) if i.url.split("?")[0].split("#")[0] == url_path)
    return items


# -- chunks (--total-chunks N --this-chunk K, wptrunner's names) ------------------------------

CHUNK_TYPES = ("hash", "round-robin")


def chunk_of(test_id: str, total_chunks: int) -> int:
    """The 1-based chunk a test ID belongs to under the "hash" partition: the first 8
    bytes of its MD5, modulo N. It depends on the ID alone, so every machine of a CI
    matrix computes the same partition from any listing, and adding or removing a test
    moves no other test between chunks (round-robin would shift every test after it)."""
    digest = hashlib.md5(test_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % total_chunks + 1


def select_chunk(tests: list[TestItem], total_chunks: int, this_chunk: int, chunk_type: str = "hash") -> list[TestItem]:
    """The tests of chunk `this_chunk` (1-based) of `total_chunks`. Every test is in exactly
    one chunk. "hash": chunk_of(test ID). "round-robin": the i-th test ID in sorted order
    goes to chunk i mod N + 1 (sizes differ by at most one, but the partition depends on
    the whole selection)."""
    if total_chunks < 1 or not 1 <= this_chunk <= total_chunks:
        raise ValueError(f"--this-chunk {this_chunk} must be between 1 and --total-chunks {total_chunks}")
    if chunk_type == "hash":
        return [t for t in tests if chunk_of(t.url, total_chunks) == this_chunk]
    if chunk_type == "round-robin":
        ordered = sorted(tests, key=lambda t: t.url)
        return [t for index, t in enumerate(ordered) if index % total_chunks == this_chunk - 1]
    raise ValueError(f"unknown --chunk-type {chunk_type!r} (one of {', '.join(CHUNK_TYPES)})")
