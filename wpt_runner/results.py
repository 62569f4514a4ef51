"""Test results, the wptreport JSON and the per-directory summary.

Statuses use wptrunner's names. A test (one URL) has a harness status
(OK, ERROR, TIMEOUT, PRECONDITION_FAILED from testharness.js; CRASH when the
renderer died; SKIP when an expectation says not to run it) and subtests
(PASS, FAIL, TIMEOUT, NOTRUN, PRECONDITION_FAILED).
"""
from __future__ import annotations

import dataclasses
import json
import platform
from collections import defaultdict
from pathlib import Path

# testharness.js's numeric codes (Test.statuses and TestsStatus.statuses).
SUBTEST_STATUSES = ["PASS", "FAIL", "TIMEOUT", "NOTRUN", "PRECONDITION_FAILED"]
HARNESS_STATUSES = ["OK", "ERROR", "TIMEOUT", "PRECONDITION_FAILED"]
TEST_STATUSES = HARNESS_STATUSES + ["CRASH", "SKIP"]


def subtest_status_name(code) -> str:
    return SUBTEST_STATUSES[code] if isinstance(code, int) and 0 <= code < len(SUBTEST_STATUSES) else "FAIL"


def harness_status_name(code) -> str:
    return HARNESS_STATUSES[code] if isinstance(code, int) and 0 <= code < len(HARNESS_STATUSES) else "ERROR"


@dataclasses.dataclass
class SubtestResult:
    name: str
    status: str
    message: str | None = None
    expected: list[str] | None = None   # filled by expectations; first item is "the" expectation

    @property
    def unexpected(self) -> bool:
        return self.expected is not None and self.status not in self.expected


@dataclasses.dataclass
class TestResult:
    __test__ = False   # a name pytest would otherwise try to collect
    test: str
    status: str
    message: str | None = None
    subtests: list[SubtestResult] = dataclasses.field(default_factory=list)
    duration_ms: int = 0
    expected: list[str] | None = None
    console: list[str] = dataclasses.field(default_factory=list)   # page errors, for --verbose

    @property
    def unexpected(self) -> bool:
        return self.expected is not None and self.status not in self.expected

    def unexpected_count(self) -> int:
        return int(self.unexpected) + sum(s.unexpected for s in self.subtests)

    def subtest_counts(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for subtest in self.subtests:
            counts[subtest.status] += 1
        return counts


def _expectation_fields(status: str, expected: list[str] | None) -> dict:
    # wptreport lists "expected" only where the result differs from it, and the
    # other acceptable statuses as "known_intermittent".
    if not expected:
        return {}
    fields = {"known_intermittent": [s for s in expected[1:]]}
    if status not in expected:
        fields["expected"] = expected[0]
    return fields


def wptreport(results: list[TestResult], time_start_ms: int, time_end_ms: int, run_info: dict) -> dict:
    """The JSON object wptrunner writes with --log-wptreport."""
    entries = []
    for result in results:
        entry = {
            "test": result.test,
            "subtests": [{"name": s.name, "status": s.status, "message": s.message,
                          **_expectation_fields(s.status, s.expected)} for s in result.subtests],
            "status": result.status,
            "message": result.message,
            "duration": result.duration_ms,
            **_expectation_fields(result.status, result.expected),
        }
        entries.append(entry)
    return {"time_start": time_start_ms, "time_end": time_end_ms, "run_info": run_info, "results": entries}


def default_run_info(product: str, browser_version: str | None, polyfill_url: str, jobs: int, multiplier: float) -> dict:
    return {
        "product": product, "browser_version": browser_version, "headless": True,
        "os": platform.system().lower(), "processor": platform.machine(), "python_version": platform.python_version(),
        "implementation": "webnn-py polyfill", "polyfill_url": polyfill_url,
        "timeout_multiplier": multiplier, "jobs": jobs, "debug": False,
    }


def write_wptreport(path: Path, report: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def summary_table(results: list[TestResult]) -> str:
    """One row per directory: test statuses, subtest counts and unexpected results."""
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for result in results:
        directory = result.test.split("?", 1)[0].rsplit("/", 1)[0] + "/"
        row = rows[directory]
        row["tests"] += 1
        row[result.status] += 1
        for subtest in result.subtests:
            row["subtests"] += 1
            row["pass" if subtest.status == "PASS" else "notpass"] += 1
        row["unexpected"] += result.unexpected_count()
    header = ["directory", "tests", "OK", "ERROR", "TIMEOUT", "CRASH", "other", "subtests", "pass", "not pass",
              "unexpected"]
    table = [header]
    totals: dict[str, int] = defaultdict(int)
    for directory in sorted(rows):
        row = rows[directory]
        other = row["tests"] - sum(row[k] for k in ("OK", "ERROR", "TIMEOUT", "CRASH"))
        values = [row["tests"], row["OK"], row["ERROR"], row["TIMEOUT"], row["CRASH"], other, row["subtests"],
                  row["pass"], row["notpass"], row["unexpected"]]
        for key, value in zip(header[1:], values):
            totals[key] += value
        table.append([directory] + [str(v) for v in values])
    if len(rows) > 1:
        table.append(["total"] + [str(totals[k]) for k in header[1:]])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for index, row in enumerate(table):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells))
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
