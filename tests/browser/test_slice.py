"""The vertical slice in every engine (Chromium, Firefox, WebKit): one <script> tag gives navigator.ml."""

import pytest

from . import page_facts


@pytest.fixture(scope="module")
def facts(browser):
    return page_facts("slice.html", "window.sliceFacts", browser)


def test_interfaces_and_navigator_ml(facts):
    assert facts["interfaces"] == ["ML", "MLContext", "MLGraphBuilder", "MLOperand", "MLGraph", "MLTensor"]
    assert facts["sameObject"] is True
    assert facts["mlTag"] == "[object ML]"
    assert facts["contextIsMLContext"] is True


def test_results_match_hand_computed_values(facts):
    assert facts["operand"] == {"dataType": "float32", "shape": [2, 3], "frozen": True}
    assert facts["sum"] == [11, 22, 33, 14, 25, 36]
    assert facts["diff"] == [-9, -18, -27, -6, -15, -24]


def test_error_names_from_page_script(facts):
    assert facts["mismatch"]["name"] == "TypeError" and facts["mismatch"]["isTypeError"]
    assert facts["mismatch"]["message"].startswith("[bad-add] add:")
    assert facts["afterBuild"] == {"name": "InvalidStateError", "isDOMException": True}
    assert facts["readWritableOnly"] == "TypeError"
    assert facts["brand"] == "TypeError"
    assert facts["illegalConstructor"] == "Illegal constructor"
    assert facts["gpuDevice"] == {"name": "NotSupportedError", "isDOMException": True}
    assert facts["promiseBrand"] == "TypeError"     # rejected, not thrown
