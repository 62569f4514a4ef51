"""Expectation files: which statuses a run may produce without failing.

Format (JSON, one object; documented in wpt_runner/README.md):

    {
      "/webnn/add.any.html?gpu": "ERROR",
      "/webnn/conv2d.any.html?cpu": {
        "status": "OK",
        "subtests": {"[required] conv2d float16 4D input": "FAIL",
                     "*int4*": ["PASS", "FAIL"]}
      },
      "/webnn/conformance_tests/*?npu": "SKIP",
      "_comment": "keys not starting with / are ignored"
    }

A key is a test ID (URL path plus variant) or an fnmatch pattern over test IDs;
subtest keys are names or patterns. A value is one status or a list of
acceptable ones (the first is reported as "expected"). Anything not listed is
expected to be OK (harness) and PASS (subtests). "SKIP" means: do not run it.
Exact keys win over patterns; among patterns, the first in the file wins.
"""
from __future__ import annotations

import fnmatch
import json
from pathlib import Path

from .results import SUBTEST_STATUSES, TEST_STATUSES, TestResult


class ExpectationError(ValueError):
    pass


def _statuses(value, allowed: list[str], where: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise ExpectationError(f"{where}: expected a status or a non-empty list of statuses, got {value!r}")
    for item in items:
        if item not in allowed:
            raise ExpectationError(f"{where}: unknown status {item!r} (one of {', '.join(allowed)})")
    return list(items)


class Expectations:
    def __init__(self, entries: dict[str, dict] | None = None):
        # key -> {"status": [..] | None, "subtests": {name-or-pattern: [..]}}
        self.entries = entries or {}

    @classmethod
    def load(cls, path: str | Path) -> "Expectations":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ExpectationError(f"{path}: not valid JSON: {error}") from None
        if not isinstance(data, dict):
            raise ExpectationError(f"{path}: the top level must be an object mapping test IDs to expectations")
        entries = {}
        for key, value in data.items():
            if not key.startswith("/"):
                continue
            where = f"{path}: {key}"
            if isinstance(value, (str, list)):
                entries[key] = {"status": _statuses(value, TEST_STATUSES, where), "subtests": {}}
            elif isinstance(value, dict):
                unknown = set(value) - {"status", "subtests"}
                if unknown:
                    raise ExpectationError(f"{where}: unknown field(s) {sorted(unknown)}")
                subtests = value.get("subtests") or {}
                if not isinstance(subtests, dict):
                    raise ExpectationError(f"{where}: subtests must be an object")
                entries[key] = {
                    "status": _statuses(value["status"], TEST_STATUSES, where) if "status" in value else None,
                    "subtests": {name: _statuses(v, SUBTEST_STATUSES, f"{where}: {name}") for name, v in subtests.items()},
                }
            else:
                raise ExpectationError(f"{where}: expected a status, a list or an object")
        return cls(entries)

    def _matching(self, test: str) -> list[dict]:
        exact = [self.entries[test]] if test in self.entries else []
        patterns = [v for k, v in self.entries.items() if k != test and _is_pattern(k) and fnmatch.fnmatchcase(test, k)]
        return exact + patterns

    def test_status(self, test: str) -> list[str]:
        for entry in self._matching(test):
            if entry["status"]:
                return entry["status"]
        return ["OK"]

    def subtest_status(self, test: str, name: str) -> list[str]:
        entries = self._matching(test)
        for entry in entries:
            if name in entry["subtests"]:
                return entry["subtests"][name]
        for entry in entries:
            for pattern, statuses in entry["subtests"].items():
                if _is_pattern(pattern) and fnmatch.fnmatchcase(name, pattern):
                    return statuses
        return ["PASS"]

    def skipped(self, test: str) -> bool:
        return "SKIP" in self.test_status(test)

    def apply(self, result: TestResult) -> None:
        result.expected = self.test_status(result.test)
        for subtest in result.subtests:
            subtest.expected = self.subtest_status(result.test, subtest.name)


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def from_results(results: list[TestResult]) -> dict:
    """An expectations object that accepts exactly what this run produced (a baseline)."""
    data: dict[str, object] = {}
    for result in results:
        subtests = {s.name: s.status for s in result.subtests if s.status != "PASS"}
        if result.status == "OK" and not subtests:
            continue
        if not subtests:
            data[result.test] = result.status
        else:
            data[result.test] = {"status": result.status, "subtests": subtests}
    return data
