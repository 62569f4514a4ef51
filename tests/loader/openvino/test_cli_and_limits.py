"""python -m webnn_py.run_model on IR models (scalar inputs keep dimensions []),
constants whose shape no tensor can have (a DataError, on the CLI and through
MLModelLoader), and the registry tools/gen_loader_tables.py reads."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from .helpers import openvino_run, ours, save
from .test_loop import forms_model

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")


def test_run_model_passes_a_0d_input_as_a_scalar_and_matches_openvino(tmp_path):
    """A Loop whose trip count is a scalar i64 Parameter: run_model reads the
    0-d .npy and passes it with dimensions [] (it used to become [1], which the
    model refused)."""
    from webnn_py.run_model import main
    model, feeds = forms_model("for-runtime-trip", "scalar-i64", "scalar")
    assert feeds["n"].shape == ()
    save(model, tmp_path)
    args = [str(tmp_path / "model.xml"), "--format", "openvino", "--output", str(tmp_path / "out.npz")]
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    assert main(args) == 0
    got = dict(np.load(tmp_path / "out.npz"))
    reference = openvino_run(model, feeds)
    assert len(got) == len(reference) == 2
    for names, expected in reference.items():
        (name,) = [n for n in got if n in names]
        np.testing.assert_array_equal(got[name], expected)
    assert max(v.shape[0] for v in got.values()) == 4          # the trip count ran 4 iterations


# -- constants no tensor can hold (issue 19, item 11) ------------------------------------------------

def _absurd_constant_ir(shape: str, size: str = "0") -> bytes:
    return (f"<net name='m' version='11'><layers>"
            f"<layer id='0' name='c' type='Const' version='opset1'>"
            f"<data element_type='f32' shape='{shape}' offset='0' size='{size}'/>"
            f"<output><port id='0' precision='FP32'/></output></layer>"
            f"<layer id='1' name='r' type='Result' version='opset1'><input><port id='0'/></input></layer>"
            f"</layers><edges><edge from-layer='0' from-port='0' to-layer='1' to-port='0'/></edges></net>").encode()


@pytest.mark.parametrize("shape,problem", [
    ("2147483648,2147483648,0", "has a dimension above 2147483647"),
    ("65536,65536,0", r"spans 17179869184 bytes .*maxTensorByteLength"),
])
def test_absurd_constant_shapes_are_a_data_error(shape, problem):
    from webnn_py.base.errors import DataError
    with pytest.raises(DataError, match=r"layer 0 'c' \(Const\): shape \[.*\] " + problem):
        ours(_absurd_constant_ir(shape), b"", {})


def test_run_model_reports_an_absurd_constant_without_a_traceback(tmp_path):
    (tmp_path / "m.xml").write_bytes(_absurd_constant_ir("2147483648,2147483648,0"))
    done = subprocess.run([sys.executable, "-m", "webnn_py.run_model", str(tmp_path / "m.xml"), "--format",
                           "openvino", "--weights", "/dev/null"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: DataError: load: layer 0 'c' (Const): shape [2147483648, 2147483648, 0]")


def test_a_fold_numpy_refuses_is_a_data_error_naming_the_layer():
    """A zero-size constant reshaped to a shape numpy cannot hold: the layer's
    error, not numpy's."""
    from webnn_py.base.errors import DataError
    xml = (b"<net name='m' version='11'><layers>"
           b"<layer id='0' name='c' type='Const' version='opset1'><data element_type='f32' shape='0' offset='0' "
           b"size='0'/><output><port id='0' precision='FP32'/></output></layer>"
           b"<layer id='1' name='s' type='Const' version='opset1'><data element_type='i64' shape='3' offset='0' "
           b"size='24'/><output><port id='0' precision='I64'/></output></layer>"
           b"<layer id='2' name='reshape' type='Reshape' version='opset1'><data special_zero='false'/>"
           b"<input><port id='0'/><port id='1'/></input><output><port id='2' precision='FP32'/></output></layer>"
           b"<layer id='3' name='r' type='Result' version='opset1'><input><port id='0'/></input></layer>"
           b"</layers><edges><edge from-layer='0' from-port='0' to-layer='2' to-port='0'/>"
           b"<edge from-layer='1' from-port='0' to-layer='2' to-port='1'/>"
           b"<edge from-layer='2' from-port='2' to-layer='3' to-port='0'/></edges></net>")
    weights = np.array([2**40, 2**40, 0], np.int64).tobytes()
    with pytest.raises(DataError, match=r"layer 2 'reshape' \(Reshape\)"):
        ours(xml, weights, {})


def test_a_float_attribute_that_is_not_a_number_is_a_data_error_naming_it(tmp_path):
    """Clamp's min written as text that is no number: the layer's DataError, not a ValueError."""
    from webnn_py.base.errors import DataError
    x = ops.parameter([2, 3], np.float32, name="x")
    xml, weights = save(ov.Model([ops.result(ops.clamp(x, -1.0, 1.0))], [x], "m"), tmp_path)
    bad = xml.replace(b'min="-1"', b'min="low"')
    assert bad != xml
    with pytest.raises(DataError, match=r"\(Clamp\).*'min' attribute 'low' is not a number"):
        ours(bad, weights, {"x": np.zeros((2, 3), np.float32)})


# -- the registry ------------------------------------------------------------------------------------

def test_registry_is_consistent():
    from webnn_py.loader.openvino import registry
    supported, refused = set(registry.TRANSLATORS), set(registry.UNSUPPORTED)
    assert not supported & refused
    assert not set(registry.STRUCTURAL) & (supported | refused)
    assert all(isinstance(reason, str) and reason for reason in registry.UNSUPPORTED.values())
    rows = registry.table()
    assert len(rows) == len(supported) + len(refused) + len(registry.STRUCTURAL)
    assert [r[0].lower() for r in rows] == sorted(r[0].lower() for r in rows)


def test_unsupported_types_are_named_with_their_reasons(tmp_path):
    from webnn_py.base.errors import NotSupportedError
    x = ops.parameter([2, 3], np.float32, name="x")
    m = ov.Model([ops.result(ops.non_zero(x)), ops.result(ops.asin(x))], [x], "m")
    xml, weights = save(m, tmp_path)
    with pytest.raises(NotSupportedError, match=r"Asin \(WebNN has no operator that computes it\), NonZero "
                                                r"\(its output shape depends on the input values"):
        ours(xml, weights, {})
