"""The graph compiler (webnn_py/runtime/compiler): each pass against the same graph
compiled without optimisation (ExecutionPlan(..., optimize=False): the operators'
registered kernels one by one, as before the compiler existed) and against
independent references (torch in float64, hand-computed values).
"""
import asyncio

import numpy as np
import pytest

import webnn_py
from webnn_py.runtime.plan import ExecutionPlan
from tests.portable.expect import assert_close, ulp_distance
from tests.portable.graph import operands_of

torch = pytest.importorskip("torch")
F = torch.nn.functional


def build(make, inputs: dict, constants: dict | None = None):
    """make(builder, operands) -> {name: MLOperand}; returns (compiled plan, unoptimised plan)."""
    async def go():
        context = await webnn_py.ml.createContext()
        builder = webnn_py.MLGraphBuilder(context)
        outputs = make(builder, operands_of(builder, inputs, constants))
        graph = await builder.build(outputs)
        plain = ExecutionPlan({n: o._value for n, o in outputs.items()}, optimize=False)
        return graph._implementation, plain
    return asyncio.run(go())


def kinds(plan):
    return [step.name for step in plan.steps]


def assert_same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8 if a.dtype.itemsize == 1 else f"u{a.dtype.itemsize}"),
                          b.view(np.uint8 if b.dtype.itemsize == 1 else f"u{b.dtype.itemsize}"))


def t64(a):
    return torch.from_numpy(np.asarray(a, np.float64))


# The C epilogue's sigmoid (kernels.c activate4: float32 exp of degree 7, one division) is
# within 3 ULP of the exact value; numpy's float32 1 / (exp(-x) + 1), the unfused plan's,
# within 2 or so: the two stay within this many ULP of each other.
SIGMOID_ULP = 3


@pytest.fixture
def rng():
    return np.random.default_rng(9)


# -- fusion -----------------------------------------------------------------------------------

def test_conv_bias_relu6_fuses_into_one_step_with_the_unfused_bits(rng):
    # A 1x1 conv: the graph stays NCHW (layout.py moves only graphs with spatial or
    # depthwise convolutions), so fused and unfused plans run the same numpy kernels.
    x = rng.standard_normal((1, 8, 10, 10)).astype(np.float32)
    w = rng.standard_normal((16, 8, 1, 1)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    extra = rng.standard_normal((16, 1, 1)).astype(np.float32)
    plan, plain = build(lambda g, o: {"y": g.clamp(g.add(g.conv2d(o["x"], o["w"], {"bias": o["b"]}), o["e"]),
                                                   {"minValue": 0, "maxValue": 6})},
                        {"x": x}, {"w": w, "b": b, "e": extra})
    assert kinds(plan) == ["conv2d+add+clamp"]
    assert kinds(plain) == ["conv2d", "add", "clamp"]
    got = plan.execute({"x": x})["y"]
    assert_same_bits(got, plain.execute({"x": x})["y"])
    ref = torch.clamp(F.conv2d(t64(x), t64(w), t64(b)) + t64(extra), 0, 6).numpy()
    assert_close(got, ref, atol=1e-4, what="conv2d+add+clamp")


def test_spatial_conv_runs_channels_last_with_its_chain_fused(rng):
    # A 3x3 conv: layout.py moves it to NHWC (the C kernels' im2col path) with one transpose
    # at each border, and the add and clamp still join the conv's step.
    x = rng.standard_normal((1, 8, 10, 10)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    extra = rng.standard_normal((16, 1, 1)).astype(np.float32)
    plan, _ = build(lambda g, o: {"y": g.clamp(g.add(g.conv2d(o["x"], o["w"], {"padding": [1] * 4, "bias": o["b"]}),
                                                     o["e"]), {"minValue": 0, "maxValue": 6})},
                    {"x": x}, {"w": w, "b": b, "e": extra})
    assert kinds(plan) == ["transpose", "conv2d+add+clamp", "transpose"]
    ref = torch.clamp(F.conv2d(t64(x), t64(w), t64(b), padding=1) + t64(extra), 0, 6).numpy()
    assert_close(plan.execute({"x": x})["y"], ref, atol=1e-4, what="conv2d+add+clamp, NHWC")


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "gelu", "hardSwish", "leakyRelu"])
def test_matmul_add_activation_chain(act, rng):
    a = rng.standard_normal((2, 5, 12)).astype(np.float32)
    w = rng.standard_normal((12, 7)).astype(np.float32)
    bias = rng.standard_normal(7).astype(np.float32)
    plan, plain = build(lambda g, o: {"y": getattr(g, act)(g.add(g.matmul(o["a"], o["w"]), o["b"]))},
                        {"a": a}, {"w": w, "b": bias})
    assert kinds(plan) == [f"matmul+add+{act}"]
    got = plan.execute({"a": a})["y"]
    if act == "sigmoid":            # in the C epilogue (with the C kernels): within SIGMOID_ULP
        assert ulp_distance(got, plain.execute({"a": a})["y"]).max() <= SIGMOID_ULP
    else:
        assert_same_bits(got, plain.execute({"a": a})["y"])
    z = t64(a) @ t64(w) + t64(bias)
    ref = {"relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "gelu": F.gelu,
           "hardSwish": F.hardswish, "leakyRelu": lambda t: F.leaky_relu(t, 0.01)}[act](z).numpy()
    assert_close(got, ref, atol=1e-4, what=act)


def test_element_wise_chain_with_operands_computed_later_and_either_side(rng):
    # y = (x * 2) - z ... where the fused chain's second operand is produced after the first
    # op, and sub/div take the chain's value as their second operand.
    x = rng.standard_normal((3, 4)).astype(np.float32)
    z = rng.uniform(1, 2, (3, 4)).astype(np.float32)

    def make(g, o):
        doubled = g.mul(o["x"], g.constant("float32", 2))
        later = g.exp(o["z"])
        return {"y": g.div(later, g.sub(later, doubled))}
    plan, plain = build(make, {"x": x, "z": z})
    assert "mul+sub+div" in kinds(plan)
    got = plan.execute({"x": x, "z": z})["y"]
    assert_same_bits(got, plain.execute({"x": x, "z": z})["y"])
    ez = np.exp(z.astype(np.float64))
    assert_close(got, ez / (ez - 2 * x.astype(np.float64)), atol=1e-4)


@pytest.mark.parametrize("act", ["relu", "clamp", "sigmoid", "tanh"])
def test_in_place_stages_keep_the_kernels_bits_on_special_values(act):
    # -0, +-inf, NaN, the clamp bounds themselves (ties), subnormals, and values either side.
    x = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 6.0, -6.0, 1e-45, -1e-45, 5.999999, 6.000001, 3.0,
                  -1.5, 88.0, -104.0] * 5, np.float32).reshape(5, 15)
    zero = np.zeros_like(x)
    options = {"minValue": -0.0, "maxValue": 6.0} if act == "clamp" else {}
    call = (lambda g, v: g.clamp(v, options)) if act == "clamp" else (lambda g, v: getattr(g, act)(v))
    plan, plain = build(lambda g, o: {"y": call(g, g.add(o["x"], o["z"]))}, {"x": x, "z": zero})
    assert kinds(plan) == [f"add+{act}"]
    assert_same_bits(plan.execute({"x": x, "z": zero})["y"], plain.execute({"x": x, "z": zero})["y"])
    # and the unfused kernels agree with the spec's decompositions on these values
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        expected = {"relu": np.maximum(x64, 0), "clamp": np.minimum(np.maximum(x64, 0), 6),
                    "sigmoid": 1 / (np.exp(-x64) + 1), "tanh": np.tanh(x64)}[act]
    assert_close(plain.execute({"x": x, "z": zero})["y"], expected, ulp=2, what=act)


def test_no_fusion_for_float16_shared_values_or_outputs(rng):
    x16 = rng.standard_normal((4, 4)).astype(np.float16)
    plan, plain = build(lambda g, o: {"y": g.relu(g.add(o["x"], o["x"]))}, {"x": x16})
    assert kinds(plan) == ["add", "relu"]      # float16 rounds after every operator
    assert_same_bits(plan.execute({"x": x16})["y"], plain.execute({"x": x16})["y"])

    x = rng.standard_normal((4, 4)).astype(np.float32)

    def shared(g, o):
        s = g.add(o["x"], o["x"])
        return {"y": g.mul(g.relu(s), s)}       # s has two readers: it must exist
    plan, _ = build(shared, {"x": x})
    assert kinds(plan)[0] == "add"
    np.testing.assert_array_equal(plan.execute({"x": x})["y"], np.maximum(2 * x, 0) * (2 * x))

    def exposed(g, o):
        s = g.add(o["x"], o["x"])
        return {"s": s, "y": g.relu(s)}         # s is a graph output
    plan, _ = build(exposed, {"x": x})
    assert kinds(plan) == ["add", "relu"]
    out = plan.execute({"x": x})
    np.testing.assert_array_equal(out["s"], 2 * x)
    np.testing.assert_array_equal(out["y"], np.maximum(2 * x, 0))


def test_broadcasting_consumer_is_not_done_in_place(rng):
    # add's result is [4] but the consumer's output is [3, 4]: no in-place fusion.
    x = rng.standard_normal(4).astype(np.float32)
    m = rng.standard_normal((3, 4)).astype(np.float32)
    plan, _ = build(lambda g, o: {"y": g.mul(g.add(o["x"], o["x"]), o["m"])}, {"x": x, "m": m})
    assert kinds(plan) == ["add", "mul"]
    np.testing.assert_array_equal(plan.execute({"x": x, "m": m})["y"], (x + x) * m)


def test_fused_stage_never_writes_into_a_view_of_an_input(rng):
    # reshape returns a view of the graph input: the fused relu must copy, not write into x.
    x = rng.standard_normal((2, 6)).astype(np.float32)
    keep = x.copy()
    plan, _ = build(lambda g, o: {"y": g.relu(g.reshape(o["x"], [3, 4]))}, {"x": x})
    assert kinds(plan) == ["reshape+relu"]
    y = plan.execute({"x": x})["y"]
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_array_equal(y, np.maximum(keep.reshape(3, 4), 0))


# -- layout ---------------------------------------------------------------------------------

def test_a_depthwise_stack_runs_channels_last_with_transposes_only_at_its_borders(rng):
    # MobileNetV2's inverted residual: pointwise expand, depthwise, pointwise project, residual add,
    # then global pooling and a reshape (which needs NCHW order back).
    x = rng.standard_normal((1, 8, 9, 9)).astype(np.float32)
    w1 = rng.standard_normal((16, 8, 1, 1)).astype(np.float32)
    dw = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((8, 16, 1, 1)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)

    def make(g, o):
        relu6 = {"minValue": 0, "maxValue": 6}
        h = g.clamp(g.conv2d(o["x"], o["w1"], {"bias": o["b"]}), relu6)
        h = g.clamp(g.conv2d(h, o["dw"], {"groups": 16, "padding": [1] * 4}), relu6)
        y = g.add(g.conv2d(h, o["w2"]), o["x"])
        pooled = g.averagePool2d(y)
        return {"flat": g.reshape(pooled, [1, 8]), "map": y}
    plan, plain = build(make, {"x": x}, {"w1": w1, "dw": dw, "w2": w2, "b": b})
    # The expand conv reads the graph input (NCHW, 8 channels), smaller than its output (16
    # channels): it reads that input transposed to NHWC rather than having its output
    # transposed, and the depthwise conv and the projection follow in NHWC. The residual
    # add, whose other operand is the NCHW input, reads the projection transposed back.
    names = kinds(plan)
    assert sum(name.split("+").count("transpose") for name in names) == 2, names
    convs = [n for s in plan.steps for n in s.nodes if n.kind == "conv2d"]
    assert [n.attributes["inputLayout"] for n in convs] == ["nhwc", "nhwc", "nhwc"]
    got, unopt = plan.execute({"x": x}), plain.execute({"x": x})
    t = t64(x)
    h = torch.clamp(F.conv2d(t, t64(w1), t64(b)), 0, 6)
    h = torch.clamp(F.conv2d(h, t64(dw), padding=1, groups=16), 0, 6)
    ref = F.conv2d(h, t64(w2)) + t
    for name, expected in (("map", ref.numpy()), ("flat", ref.mean(dim=(2, 3)).numpy())):
        assert got[name].shape == unopt[name].shape == expected.shape
        assert_close(got[name], expected, atol=1e-4, what=name)
        assert_close(unopt[name], expected, atol=1e-4, what=name)


def test_per_channel_constants_are_re_laid_out_instead_of_transposing_back(rng):
    # depthwise conv, then a separate bias add ([C, 1, 1]) and a scale ([1, C, 1, 1]) as
    # decomposed graphs have them: all stay channels-last; one transpose in, one out.
    x = rng.standard_normal((1, 6, 8, 8)).astype(np.float32)
    dw = rng.standard_normal((6, 1, 3, 3)).astype(np.float32)
    bias = rng.standard_normal((6, 1, 1)).astype(np.float32)
    scale = rng.standard_normal((1, 6, 1, 1)).astype(np.float32)
    plan, plain = build(lambda g, o: {"y": g.relu(g.mul(g.add(g.conv2d(o["x"], o["dw"], {"groups": 6}), o["b"]),
                                                        o["s"]))},
                        {"x": x}, {"dw": dw, "b": bias, "s": scale})
    assert kinds(plan) == ["transpose", "conv2d+add+mul+relu", "transpose"]
    ref = F.relu((F.conv2d(t64(x), t64(dw), groups=6) + t64(bias)) * t64(scale)).numpy()
    assert_close(plan.execute({"x": x})["y"], ref, atol=1e-4)
    assert_close(plain.execute({"x": x})["y"], ref, atol=1e-4)


def test_no_layout_change_without_a_depthwise_convolution(rng):
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    plan, _ = build(lambda g, o: {"y": g.conv2d(o["x"], o["w"])}, {"x": x}, {"w": w})
    assert kinds(plan) == ["conv2d"] and plan.steps[0].node.attributes["inputLayout"] == "nchw"


# -- constant folding ----------------------------------------------------------------------

def test_constant_subgraphs_are_evaluated_at_build(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    c = np.array([[1, 2, 3]], np.float32)

    def make(g, o):
        scale = g.sqrt(g.add(o["c"], g.constant("float32", 1)))       # depends on constants only
        return {"y": g.mul(o["x"], g.transpose(g.transpose(scale)))}
    plan, plain = build(make, {"x": x}, {"c": c})
    assert sorted(n.kind for n in plan.folded_nodes) == ["add", "sqrt", "transpose", "transpose"]
    assert kinds(plan) == ["mul"]
    got = plan.execute({"x": x})["y"]
    np.testing.assert_array_equal(got, plain.execute({"x": x})["y"])
    assert_close(got, x.astype(np.float64) * np.sqrt([[2.0, 3.0, 4.0]]), ulp=1)


def test_a_graph_of_constants_only_returns_fresh_arrays_each_run():
    plan, _ = build(lambda g, o: {"y": g.add(g.constant("int32", 40), g.constant("int32", 2))}, {})
    assert plan.steps == []
    first = plan.execute({})["y"]
    assert first.tolist() == 42
    first[...] = 0                                  # the caller owns what it got
    assert plan.execute({})["y"].tolist() == 42


def test_folding_leaves_integer_results_exact():
    # int32 wraps like native types; folding runs the same kernel, so the same bits.
    plan, plain = build(lambda g, o: {"y": g.add(o["x"], g.mul(g.constant("int32", 2 ** 30),
                                                                g.constant("int32", 4)))},
                        {"x": np.array([1, 2], np.int32)})
    assert [n.kind for n in plan.folded_nodes] == ["mul"]
    got = plan.execute({"x": np.array([1, 2], np.int32)})["y"]
    assert got.tolist() == [1, 2]                  # 2**32 wraps to 0
    assert_same_bits(got, plain.execute({"x": np.array([1, 2], np.int32)})["y"])


# -- outputs, liveness, profile, execute_iter ----------------------------------------------------

def test_outputs_are_never_aliases_of_inputs_or_of_the_next_run(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    plan, _ = build(lambda g, o: {"r": g.reshape(o["x"], [3, 2]), "y": g.relu(g.add(o["x"], o["x"]))},
                    {"x": x})
    first = plan.execute({"x": x})
    assert not np.shares_memory(first["r"], x)
    second = plan.execute({"x": -x})
    np.testing.assert_array_equal(first["y"], np.maximum(2 * x, 0))
    np.testing.assert_array_equal(second["y"], np.maximum(-2 * x, 0))
    assert not np.shares_memory(first["y"], second["y"])


def test_liveness_releases_intermediates_after_their_last_reader(rng):
    x = rng.standard_normal((4,)).astype(np.float32)

    def make(g, o):
        a = g.exp(o["x"])
        b = g.mul(a, a)            # a's last reader
        return {"y": g.sin(b), "z": g.cos(b)}
    plan, _ = build(make, {"x": x})
    mul_step = next(s for s in plan.steps if s.name == "mul")
    assert mul_step.release == mul_step.input_slots[:1]
    out = plan.execute({"x": x})
    e = np.exp(x.astype(np.float64))
    assert_close(out["y"], np.sin(e * e), atol=1e-4)
    assert_close(out["z"], np.cos(e * e), atol=1e-4)


def test_profile_accumulates_seconds_per_step_name(rng):
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
    plan, _ = build(lambda g, o: {"y": g.reduceMean(g.relu(g.conv2d(o["x"], o["w"])))},
                    {"x": x}, {"w": w})
    profile = {}
    plan.execute({"x": x}, profile=profile)
    plan.execute({"x": x}, profile=profile)
    assert set(profile) == {"conv2d+relu", "reduceMean"}
    assert all(isinstance(v, float) and v > 0 for v in profile.values())


def test_execute_iter_yields_between_steps_and_returns_executes_results(rng):
    x = rng.standard_normal((3,)).astype(np.float32)
    plan, _ = build(lambda g, o: {"y": g.sin(g.mul(g.cos(o["x"]), g.cos(o["x"])))}, {"x": x})
    assert len(plan.steps) >= 2
    profile = {}
    run = plan.execute_iter({"x": x}, profile=profile)
    run_at_yields = []
    while True:
        try:
            next(run)
            run_at_yields.append(list(profile))
        except StopIteration as done:
            result = done.value
            break
    # One yield between two steps, none after the last (the outputs go with the last step):
    # at the k-th yield exactly the first k steps have run.
    names = [step.name for step in plan.steps]
    assert run_at_yields == [names[:k] for k in range(1, len(names))]
    assert list(profile) == names
    np.testing.assert_array_equal(result["y"], plan.execute({"x": x})["y"])


def test_a_one_step_plan_runs_in_one_resumption(rng):
    x = rng.standard_normal((3,)).astype(np.float32)
    plan, _ = build(lambda g, o: {"y": g.sin(o["x"])}, {"x": x})
    assert len(plan.steps) == 1
    with pytest.raises(StopIteration) as done:
        next(plan.execute_iter({"x": x}))
    np.testing.assert_array_equal(done.value.value["y"], np.sin(x))


# -- specialised gemm / matmul ------------------------------------------------------------------

@pytest.mark.parametrize("options", [{}, {"bTranspose": True, "alpha": 0.5, "beta": 2.0},
                                     {"aTranspose": True, "beta": -1.0}])
def test_gemm_with_constant_weights(options, rng):
    a = rng.standard_normal((5, 4) if not options.get("aTranspose") else (4, 5)).astype(np.float32)
    b = rng.standard_normal((6, 4) if options.get("bTranspose") else (4, 6)).astype(np.float32)
    c = rng.standard_normal((6,)).astype(np.float32)
    plan, plain = build(lambda g, o: {"y": g.gemm(o["a"], o["b"], {**options, "c": o["c"]})},
                        {"a": a}, {"b": b, "c": c})
    got = plan.execute({"a": a})["y"]
    ta, tb = t64(a), t64(b)
    ta = ta.T if options.get("aTranspose") else ta
    tb = tb.T if options.get("bTranspose") else tb
    ref = (options.get("alpha", 1.0) * (ta @ tb) + options.get("beta", 1.0) * t64(c)).numpy()
    assert_close(got, ref, atol=1e-4)
    assert_close(plain.execute({"a": a})["y"], ref, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_with_constant_weights_batched_input(dtype, rng):
    a = rng.standard_normal((2, 3, 5, 8)).astype(dtype)
    b = rng.standard_normal((8, 4)).astype(dtype)
    plan, _ = build(lambda g, o: {"y": g.matmul(o["a"], o["b"])}, {"a": a}, {"b": b})
    got = plan.execute({"a": a})["y"]
    ref = (t64(a) @ t64(b)).numpy()
    assert got.dtype == dtype and got.shape == (2, 3, 5, 4)
    assert_close(got, ref, atol=1e-4 if dtype == np.float32 else 1e-2)
