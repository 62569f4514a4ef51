"""Same-origin frames share one Python runtime, so WebNN objects cross realms as
native platform objects do (WPT's detached-iframe tests build in the parent with
a context its iframe created), in every engine."""

import pytest

from . import page_facts


@pytest.fixture(scope="module")
def facts(browser):
    return page_facts("frames.html", "window.framesFacts", browser)


def test_a_frames_context_works_with_the_pages_builder(facts):
    assert facts["frameContextIsChildMLContext"] is True
    assert facts["frameContextIsOurMLContext"] is False      # each realm has its own interface objects
    assert facts["product"] == [10, 20, 30]


def test_the_frames_builder_works_with_the_pages_context(facts):
    assert facts["sum"] == [40, -14]


def test_one_runtime_for_both_frames(facts):
    assert facts["pageLoadedPyodide"] == "function"
    assert facts["frameLoadedPyodide"] == "undefined"


def test_brand_checks_hold_across_realms(facts):
    assert facts["foreignBrand"] == "TypeError"
