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
      "/webnn/validation_tests/pad.https.any.html?cpu": {
        "subtests": {"[pad] Throw if building pad for scalar input.":
                     {"status": "FAIL", "reason": "§8.9.36: rank N and step 3 accept a 0-D input"}}
      },
      "_comment": "keys not starting with / are ignored"
    }

A key is a test ID (URL path plus variant) or an fnmatch pattern over test IDs;
subtest keys are names or patterns. A value is one status or a list of
acceptable ones (the first is reported as "expected"), or an object with
"status" and a "reason" (free text: why this result is expected). Anything not
listed is expected to be OK (harness) and PASS (subtests). "SKIP" means: do not
run it. Exact keys win over patterns; among patterns, the first in the file wins.
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


def _reason(value: dict, where: str) -> str | None:
    reason = value.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ExpectationError(f"{where}: reason must be a string")
    return reason


def _subtest_statuses(value, where: str) -> list[str]:
    """A subtest's expectation: a status, a list of them, or {"status": ..., "reason": "..."}."""
    if isinstance(value, dict):
        unknown = set(value) - {"status", "reason"}
        if unknown or "status" not in value:
            raise ExpectationError(f"{where}: a subtest object needs \"status\" (and may give \"reason\"), "
                                   f"got fields {sorted(value)}")
        _reason(value, where)
        value = value["status"]
    return _statuses(value, SUBTEST_STATUSES, where)


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
                entries[key] = {"status": _statuses(value, TEST_STATUSES, where), "subtests": {}, "reason": None}
            elif isinstance(value, dict):
                unknown = set(value) - {"status", "subtests", "reason"}
                if unknown:
                    raise ExpectationError(f"{where}: unknown field(s) {sorted(unknown)}")
                subtests = value.get("subtests") or {}
                if not isinstance(subtests, dict):
                    raise ExpectationError(f"{where}: subtests must be an object")
                entries[key] = {
                    "status": _statuses(value["status"], TEST_STATUSES, where) if "status" in value else None,
                    "subtests": {name: _subtest_statuses(v, f"{where}: {name}") for name, v in subtests.items()},
                    "reason": _reason(value, where),
                }
            else:
                raise ExpectationError(f"{where}: expected a status, a list or an object")
        return cls(entries)

    @classmethod
    def load_all(cls, paths: list[str | Path]) -> "Expectations":
        """The files layered in order: a later file's entry for a key replaces the
        earlier one's harness status and reason where it gives them, and its subtests
        override by name; a later file's patterns are tried before an earlier one's."""
        merged: dict[str, dict] = {}
        for path in paths:
            layer = cls.load(path).entries
            for key, entry in merged.items():
                if key not in layer:
                    layer[key] = entry
                    continue
                over = layer[key]
                layer[key] = {"status": over["status"] or entry["status"],
                              "subtests": {**entry["subtests"], **over["subtests"]},
                              "reason": over["reason"] or entry["reason"]}
            merged = layer
        return cls(merged)

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
    """An expectations object that accepts exactly what the run produced (a baseline).
    A test ID may appear several times (--repeat): a result that differed between runs
    becomes the list of every status seen, in order of first appearance."""
    statuses: dict[str, list[str]] = {}
    subtests: dict[str, dict[str, list[str]]] = {}
    runs: dict[str, int] = {}
    for result in results:
        runs[result.test] = runs.get(result.test, 0) + 1
        _add(statuses.setdefault(result.test, []), result.status)
        seen = subtests.setdefault(result.test, {})
        for subtest in result.subtests:
            _add(seen.setdefault(subtest.name, []), subtest.status)
    data: dict[str, object] = {}
    for test, test_statuses in statuses.items():
        not_passing = {name: _one_or_list(found) for name, found in subtests[test].items()
                       if found != ["PASS"]}
        if test_statuses == ["OK"] and not not_passing:
            continue
        if not not_passing:
            data[test] = _one_or_list(test_statuses)
        else:
            data[test] = {"status": _one_or_list(test_statuses), "subtests": not_passing}
    return data


def _add(seen: list[str], status: str) -> None:
    if status not in seen:
        seen.append(status)


def _one_or_list(statuses: list[str]):
    return statuses[0] if len(statuses) == 1 else list(statuses)
