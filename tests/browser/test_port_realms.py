"""The runtime port (README "Security model") given a realm without some interface
prototypes -- page script can connect() one of its own --: a result of a missing
interface is an OperationError naming it, made where results are wrapped (the shim's
wrap()), never a Python object handed to the page. Every engine."""
import pytest

from . import page_facts


@pytest.fixture(scope="module")
def facts(browser):
    return page_facts("port_realms.html", "portRealms()", browser)


def test_a_result_without_its_prototype_is_an_error(facts):
    assert facts["contextWithoutPrototype"] == (
        "OperationError: webnn-py: internal error: a MLContext for a realm without the MLContext interface")
    assert facts["contextWithPrototype"] is True
    assert facts["operandWithoutPrototype"] == (
        "OperationError: webnn-py: internal error: a MLOperand for a realm without the MLOperand interface")


def test_the_runtime_keeps_serving(facts):
    assert facts["stillComputes"] == [-1.5, 2]
