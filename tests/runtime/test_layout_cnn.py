"""layout.py on CNN blocks beyond MobileNetV2's: a squeeze-excitation block (global pool,
two 1x1 convs, a per-channel scale broadcast over the feature map) and a fire module
(a concat of two convolutions, after a stem) stay channels-last from end to end, one transpose at
each border, and compute what torch computes."""
import numpy as np
import pytest

from tests.portable.expect import assert_close
from tests.runtime.test_compiler import assert_same_bits, build, kinds, t64
from tests.runtime.test_transformer_fusion import gemm_path  # noqa: F401 - the fixture
from webnn_py import kernels
from webnn_py.runtime.compiler import fusion

torch = pytest.importorskip("torch")
F = torch.nn.functional


def test_squeeze_excitation_block_stays_channels_last(monkeypatch):
    rng = np.random.default_rng(5)
    c, s = 16, 4
    x = rng.standard_normal((1, c, 9, 9)).astype(np.float32)
    w = {"dw": rng.standard_normal((c, 1, 3, 3)).astype(np.float32),
         "f1": rng.standard_normal((s, c, 1, 1)).astype(np.float32) * 0.3, "b1": rng.standard_normal(s).astype(np.float32),
         "f2": rng.standard_normal((c, s, 1, 1)).astype(np.float32) * 0.3, "b2": rng.standard_normal(c).astype(np.float32),
         "pw": rng.standard_normal((8, c, 1, 1)).astype(np.float32) * 0.3}

    def make(g, o):
        y = g.hardSwish(g.conv2d(o["x"], o["dw"], {"groups": c, "padding": [1] * 4}))
        scale = g.averagePool2d(y)
        scale = g.relu(g.conv2d(scale, o["f1"], {"bias": o["b1"]}))
        scale = g.hardSigmoid(g.conv2d(scale, o["f2"], {"bias": o["b2"]}), {"alpha": 1 / 6, "beta": 0.5})
        return {"y": g.conv2d(g.mul(y, scale), o["pw"])}
    plan, _ = build(make, {"x": x}, w)
    names = kinds(plan)
    assert names.count("transpose") == 2 and names[0] == names[-1] == "transpose", names
    # The block's pooled vector and its 1x1 convolutions run inside the scaling step (fusion.py
    # _chain_small_steps): one step for the whole squeeze-excitation.
    assert "averagePool2d+conv2d+relu+conv2d+hardSigmoid+mul" in names, names
    tw = {k: t64(v) for k, v in w.items()}
    y = F.hardswish(F.conv2d(t64(x), tw["dw"], groups=c, padding=1))
    scale = F.hardsigmoid(F.conv2d(F.relu(F.conv2d(y.mean((2, 3), keepdim=True), tw["f1"], tw["b1"])), tw["f2"], tw["b2"]))
    assert_close(plan.execute({"x": x})["y"], F.conv2d(y * scale, tw["pw"]).numpy(), atol=1e-4, what="SE block")
    # The same kernels run, only inside one step: bit for bit the plan with a step each.
    monkeypatch.setattr(fusion, "_CHAIN_KINDS", set())
    separate, _ = build(make, {"x": x}, w)
    assert "mul" in kinds(separate) and "conv2d+hardSigmoid" in kinds(separate)
    assert_same_bits(plan.execute({"x": x})["y"], separate.execute({"x": x})["y"])


@pytest.mark.skipif(kernels.simd() is None or kernels.simd().direct_conv2d_max_out < 16,
                    reason="no direct conv2d in these kernels")
def test_image_stem_reads_the_nchw_image_through_its_strides(monkeypatch):
    """A CNN's first convolution (3 input channels, groups 1) on the host's C kernels is
    conv2d_direct, which reads the NCHW image through a transposed view: the layout pass's
    transpose into NHWC is no step of its own (fusion.py _absorb_input_reshapes), and the
    result is torch's, and bit for bit the plan's with that transpose made as a step."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 3, 23, 21)).astype(np.float32)
    w = {"stem": rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.4,
         "b": rng.standard_normal(16).astype(np.float32),
         "dw": rng.standard_normal((16, 1, 3, 3)).astype(np.float32) * 0.4}

    def make(g, o):
        stem = g.hardSwish(g.conv2d(o["x"], o["stem"], {"padding": [1] * 4, "strides": [2, 2], "bias": o["b"]}))
        return {"y": g.relu(g.conv2d(stem, o["dw"], {"groups": 16, "padding": [1] * 4}))}
    plan, _ = build(make, {"x": x}, w)
    names = kinds(plan)
    assert names == ["transpose+conv2d+hardSwish", "conv2d+relu", "transpose"], names
    tw = {k: t64(v) for k, v in w.items()}
    stem = F.hardswish(F.conv2d(t64(x), tw["stem"], tw["b"], stride=2, padding=1))
    got = plan.execute({"x": x})["y"]
    assert_close(got, F.relu(F.conv2d(stem, tw["dw"], groups=16, padding=1)).numpy(), atol=1e-4, what="stem")
    monkeypatch.setattr(fusion, "_absorb_input_reshapes", lambda units, _outputs: units)
    separate, _ = build(make, {"x": x}, w)
    assert kinds(separate)[:2] == ["transpose", "conv2d+hardSwish"], kinds(separate)
    assert_same_bits(got, separate.execute({"x": x})["y"])


def test_fire_module_concat_stays_channels_last():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 3, 11, 11)).astype(np.float32)
    w = {"stem": rng.standard_normal((12, 3, 3, 3)).astype(np.float32) * 0.4,
         "sq": rng.standard_normal((6, 12, 1, 1)).astype(np.float32) * 0.4,
         "e1": rng.standard_normal((10, 6, 1, 1)).astype(np.float32) * 0.4,
         "e3": rng.standard_normal((7, 6, 3, 3)).astype(np.float32) * 0.2}

    def make(g, o):
        stem = g.relu(g.conv2d(o["x"], o["stem"], {"padding": [1] * 4}))    # SqueezeNet's stem: goes NHWC
        squeezed = g.relu(g.conv2d(stem, o["sq"]))
        a = g.relu(g.conv2d(squeezed, o["e1"]))
        b = g.relu(g.conv2d(squeezed, o["e3"], {"padding": [1] * 4}))
        return {"y": g.maxPool2d(g.concat([a, b], 1), {"windowDimensions": [3, 3], "strides": [2, 2],
                                                       "outputShapeRounding": "ceil"})}
    plan, _ = build(make, {"x": x}, w)
    names = kinds(plan)
    # The border into NHWC is a transpose step, or read through its strides by the stem's direct
    # convolution (the host's C kernels: test_image_stem_reads_the_nchw_image_through_its_strides).
    assert names[0] in ("transpose", "transpose+conv2d+relu") and names[-1] == "transpose", names
    assert sum(name.split("+").count("transpose") for name in names) == 2, names
    # The expands write the concat's channels themselves (fusion.py _concat_in_place).
    assert names[1] == "conv2d+relu" and "conv2d+relu+conv2d+relu+concat" in names, names
    tw = {k: t64(v) for k, v in w.items()}
    s = F.relu(F.conv2d(F.relu(F.conv2d(t64(x), tw["stem"], padding=1)), tw["sq"]))
    ref = F.max_pool2d(torch.cat([F.relu(F.conv2d(s, tw["e1"])), F.relu(F.conv2d(s, tw["e3"], padding=1))], 1),
                       3, 2, ceil_mode=True)
    assert_close(plan.execute({"x": x})["y"], ref.numpy(), atol=1e-4, what="fire module")


def test_fire_module_concat_is_written_in_place_by_its_expands(gemm_path, monkeypatch):
    """The two expands (a 1x1 and a 3x3 conv, each with its relu) write their channels of the
    concat's buffer (fusion.py _concat_in_place, convolution.py pixel_rows): one step, no
    concatenation; bit for bit the plan that concatenates, and torch's values; with the
    host's GEMM and with kernels.c's own (gemm_path)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 3, 13, 13)).astype(np.float32)
    w = {"stem": rng.standard_normal((12, 3, 3, 3)).astype(np.float32) * 0.4,
         "sq": rng.standard_normal((6, 12, 1, 1)).astype(np.float32) * 0.4,
         "e1": rng.standard_normal((10, 6, 1, 1)).astype(np.float32) * 0.4,
         "b1": rng.standard_normal(10).astype(np.float32),
         "e3": rng.standard_normal((7, 6, 3, 3)).astype(np.float32) * 0.2,
         "b3": rng.standard_normal(7).astype(np.float32)}

    def make(g, o):
        stem = g.relu(g.conv2d(o["x"], o["stem"], {"padding": [1] * 4}))
        squeezed = g.relu(g.conv2d(stem, o["sq"]))
        e1 = g.relu(g.conv2d(squeezed, o["e1"], {"bias": o["b1"]}))
        e3 = g.relu(g.conv2d(squeezed, o["e3"], {"bias": o["b3"], "padding": [1] * 4}))
        return {"y": g.concat([e1, e3], 1)}
    plan, _ = build(make, {"x": x}, w)
    assert "conv2d+relu+conv2d+relu+concat" in kinds(plan), kinds(plan)
    got = plan.execute({"x": x})["y"]
    monkeypatch.setattr(fusion, "_concat_parts", lambda *args: None)
    separate, _ = build(make, {"x": x}, w)
    assert "concat" in kinds(separate)
    assert_same_bits(got, separate.execute({"x": x})["y"])
    tw = {k: t64(v) for k, v in w.items()}
    squeezed = F.relu(F.conv2d(F.relu(F.conv2d(t64(x), tw["stem"], padding=1)), tw["sq"]))
    want = torch.cat([F.relu(F.conv2d(squeezed, tw["e1"], tw["b1"])),
                      F.relu(F.conv2d(squeezed, tw["e3"], tw["b3"], padding=1))], 1)
    assert_close(got, want.numpy(), atol=1e-4, what="fire module")
    x2 = rng.standard_normal((1, 3, 13, 13)).astype(np.float32)           # a second dispatch
    assert_same_bits(plan.execute({"x": x2})["y"], separate.execute({"x": x2})["y"])
