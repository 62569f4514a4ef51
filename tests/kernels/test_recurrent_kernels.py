"""kernels.c's lstm_sequence_f32 / gru_sequence_f32 (the whole sequence in one C call),
through ops/recurrent.py's float32 path, against torch in float64 and against the numpy
step-by-step path, over layouts, directions, activations, optional operands, batch and
hidden sizes (below, at and above the column blocks: 32, 16, 4 in wasm; 128, 64, 16, 4 with AVX-512
natively), and special values."""
import numpy as np
import pytest
import torch

import webnn_py.kernels
from webnn_py.ops import recurrent

RNG = np.random.default_rng(17)
F64 = torch.float64
ACT = {"relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}


@pytest.fixture(params=["native", "host"])
def c_kernels(request, monkeypatch):
    """Both C builds' GEMMs (the C sgemm, numpy's BLAS + epilogue) for the input parts; counts
    the sequence calls so a test fails if the C loop was not taken."""
    fast = request.getfixturevalue(request.param)
    calls = []

    def counting(name, function):
        def counted(*a, **kw):
            calls.append(name)
            return function(*a, **kw)
        return counted

    class Counting:
        def __getattr__(self, attr):
            method = getattr(fast, attr)
            if attr in ("lstm_sequence", "gru_sequence"):
                return counting(attr, method)
            if attr in ("bind_lstm_sequence", "bind_gru_sequence"):
                # a runner binds the loop once and calls it every run: count the calls
                return lambda *a, **kw: counting(attr[len("bind_"):], method(*a, **kw))
            return method
    monkeypatch.setattr(webnn_py.kernels, "simd", lambda: Counting())
    return calls


def numpy_path(monkeypatch, kernel, inputs, attributes):
    with monkeypatch.context() as m:
        m.setattr(webnn_py.kernels, "simd", lambda: None)
        return kernel(inputs, attributes, None)


def rand(*shape, scale=1.0):
    return RNG.uniform(-scale, scale, shape).astype(np.float32)


def t(a):
    return None if a is None else torch.from_numpy(np.asarray(a, np.float64))


def torch_lstm(x, w, r, b, rb, p, h0, c0, attrs):
    """§8.9.33's decomposition in float64 (i, o, f gates read the incoming cell state's peephole)."""
    hidden = attrs["hidden_size"]
    order = recurrent.LSTM_GATES[attrs["layout"]]
    fa, ga, ha = (ACT[a] for a in attrs["activations"])
    dirs, batch = w.shape[0], x.shape[1]
    seq = torch.zeros((x.shape[0], dirs, batch, hidden), dtype=F64)
    finals = []
    for d in range(dirs):
        h = t(h0[d]) if h0 is not None else torch.zeros((batch, hidden), dtype=F64)
        c = t(c0[d]) if c0 is not None else torch.zeros((batch, hidden), dtype=F64)
        steps = range(x.shape[0] - 1, -1, -1) if d == 1 or attrs["direction"] == "backward" else range(x.shape[0])
        for s in steps:
            g = t(x[s]) @ t(w[d]).T + h @ t(r[d]).T
            if b is not None:
                g = g + t(b[d])
            if rb is not None:
                g = g + t(rb[d])
            gate = {name: g[:, k * hidden:(k + 1) * hidden] for k, name in enumerate(order)}
            peep = t(p[d]) if p is not None else torch.zeros(3 * hidden, dtype=F64)
            i = fa(gate["i"] + c * peep[:hidden])
            o = fa(gate["o"] + c * peep[hidden:2 * hidden])
            f = fa(gate["f"] + c * peep[2 * hidden:])
            c = f * c + i * ga(gate["g"])
            h = o * ha(c)
            seq[s, d] = h
        finals.append((h, c))
    return [torch.stack([f[0] for f in finals]).numpy(), torch.stack([f[1] for f in finals]).numpy(), seq.numpy()]


def torch_gru(x, w, r, b, rb, h0, attrs):
    """§8.9.25's decomposition in float64."""
    hidden = attrs["hidden_size"]
    order = recurrent.GRU_GATES[attrs["layout"]]
    fa, ga = (ACT[a] for a in attrs["activations"])
    dirs, batch = w.shape[0], x.shape[1]
    seq = torch.zeros((x.shape[0], dirs, batch, hidden), dtype=F64)
    finals = []
    for d in range(dirs):
        h = t(h0[d]) if h0 is not None else torch.zeros((batch, hidden), dtype=F64)
        sl = {name: slice(k * hidden, (k + 1) * hidden) for k, name in enumerate(order)}
        bias = t(b[d]) if b is not None else torch.zeros(3 * hidden, dtype=F64)
        rbias = t(rb[d]) if rb is not None else torch.zeros(3 * hidden, dtype=F64)
        steps = range(x.shape[0] - 1, -1, -1) if d == 1 or attrs["direction"] == "backward" else range(x.shape[0])
        for s in steps:
            xw = t(x[s]) @ t(w[d]).T + bias
            rw = t(r[d])
            z = fa(xw[:, sl["z"]] + rbias[sl["z"]] + h @ rw[sl["z"]].T)
            rr = fa(xw[:, sl["r"]] + rbias[sl["r"]] + h @ rw[sl["r"]].T)
            if attrs["reset_after"]:
                n = ga(xw[:, sl["n"]] + rr * (h @ rw[sl["n"]].T + rbias[sl["n"]]))
            else:
                n = ga(xw[:, sl["n"]] + rbias[sl["n"]] + (rr * h) @ rw[sl["n"]].T)
            h = z * h + (1 - z) * n
            seq[s, d] = h
        finals.append(h)
    return [torch.stack(finals).numpy(), seq.numpy()]


LSTM_CASES = [  # (steps, batch, input, hidden, direction, layout, activations, optional operands present)
    (5, 1, 4, 16, "forward", "iofg", ("sigmoid", "tanh", "tanh"), True),
    (7, 3, 6, 5, "backward", "ifgo", ("sigmoid", "tanh", "tanh"), False),
    (4, 2, 3, 33, "both", "iofg", ("relu", "tanh", "sigmoid"), True),
    (3, 2, 8, 1, "both", "ifgo", ("tanh", "relu", "relu"), False),
    (32, 1, 64, 128, "forward", "iofg", ("sigmoid", "tanh", "tanh"), True),
]


@pytest.mark.parametrize("case", LSTM_CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[2]}->{c[3]}-{c[4]}-{c[5]}")
def test_lstm_sequence_against_torch_and_numpy(case, c_kernels, monkeypatch):
    steps, batch, inp, hidden, direction, layout, activations, optional = case
    dirs = 2 if direction == "both" else 1
    x, w, r = rand(steps, batch, inp), rand(dirs, 4 * hidden, inp, scale=0.5), rand(dirs, 4 * hidden, hidden, scale=0.5)
    b, rb, p = ((rand(dirs, 4 * hidden), rand(dirs, 4 * hidden), rand(dirs, 3 * hidden)) if optional
                else (None, None, None))
    h0, c0 = (rand(dirs, batch, hidden), rand(dirs, batch, hidden)) if optional else (None, None)
    attrs = {"steps": steps, "hidden_size": hidden, "direction": direction, "layout": layout,
             "return_sequence": True, "activations": activations}
    inputs = [x, w, r, b, rb, p, h0, c0]
    got = recurrent.lstm_kernel(inputs, attrs, None)
    assert c_kernels == ["lstm_sequence"] * dirs
    expected = torch_lstm(x, w, r, b, rb, p, h0, c0, attrs)
    stepwise = numpy_path(monkeypatch, recurrent.lstm_kernel, inputs, attrs)
    for g, e, n, what in zip(got, expected, stepwise, ("hidden", "cell", "sequence")):
        assert g.dtype == np.float32 and g.shape == e.shape, what
        np.testing.assert_allclose(g, e, rtol=2e-6 * steps, atol=1e-5 * steps, err_msg=f"{what} vs torch")
        np.testing.assert_allclose(g, n, rtol=2e-6 * steps, atol=1e-5 * steps, err_msg=f"{what} vs numpy steps")


# optional: True (bias, recurrentBias, initialHiddenState), False (none), or "recurrent_bias"
# (recurrentBias alone: the runner's input GEMM gets its bias from recurrentBias only).
GRU_CASES = [  # (steps, batch, input, hidden, direction, layout, reset_after, activations, optional)
    (5, 1, 4, 16, "forward", "zrn", True, ("sigmoid", "tanh"), True),
    (6, 2, 5, 7, "backward", "rzn", False, ("sigmoid", "tanh"), True),
    (4, 3, 3, 20, "both", "zrn", False, ("relu", "tanh"), False),
    (3, 1, 2, 1, "both", "rzn", True, ("tanh", "relu"), False),
    (4, 2, 3, 9, "forward", "rzn", True, ("sigmoid", "tanh"), "recurrent_bias"),
    (4, 2, 3, 9, "both", "zrn", False, ("sigmoid", "tanh"), "recurrent_bias"),
    (32, 1, 64, 128, "forward", "zrn", True, ("sigmoid", "tanh"), True),
]


@pytest.mark.parametrize("case", GRU_CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[2]}->{c[3]}-{c[4]}-{c[5]}-{c[6]}")
def test_gru_sequence_against_torch_and_numpy(case, c_kernels, monkeypatch):
    steps, batch, inp, hidden, direction, layout, reset_after, activations, optional = case
    dirs = 2 if direction == "both" else 1
    x, w, r = rand(steps, batch, inp), rand(dirs, 3 * hidden, inp, scale=0.5), rand(dirs, 3 * hidden, hidden, scale=0.5)
    b = rand(dirs, 3 * hidden) if optional is True else None
    rb = rand(dirs, 3 * hidden) if optional else None
    h0 = rand(dirs, batch, hidden) if optional is True else None
    attrs = {"steps": steps, "hidden_size": hidden, "direction": direction, "layout": layout,
             "reset_after": reset_after, "return_sequence": True, "activations": activations}
    inputs = [x, w, r, b, rb, h0]
    got = recurrent.gru_kernel(inputs, attrs, None)
    assert c_kernels == ["gru_sequence"] * dirs
    expected = torch_gru(x, w, r, b, rb, h0, attrs)
    stepwise = numpy_path(monkeypatch, recurrent.gru_kernel, inputs, attrs)
    for g, e, n, what in zip(got, expected, stepwise, ("hidden", "sequence")):
        assert g.dtype == np.float32 and g.shape == e.shape, what
        np.testing.assert_allclose(g, e, rtol=2e-6 * steps, atol=1e-5 * steps, err_msg=f"{what} vs torch")
        np.testing.assert_allclose(g, n, rtol=2e-6 * steps, atol=1e-5 * steps, err_msg=f"{what} vs numpy steps")


def test_activations_of_special_values(c_kernels):
    """Saturation, infinities and NaN through one LSTM step whose gates are exactly the bias
    (zero input and weights, so no inf * 0 in the products): sigmoid(±inf) = 1 / 0,
    tanh(±inf) = ±1, tiny values keep their magnitude, NaN stays NaN. Each activation is
    within 3 ULP of float64 (kernels.c sigmoid4 / tanh4); c and h are products of two and
    of three of them: within 8 and 12 ULP (relative 2^-23 per ULP)."""
    hidden = 8
    values = np.array([np.inf, -np.inf, 1e-30, -0.0, 40.0, -40.0, 3e-4, np.nan], np.float32)
    zeros_w = np.zeros((1, 4 * hidden, hidden), np.float32)
    x = np.zeros((1, 1, hidden), np.float32)

    def one_step(activations):
        attrs = {"steps": 1, "hidden_size": hidden, "direction": "forward", "layout": "iofg",
                 "return_sequence": False, "activations": activations}
        bias = np.tile(values, 4)[None]
        return recurrent.lstm_kernel([x, zeros_w, zeros_w, bias, None, None, None, None], attrs, None)

    v = t(values)
    h, c = one_step(("sigmoid", "tanh", "tanh"))
    cell = torch.sigmoid(v) * torch.tanh(v)            # c0 = 0: c = sigmoid(i) tanh(g)
    np.testing.assert_allclose(c.ravel(), cell.numpy().astype(np.float32), rtol=8 * 2 ** -23, atol=0)
    np.testing.assert_allclose(h.ravel(), (torch.sigmoid(v) * torch.tanh(cell)).numpy().astype(np.float32),
                               rtol=12 * 2 ** -23, atol=0)
    h, c = one_step(("tanh", "relu", "relu"))
    cell = torch.tanh(v) * torch.relu(v)
    np.testing.assert_allclose(c.ravel(), cell.numpy().astype(np.float32), rtol=4 * 2 ** -23, atol=0)
    assert c_kernels == ["lstm_sequence"] * 2


def test_recurrent_activations_within_3_ulp_over_a_dense_sweep(c_kernels):
    """sigmoid and tanh of the C loop (one LSTM step: c = sigmoid(i) * act(g) with i = +inf,
    so c is act(g) itself) against float64, over [-20, 20] and tiny magnitudes."""
    hidden = 4001
    values = np.concatenate([np.linspace(-20, 20, hidden - 6, dtype=np.float32),
                             np.array([1e-30, -1e-30, 1e-6, -1e-6, 3e-3, -3e-3], np.float32)])
    zeros_w = np.zeros((1, 4 * hidden, hidden), np.float32)
    x = np.zeros((1, 1, hidden), np.float32)
    bias = np.concatenate([np.full(hidden, np.inf, np.float32), np.zeros(2 * hidden, np.float32), values])[None]
    for name, exact in (("sigmoid", torch.sigmoid), ("tanh", torch.tanh)):
        attrs = {"steps": 1, "hidden_size": hidden, "direction": "forward", "layout": "iofg",
                 "return_sequence": False, "activations": ("sigmoid", name, "tanh")}
        _, c = recurrent.lstm_kernel([x, zeros_w, zeros_w, bias, None, None, None, None], attrs, None)
        want = exact(torch.from_numpy(values.astype(np.float64))).numpy().astype(np.float32)
        ordered = [np.where(a.view(np.int32) < 0, -(a.view(np.int32) & 0x7FFFFFFF), a.view(np.int32)).astype(np.int64)
                   for a in (c.ravel(), want)]
        assert np.max(np.abs(ordered[0] - ordered[1])) <= 3, name


def test_prepared_runners_reused_across_runs(c_kernels):
    """lstm_runner / gru_runner as the compiler's specialisation keeps them (weights laid out
    once, working memory made at the first run and reused): run after run with new inputs, with
    and without initial states, both directions, a new batch size in between, and an earlier
    run's outputs kept by the caller -- each run against torch, and no run changes what an
    earlier one returned."""
    hidden, inp, steps = 9, 5, 4
    w, r = rand(2, 4 * hidden, inp, scale=0.5), rand(2, 4 * hidden, hidden, scale=0.5)
    b, rb, p = rand(2, 4 * hidden), rand(2, 4 * hidden), rand(2, 3 * hidden)
    attrs = {"steps": steps, "hidden_size": hidden, "direction": "both", "layout": "ifgo",
             "return_sequence": True, "activations": ("sigmoid", "tanh", "tanh")}
    run = recurrent.lstm_runner(w, r, b, rb, p, attrs)
    gw, gr, gb = rand(2, 3 * hidden, inp, scale=0.5), rand(2, 3 * hidden, hidden, scale=0.5), rand(2, 3 * hidden)
    gattrs = {"steps": steps, "hidden_size": hidden, "direction": "both", "layout": "zrn", "reset_after": False,
              "return_sequence": True, "activations": ("sigmoid", "tanh")}
    grun = recurrent.gru_runner(gw, gr, gb, None, gattrs)
    kept = []
    for batch, with_states in ((2, True), (2, False), (3, True), (2, True)):
        x = rand(steps, batch, inp)
        h0, c0 = (rand(2, batch, hidden), rand(2, batch, hidden)) if with_states else (None, None)
        got, gru_got = run(x, h0, c0), grun(x, h0)
        for g, e in zip(got + gru_got, torch_lstm(x, w, r, b, rb, p, h0, c0, attrs) + torch_gru(x, gw, gr, gb, None, h0, gattrs)):
            np.testing.assert_allclose(g, e, rtol=2e-6 * steps, atol=1e-5 * steps)
        kept.append(([a.copy() for a in got + gru_got], got + gru_got))
    for copies, arrays in kept:
        for copy, array in zip(copies, arrays):
            np.testing.assert_array_equal(array, copy)
    assert c_kernels == ["lstm_sequence", "lstm_sequence", "gru_sequence", "gru_sequence"] * 4


def test_runners_take_strided_inputs_and_states(c_kernels):
    """The runners copy x and the initial states into their bound working memory: views with
    any strides (x's steps last in memory, reversed features; states read through a transpose)
    give torch's results for the same values, run after run with the same bound calls."""
    hidden, inp, steps, batch = 6, 5, 4, 3
    w, r = rand(1, 4 * hidden, inp, scale=0.5), rand(1, 4 * hidden, hidden, scale=0.5)
    gw, gr = rand(1, 3 * hidden, inp, scale=0.5), rand(1, 3 * hidden, hidden, scale=0.5)
    attrs = {"steps": steps, "hidden_size": hidden, "direction": "forward", "layout": "iofg",
             "return_sequence": True, "activations": ("sigmoid", "tanh", "tanh")}
    gattrs = {"steps": steps, "hidden_size": hidden, "direction": "forward", "layout": "zrn", "reset_after": True,
              "return_sequence": True, "activations": ("sigmoid", "tanh")}
    run, grun = recurrent.lstm_runner(w, r, None, None, None, attrs), recurrent.gru_runner(gw, gr, None, None, gattrs)
    for _ in range(2):
        x = np.moveaxis(rand(batch, inp, steps), 2, 0)[:, :, ::-1]           # [steps, batch, inp], strided
        h0, c0 = rand(hidden, batch, 1).T, rand(hidden, batch, 1).T           # [1, batch, hidden] transposes
        assert not (x.flags.c_contiguous or h0.flags.c_contiguous)
        want = torch_lstm(np.ascontiguousarray(x), w, r, None, None, None, h0, c0, attrs)
        gwant = torch_gru(np.ascontiguousarray(x), gw, gr, None, None, h0, gattrs)
        for g, e in zip(run(x, h0, c0) + grun(x, h0), want + gwant):
            np.testing.assert_allclose(g, e, rtol=2e-6 * steps, atol=1e-5 * steps)
    assert c_kernels == ["lstm_sequence", "gru_sequence"] * 2


@pytest.mark.parametrize("kernel", ["lstm", "gru"])
def test_runners_hand_the_c_calls_cache_line_aligned_arrays(kernel, c_kernels, monkeypatch):
    """Every array the runners bind to their C calls (Wᵀ, Rᵀ, biases, peepholes, x, the input
    parts, gates, states, sequence) starts on a 64-byte line, whatever the allocator gave
    (ops/recurrent.py _empty: a straddling SIMD load cost the zoo's lstm up to 15 %); the
    second direction's states and sequence are views 64 bytes (batch 2 x hidden 8 floats)
    in. The results still match torch."""
    fast = webnn_py.kernels.simd()
    seen = []

    def recording(method):
        def bind(*args, **kwargs):
            seen.extend(a for a in (*args, *kwargs.values()) if isinstance(a, np.ndarray))
            return method(*args, **kwargs)
        return bind

    class Recording:
        def __getattr__(self, attr):
            method = getattr(fast, attr)
            return recording(method) if attr.startswith("bind_") else method
    monkeypatch.setattr(webnn_py.kernels, "simd", lambda: Recording())
    hidden, inp, steps, batch = 8, 5, 3, 2
    x, h0 = rand(steps, batch, inp), rand(2, batch, hidden)
    if kernel == "lstm":
        w, r = rand(2, 4 * hidden, inp, scale=0.5), rand(2, 4 * hidden, hidden, scale=0.5)
        b, p, c0 = rand(2, 4 * hidden), rand(2, 3 * hidden), rand(2, batch, hidden)
        attrs = {"steps": steps, "hidden_size": hidden, "direction": "both", "layout": "iofg",
                 "return_sequence": True, "activations": ("sigmoid", "tanh", "tanh")}
        got = recurrent.lstm_runner(w, r, b, None, p, attrs)(x, h0, c0)
        want = torch_lstm(x, w, r, b, None, p, h0, c0, attrs)
    else:
        w, r = rand(2, 3 * hidden, inp, scale=0.5), rand(2, 3 * hidden, hidden, scale=0.5)
        b, rb = rand(2, 3 * hidden), rand(2, 3 * hidden)
        attrs = {"steps": steps, "hidden_size": hidden, "direction": "both", "layout": "zrn", "reset_after": True,
                 "return_sequence": True, "activations": ("sigmoid", "tanh")}
        got = recurrent.gru_runner(w, r, b, rb, attrs)(x, h0)
        want = torch_gru(x, w, r, b, rb, h0, attrs)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=2e-6 * steps, atol=1e-5 * steps)
    assert len(seen) >= 10
    misaligned = [a.shape for a in seen if a.__array_interface__["data"][0] % 64]
    assert not misaligned, misaligned
