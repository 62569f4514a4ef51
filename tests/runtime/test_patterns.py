"""Pattern recognition (runtime/compiler/patterns.py): gelu, layerNormalization and
softmax spelled out as older ONNX exports write them become one step of the operator,
with results checked against torch in float64; subgraphs that are not exactly the
formula, or whose intermediates are read elsewhere, or are float16, stay as they are.
"""
import math

import numpy as np
import pytest

from tests.portable.expect import assert_close
from tests.runtime.test_compiler import build, kinds, t64

torch = pytest.importorskip("torch")
F = torch.nn.functional
RNG = np.random.default_rng(20261122)
SQRT2 = math.sqrt(2.0)


def scalar(g, value, dtype="float32"):
    return g.constant(dtype, value)


def onnx_gelu(g, x, divide=True, order=0):
    """torch's ONNX export before opset 20: Div(x, sqrt 2), Erf, Add 1, Mul x, Mul 0.5 (or
    the Mul by 1/sqrt 2 form, and the factors in other orders)."""
    scaled = g.div(x, scalar(g, SQRT2)) if divide else g.mul(scalar(g, 1 / SQRT2), x)
    tail = g.add(scalar(g, 1.0), g.erf(scaled))
    if order == 0:
        return g.mul(g.mul(x, tail), scalar(g, 0.5))
    return g.mul(g.mul(scalar(g, 0.5), x), tail)


def onnx_layer_norm(g, x, gamma, beta, axes=(2,), epsilon=1e-5, square="pow"):
    """ReduceMean, Sub, Pow 2, ReduceMean, Add epsilon, Sqrt, Div, Mul scale, Add bias."""
    mean = g.reduceMean(x, {"axes": list(axes), "keepDimensions": True})
    d = g.sub(x, mean)
    squared = g.pow(d, scalar(g, 2.0)) if square == "pow" else g.mul(d, d)
    variance = g.reduceMean(squared, {"axes": list(axes), "keepDimensions": True})
    y = g.div(d, g.sqrt(g.add(variance, scalar(g, epsilon))))
    if gamma is not None:
        y = g.mul(y, gamma)
    if beta is not None:
        y = g.add(beta, y)
    return y


def stable_softmax(g, x, axis):
    e = g.exp(g.sub(x, g.reduceMax(x, {"axes": [axis], "keepDimensions": True})))
    return g.div(e, g.reduceSum(e, {"axes": [axis], "keepDimensions": True}))


def torch_layer_norm(x, gamma, beta, dims, epsilon):
    return F.layer_norm(t64(x), x.shape[-dims:], None if gamma is None else t64(gamma).expand(x.shape[-dims:]),
                        None if beta is None else t64(beta).expand(x.shape[-dims:]), epsilon).numpy()


@pytest.mark.parametrize("divide", [True, False])
@pytest.mark.parametrize("order", [0, 1])
def test_spelled_out_gelu_becomes_one_gelu_step(divide, order):
    x = (RNG.standard_normal((4, 33)) * 3).astype(np.float32)
    plan, plain = build(lambda g, o: {"y": onnx_gelu(g, o["x"], divide, order)}, {"x": x})
    assert kinds(plan) == ["gelu"]
    assert len(kinds(plain)) == 5
    ref = np.array([0.5 * v * math.erfc(-v / SQRT2) for v in x.astype(np.float64).ravel().tolist()])
    assert_close(plan.execute({"x": x})["y"], ref.reshape(x.shape), ulp=1, what="gelu")
    # The chain itself cancels where 1 + erf nears 0: only an absolute error is bounded there
    # (the replacement is also the more accurate one).
    assert_close(plain.execute({"x": x})["y"], ref.reshape(x.shape), atol=1e-5, what="spelled out")


@pytest.mark.parametrize("square", ["pow", "mul"])
@pytest.mark.parametrize("affine", ["both", "scale", "none", "row"])
def test_spelled_out_layer_norm_becomes_one_step(square, affine):
    x = (RNG.standard_normal((2, 7, 48)) * 2 + 1).astype(np.float32)
    gamma = RNG.uniform(0.5, 1.5, 48).astype(np.float32)
    beta = RNG.standard_normal(48).astype(np.float32)
    if affine == "row":                       # [1, 48]: broadcasts the same way
        gamma, beta = gamma[None, :], beta[None, :]
    constants = {"gamma": gamma, "beta": beta}

    def make(g, o):
        return {"y": onnx_layer_norm(g, o["x"], None if affine == "none" else o["gamma"],
                                     o["beta"] if affine in ("both", "row") else None, square=square)}
    plan, plain = build(make, {"x": x}, constants)
    assert kinds(plan) == ["layerNormalization"]
    ref = torch_layer_norm(x, None if affine == "none" else gamma.reshape(-1),
                           beta.reshape(-1) if affine in ("both", "row") else None, 1, 1e-5)
    assert_close(plan.execute({"x": x})["y"], ref, atol=2e-5, what="layerNormalization")
    assert_close(plain.execute({"x": x})["y"], ref, atol=2e-5, what="spelled out")


def test_layer_norm_over_the_last_two_axes_with_a_row_scale():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    gamma = RNG.uniform(0.5, 1.5, 5).astype(np.float32)          # broadcasts over both axes
    plan, _ = build(lambda g, o: {"y": onnx_layer_norm(g, o["x"], o["gamma"], None, axes=(1, 2), epsilon=1e-3)},
                    {"x": x}, {"gamma": gamma})
    assert kinds(plan) == ["layerNormalization"]
    ref = torch_layer_norm(x, np.broadcast_to(gamma, (4, 5)), None, 2, 1e-3)
    assert_close(plan.execute({"x": x})["y"], ref, atol=2e-5)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_stable_softmax_becomes_one_softmax_step(axis):
    x = (RNG.standard_normal((3, 5, 6)) * 10).astype(np.float32)
    plan, _ = build(lambda g, o: {"y": stable_softmax(g, o["x"], axis)}, {"x": x})
    assert kinds(plan) == ["softmax"]
    assert_close(plan.execute({"x": x})["y"], F.softmax(t64(x), dim=axis).numpy(), ulp=1)


def test_patterns_inside_a_larger_graph_keep_their_neighbours():
    # matmul + bias, spelled-out gelu, then layer norm: readers after the patterns get the new values.
    x = RNG.standard_normal((8, 16)).astype(np.float32)
    w = RNG.standard_normal((16, 16)).astype(np.float32) * 0.3
    b = RNG.standard_normal(16).astype(np.float32)

    def make(g, o):
        h = onnx_gelu(g, g.add(g.matmul(o["x"], o["w"]), o["b"]))
        n = onnx_layer_norm(g, h, None, None, axes=(1,))
        return {"n": n, "s": g.relu(n)}
    plan, _ = build(make, {"x": x}, {"w": w, "b": b})
    assert kinds(plan) == ["matmul+add+gelu", "layerNormalization", "relu"]
    h = t64(x) @ t64(w) + t64(b)
    h = F.gelu(h)
    n = F.layer_norm(h, (16,), eps=1e-5)
    got = plan.execute({"x": x})
    assert_close(got["n"], n.numpy(), atol=3e-5)
    assert_close(got["s"], torch.relu(n).numpy(), atol=3e-5)


def test_near_misses_stay_spelled_out():
    x = RNG.standard_normal((4, 8)).astype(np.float32)

    def wrong_constant(g, o):                 # 0.6 instead of 0.5
        tail = g.add(g.erf(g.div(o["x"], scalar(g, SQRT2))), scalar(g, 1.0))
        return {"y": g.mul(g.mul(o["x"], tail), scalar(g, 0.6))}

    def intermediate_read_elsewhere(g, o):   # erf's result is also an output
        e = g.erf(g.div(o["x"], scalar(g, SQRT2)))
        return {"y": g.mul(g.mul(o["x"], g.add(e, scalar(g, 1.0))), scalar(g, 0.5)), "e": e}

    def unstable_softmax(g, o):               # no max subtracted: overflows differently
        e = g.exp(o["x"])
        return {"y": g.div(e, g.reduceSum(e, {"axes": [1], "keepDimensions": True}))}

    def mean_of_another_tensor(g, o):         # x - mean(2x) is not a deviation
        mean = g.reduceMean(g.mul(o["x"], scalar(g, 2.0)), {"axes": [1], "keepDimensions": True})
        d = g.sub(o["x"], mean)
        v = g.reduceMean(g.mul(d, d), {"axes": [1], "keepDimensions": True})
        return {"y": g.div(d, g.sqrt(g.add(v, scalar(g, 1e-5))))}

    for make in (wrong_constant, intermediate_read_elsewhere, unstable_softmax, mean_of_another_tensor):
        plan, plain = build(make, {"x": x})
        names = "+".join(kinds(plan))
        assert not any(k in names.split("+") for k in ("gelu", "softmax", "layerNormalization")), (make, names)
        for name, want in plain.execute({"x": x}).items():
            np.testing.assert_array_equal(plan.execute({"x": x})[name], want)


def test_float16_stays_spelled_out():
    x = RNG.standard_normal((4, 8)).astype(np.float16)

    def make(g, o):
        x = o["x"]
        tail = g.add(g.erf(g.div(x, scalar(g, SQRT2, "float16"))), scalar(g, 1.0, "float16"))
        return {"y": g.mul(g.mul(x, tail), scalar(g, 0.5, "float16"))}
    plan, plain = build(make, {"x": x})
    assert "gelu" not in "+".join(kinds(plan)).split("+")
    np.testing.assert_array_equal(plan.execute({"x": x})["y"], plain.execute({"x": x})["y"])


def test_what_torchs_legacy_onnx_export_writes_is_recognised(tmp_path):
    """torch's TorchScript ONNX exporter at opset 14 (before LayerNormalization and Gelu
    were ONNX operators) spells both out; its nodes, translated one to one into builder
    calls as ONNX Runtime's WebNN execution provider does, compile to single steps, and the
    result matches onnxruntime on the exported file."""
    onnx = pytest.importorskip("onnx")
    onnxruntime = pytest.importorskip("onnxruntime")
    from onnx import numpy_helper

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16),
                                 torch.nn.LayerNorm(16)).eval()
    x = RNG.standard_normal((1, 4, 16)).astype(np.float32)
    path = tmp_path / "mlp.onnx"
    torch.onnx.export(module, (torch.from_numpy(x),), str(path), input_names=["x"], output_names=["y"],
                      opset_version=14, dynamo=False)
    model = onnx.load(str(path))
    spelled = [n.op_type for n in model.graph.node]
    assert {"Erf", "ReduceMean", "Pow", "Sqrt"} <= set(spelled), spelled
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}

    def make(g, o):
        values = {"x": o["x"]}

        def operand(name):
            if name not in values:
                values[name] = g.constant({"dataType": "float32", "shape": list(initializers[name].shape)},
                                          np.ascontiguousarray(initializers[name], np.float32))
            return values[name]

        binary = {"Add": g.add, "Sub": g.sub, "Mul": g.mul, "Div": g.div, "Pow": g.pow, "MatMul": g.matmul}
        for node in model.graph.node:
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            if node.op_type == "Constant":
                initializers[node.output[0]] = numpy_helper.to_array(attrs["value"])
                continue
            args = [operand(i) for i in node.input]
            if node.op_type in binary:
                out = binary[node.op_type](*args)
            elif node.op_type == "ReduceMean":
                out = g.reduceMean(args[0], {"axes": [a % 3 for a in attrs["axes"]],
                                             "keepDimensions": bool(attrs.get("keepdims", 1))})
            else:
                out = {"Erf": g.erf, "Sqrt": g.sqrt}[node.op_type](args[0])
            values[node.output[0]] = out
        return {"y": values["y"]}
    plan, _ = build(make, {"x": x})
    assert kinds(plan) == ["matmul+add+gelu", "matmul+add", "layerNormalization"], kinds(plan)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert_close(plan.execute({"x": x})["y"], session.run(["y"], {"x": x})[0], atol=2e-5)
