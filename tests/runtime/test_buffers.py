"""The plan's reused result buffers (runtime/compiler/__init__.py _buffers, plan.py):
the C kernels' steps write into buffers assigned at build, shared by values whose
lifetimes do not overlap (views included) and reused by every dispatch; graph
outputs never live in them. Results are checked against float64 numpy, and
against a second dispatch with other inputs (a buffer reused too early would mix
the two)."""
import numpy as np

from tests.portable.expect import assert_close
from tests.runtime.test_compiler import build

RNG = np.random.default_rng(11)


def _weights(n, size=16):
    return {f"w{i}": (RNG.standard_normal((size, size)) * 0.3).astype(np.float32) for i in range(n)}


def test_a_chain_of_products_ping_pongs_between_two_buffers_across_dispatches():
    w = _weights(4)

    def make(g, o):
        y = o["x"]
        for i in range(4):
            y = g.relu(g.matmul(y, o[f"w{i}"]))
        return {"y": y}
    plan, _ = build(make, {"x": np.zeros((8, 16), np.float32)}, w)
    steps = [s for s in plan.steps if s.buffer >= 0]
    assert [s.name for s in steps] == ["matmul+relu"] * 3          # the last one is the output
    assert len(plan.buffer_shapes) == 2 and [s.buffer for s in steps] == [0, 1, 0]

    def reference(x):
        y = x.astype(np.float64)
        for i in range(4):
            y = np.maximum(y @ w[f"w{i}"].astype(np.float64), 0)
        return y
    first_x, second_x = (RNG.standard_normal((8, 16)).astype(np.float32) for _ in range(2))
    first = plan.execute({"x": first_x})["y"]
    buffers = list(plan._buffers)
    second = plan.execute({"x": second_x})["y"]
    assert all(a is b for a, b in zip(buffers, plan._buffers))      # the same arrays, reused
    assert_close(first, reference(first_x), atol=1e-4)             # the caller's result is its own
    assert_close(second, reference(second_x), atol=1e-4)
    assert not any(np.shares_memory(second, b) for b in plan._buffers)


def test_a_view_keeps_its_buffer_until_its_own_last_reader():
    # a = x w0 (a buffer), v = reshape(a) (a view of it; fusion.py lets a's step write it),
    # b = reshape(v) w1, c = b w2, s = reshape(c) + v, y = reshape(s) w3: c's step (which
    # takes the add) must not take a's buffer while v is still to be read by that add.
    w = _weights(4)

    def make(g, o):
        a = g.matmul(o["x"], o["w0"])
        v = g.reshape(a, [16, 8])
        b = g.matmul(g.reshape(v, [8, 16]), o["w1"])
        c = g.matmul(b, o["w2"])
        s = g.add(g.reshape(c, [16, 8]), v)
        return {"y": g.matmul(g.reshape(s, [8, 16]), o["w3"])}
    plan, _ = build(make, {"x": np.zeros((8, 16), np.float32)}, w)
    assigned = [s.buffer for s in plan.steps if s.buffer >= 0]
    assert len(set(assigned)) == len(assigned) == 3                 # no sharing while v lives
    for _ in range(2):
        x = RNG.standard_normal((8, 16)).astype(np.float32)
        x64 = x.astype(np.float64)
        a = x64 @ w["w0"]
        c = (a @ w["w1"]) @ w["w2"]
        s = c.reshape(16, 8) + a.reshape(16, 8)
        assert_close(plan.execute({"x": x})["y"], s.reshape(8, 16) @ w["w3"], atol=1e-4)


def test_an_output_that_views_a_buffer_is_copied_out():
    w = _weights(2)

    def make(g, o):
        a = g.matmul(o["x"], o["w0"])
        return {"view": g.reshape(a, [128]), "next": g.matmul(a, o["w1"])}
    plan, _ = build(make, {"x": np.zeros((8, 16), np.float32)}, w)
    x1, x2 = (RNG.standard_normal((8, 16)).astype(np.float32) for _ in range(2))
    first = plan.execute({"x": x1})
    plan.execute({"x": x2})
    assert_close(first["view"], (x1.astype(np.float64) @ w["w0"]).reshape(128), atol=1e-4)
