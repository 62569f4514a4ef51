"""--list through the CLI (no browser): discovery, URL naming, filters."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def listing(root, *args):
    done = subprocess.run([sys.executable, "-m", "wpt_runner", "run", "--wpt-root", str(root), "--list", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split(), done.stderr


def test_list_runner_tree(wpt_root):
    urls, stderr = listing(wpt_root, "runner/")
    assert urls == sorted([
        "/runner/dedicated.worker.html?w1", "/runner/dedicated.worker.html?w2",
        "/runner/harness_error.window.html", "/runner/harness_precondition.window.html",
        "/runner/meta_script.any.html", "/runner/meta_script.any.worker.html",
        "/runner/meta_timeout.any.html",
        "/runner/meta_title.any.html", "/runner/meta_title.any.serviceworker.html",
        "/runner/meta_title.any.sharedworker.html", "/runner/meta_title.any.worker.html",
        "/runner/meta_variant.any.html", "/runner/meta_variant.any.html?first",
        "/runner/meta_variant.any.html?tc=second%20case&n=2",
        "/runner/meta_variant.any.worker.html", "/runner/meta_variant.any.worker.html?first",
        "/runner/meta_variant.any.worker.html?tc=second%20case&n=2",
        "/runner/plain.html?x", "/runner/plain.html?y",
        "/runner/skipped.window.html", "/runner/statuses.window.html", "/runner/unsupported_scope.any.html",
    ])
    # Helpers under resources/ are never tests; unsupported scopes are named, not dropped silently.
    assert "shadowrealm-in-window is not supported" in stderr and "jsshell" in stderr


def test_default_path_is_webnn(wpt_root):
    urls, _ = listing(wpt_root)
    assert urls == [
        "/webnn/compute.https.any.html?cpu", "/webnn/compute.https.any.serviceworker.html?cpu",
        "/webnn/compute.https.any.sharedworker.html?cpu", "/webnn/compute.https.any.worker.html?cpu",
        "/webnn/conformance_tests/add.https.any.html?cpu",
        "/webnn/conformance_tests/add.https.any.html?cpu&tc=add%20float32%202D%20broadcast",
        "/webnn/conformance_tests/add.https.any.html?gpu",
        "/webnn/script-frame.https.window.html",
        "/webnn/validation_tests/add.https.any.html?cpu",
    ]


def test_global_include_exclude_and_test_urls(wpt_root):
    urls, _ = listing(wpt_root, "runner/", "webnn/", "--global", "sharedworker,serviceworker")
    assert urls == ["/runner/meta_title.any.serviceworker.html", "/runner/meta_title.any.sharedworker.html",
                    "/webnn/compute.https.any.serviceworker.html?cpu", "/webnn/compute.https.any.sharedworker.html?cpu"]
    urls, _ = listing(wpt_root, "runner/", "--include", "*meta_variant*", "--exclude", "*worker*")
    assert urls == ["/runner/meta_variant.any.html", "/runner/meta_variant.any.html?first",
                    "/runner/meta_variant.any.html?tc=second%20case&n=2"]
    # A generated test's own URL, with or without its variant.
    urls, _ = listing(wpt_root, "/runner/meta_variant.any.worker.html?first")
    assert urls == ["/runner/meta_variant.any.worker.html?first"]
    urls, _ = listing(wpt_root, "runner/meta_title.any.sharedworker.html")
    assert urls == ["/runner/meta_title.any.sharedworker.html"]


def test_bad_arguments_exit_2(wpt_root, tmp_path):
    def code(*args):
        return subprocess.run([sys.executable, "-m", "wpt_runner", "run", "--wpt-root", str(wpt_root), *args],
                              cwd=REPO, capture_output=True, text=True, timeout=60).returncode
    assert code("no/such/dir/", "--list") == 2
    assert code("--global", "shadowrealm", "--list") == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"/runner/statuses.window.html": "PASSED"}')
    assert code("--expectations", str(bad), "--list") == 2
