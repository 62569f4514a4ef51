"""Recurrent networks: gru (§8.9.25), gruCell (§8.9.26), lstm (§8.9.33), lstmCell (§8.9.34).

Each builder call is one graph node; the kernel runs every time step (and both
directions) itself, following the math of the spec's non-normative
decompositions. Gates are sliced out of the packed weight/bias tensors by the
`layout` option; the activations default to the spec's sigmoid/tanh(/tanh).

float32 lstm and gru run in the C kernels when they are there (webnn_py.kernels:
WebAssembly in Pyodide, the native build on the host): the input parts of all time
steps as one GEMM up front, then each direction's whole sequence in one C call
(kernels.c lstm_sequence_f32 / gru_sequence_f32), the same float32 operations in
the decomposition's order, sigmoid and tanh within 3 float32 ULP of the exact values. With constant
weights (a model's), specialise.py prepares them once at build() (`lstm_runner`,
`gru_runner`); otherwise each call prepares them.
"""
from __future__ import annotations

import numpy as np

from .. import kernels
from ..base.descriptor import MAX_DIMENSION, OperandDescriptor
from .registry import FLOATS, BuildContext, TensorLimits, compute_type, register

# Gate order of the packed second (network) / first (cell) dimension, by layout.
GRU_GATES = {"zrn": ("z", "r", "n"), "rzn": ("r", "z", "n")}
LSTM_GATES = {"iofg": ("i", "o", "f", "g"), "ifgo": ("i", "f", "g", "o")}
# peepholeWeight is packed i, o, f whatever the layout (§8.9.33/§8.9.34 option text,
# and the decomposition's slices at 0, hiddenSize, 2 * hiddenSize).
PEEPHOLE_GATES = ("i", "o", "f")

GRU_DEFAULT_ACTIVATIONS = ("sigmoid", "tanh")
LSTM_DEFAULT_ACTIVATIONS = ("sigmoid", "tanh", "tanh")


def _limits(**ranks: int) -> dict[str, TensorLimits]:
    # Every operand of these tables is "float32"/"float16" (input) or "same as input".
    return {name: TensorLimits(FLOATS, rank, rank) for name, rank in ranks.items()}


GRU_LIMITS = _limits(input=3, weight=3, recurrentWeight=3, bias=2, recurrentBias=2, initialHiddenState=3,
                     output0=3, output1=4)
# The spec's gruCell table has no hiddenState row although steps 3-4 check its data
# type and rank "according to this table"; its shape check (step 9) makes it a 2-D
# tensor of the input's type, which is what we report and enforce.
GRU_CELL_LIMITS = _limits(input=2, weight=2, recurrentWeight=2, hiddenState=2, bias=1, recurrentBias=1, output=2)
LSTM_LIMITS = _limits(input=3, weight=3, recurrentWeight=3, bias=2, recurrentBias=2, peepholeWeight=2,
                      initialHiddenState=3, initialCellState=3, output0=3, output1=3, output2=4)
LSTM_CELL_LIMITS = _limits(input=2, weight=2, recurrentWeight=2, hiddenState=2, cellState=2, bias=1,
                           recurrentBias=1, peepholeWeight=1, output0=2, output1=2)


# -- validation helpers (the steps shared by the four algorithms) ----------------------------

def _descriptors(ctx: BuildContext, operands: dict) -> dict[str, OperandDescriptor]:
    """Step 2: "validate operand" for every operand given (absent options are skipped)."""
    return {name: ctx.descriptor(op) for name, op in operands.items() if op is not None}


def _check_types(ctx: BuildContext, descs: dict[str, OperandDescriptor], names) -> None:
    """The data-type step: input must be float32/float16, the others "same as input"."""
    first = descs["input"]
    if first.data_type not in FLOATS:
        ctx.fail(f"input has data type {first.data_type}; allowed: {', '.join(FLOATS)}")
    for name in names:
        if name != "input":
            ctx.same_type(name, descs[name], "input", first)


def _check_ranks(ctx: BuildContext, descs: dict[str, OperandDescriptor], names, limits) -> None:
    for name in names:
        want = limits[name].min_rank
        if descs[name].rank != want:
            ctx.fail(f"{name} has rank {descs[name].rank} (shape {list(descs[name].shape)}); allowed: {want}")


def _check_shape(ctx: BuildContext, name: str, desc: OperandDescriptor, shape: tuple[int, ...]) -> None:
    if desc.shape != tuple(shape):
        ctx.fail(f"{name} has shape {list(desc.shape)}; expected {list(shape)}")


def _check_optional(ctx: BuildContext, descs, name: str, shape: tuple[int, ...]) -> None:
    """The "if options.X exists" steps: data type same as input, then the exact shape."""
    if name in descs:
        ctx.same_type(name, descs[name], "input", descs["input"])
        _check_shape(ctx, name, descs[name], shape)


def _check_combined_bias(ctx: BuildContext, hidden_size: int, gates: int) -> None:
    # Some platforms concatenate bias and recurrentBias, so 2 * gates * hiddenSize
    # must itself be a valid dimension (the spec's note under this step).
    if not 0 < hidden_size * 2 * gates <= MAX_DIMENSION:
        ctx.fail(f"hiddenSize * {2 * gates} = {hidden_size * 2 * gates} is not a valid dimension "
                 f"(1 to {MAX_DIMENSION})")


def _activations(ctx: BuildContext, options: dict, default: tuple[str, ...]) -> list[str]:
    if "activations" in options:
        given = list(options["activations"])
        if len(given) != len(default):
            ctx.fail(f"activations has {len(given)} entries; expected {len(default)}")
        return given
    return list(default)


def _options_operands(options: dict, names) -> dict:
    return {name: options.get(name) for name in names}


# -- gru (§8.9.25) ------------------------------------------------------------------------

GRU_OPTIONAL = ("bias", "recurrentBias", "initialHiddenState")


def build_gru(ctx: BuildContext, input, weight, recurrent_weight, steps: int, hidden_size: int, options: dict):
    """§8.9.25 gru(input, weight, recurrentWeight, steps, hiddenSize, options), steps 2-19."""
    descs = _descriptors(ctx, {"input": input, "weight": weight, "recurrentWeight": recurrent_weight,
                               **_options_operands(options, GRU_OPTIONAL)})
    required = ("input", "weight", "recurrentWeight")
    _check_types(ctx, descs, required)                                     # step 3
    _check_ranks(ctx, descs, required, GRU_LIMITS)                         # step 4
    in_shape = descs["input"].shape
    if in_shape[0] != steps:                                               # step 5
        ctx.fail(f"input's shape[0] {in_shape[0]} is not steps {steps}")
    batch_size, input_size = in_shape[1], in_shape[2]                      # steps 6-7
    direction = options.get("direction", "forward")
    num_directions = 2 if direction == "both" else 1                       # step 8
    _check_shape(ctx, "weight", descs["weight"], (num_directions, 3 * hidden_size, input_size))          # 9
    _check_shape(ctx, "recurrentWeight", descs["recurrentWeight"],
                 (num_directions, 3 * hidden_size, hidden_size))                                         # 10
    _check_combined_bias(ctx, hidden_size, 3)                                                            # 11
    _check_optional(ctx, descs, "bias", (num_directions, 3 * hidden_size))                               # 12
    _check_optional(ctx, descs, "recurrentBias", (num_directions, 3 * hidden_size))                      # 13
    _check_optional(ctx, descs, "initialHiddenState", (num_directions, batch_size, hidden_size))         # 14
    activations = _activations(ctx, options, GRU_DEFAULT_ACTIVATIONS)                                    # 15-16
    dtype = descs["input"].data_type
    return_sequence = bool(options.get("returnSequence", False))
    outputs = [OperandDescriptor(dtype, (num_directions, batch_size, hidden_size))]                      # 17
    if return_sequence:
        outputs.append(OperandDescriptor(dtype, (steps, num_directions, batch_size, hidden_size)))
    attributes = {"steps": steps, "hidden_size": hidden_size, "direction": direction,
                  "layout": options.get("layout", "zrn"), "reset_after": bool(options.get("resetAfter", True)),
                  "return_sequence": return_sequence, "activations": tuple(activations)}
    return ctx.emit([input, weight, recurrent_weight, *(options.get(n) for n in GRU_OPTIONAL)],
                    outputs, attributes)


def build_gru_cell(ctx: BuildContext, input, weight, recurrent_weight, hidden_state, hidden_size: int,
                   options: dict):
    """§8.9.26 gruCell(input, weight, recurrentWeight, hiddenState, hiddenSize, options), steps 2-17."""
    descs = _descriptors(ctx, {"input": input, "weight": weight, "recurrentWeight": recurrent_weight,
                               "hiddenState": hidden_state,
                               **_options_operands(options, ("bias", "recurrentBias"))})
    required = ("input", "weight", "recurrentWeight", "hiddenState")
    _check_types(ctx, descs, required)                                     # step 3
    _check_ranks(ctx, descs, required, GRU_CELL_LIMITS)                    # step 4
    batch_size, input_size = descs["input"].shape                          # steps 5-6
    _check_shape(ctx, "weight", descs["weight"], (3 * hidden_size, input_size))                          # 7
    _check_shape(ctx, "recurrentWeight", descs["recurrentWeight"], (3 * hidden_size, hidden_size))       # 8
    _check_shape(ctx, "hiddenState", descs["hiddenState"], (batch_size, hidden_size))                    # 9
    _check_combined_bias(ctx, hidden_size, 3)                                                            # 10
    _check_optional(ctx, descs, "bias", (3 * hidden_size,))                                              # 11
    _check_optional(ctx, descs, "recurrentBias", (3 * hidden_size,))                                     # 12
    activations = _activations(ctx, options, GRU_DEFAULT_ACTIVATIONS)                                    # 13-14
    output = OperandDescriptor(descs["input"].data_type, (batch_size, hidden_size))                      # 15
    attributes = {"hidden_size": hidden_size, "layout": options.get("layout", "zrn"),
                  "reset_after": bool(options.get("resetAfter", True)), "activations": tuple(activations)}
    return ctx.emit([input, weight, recurrent_weight, hidden_state, options.get("bias"),
                     options.get("recurrentBias")], [output], attributes)[0]


# -- lstm (§8.9.33) -----------------------------------------------------------------------

LSTM_OPTIONAL = ("bias", "recurrentBias", "peepholeWeight", "initialHiddenState", "initialCellState")


def build_lstm(ctx: BuildContext, input, weight, recurrent_weight, steps: int, hidden_size: int, options: dict):
    """§8.9.33 lstm(input, weight, recurrentWeight, steps, hiddenSize, options), steps 2-22."""
    descs = _descriptors(ctx, {"input": input, "weight": weight, "recurrentWeight": recurrent_weight,
                               **_options_operands(options, LSTM_OPTIONAL)})
    direction = options.get("direction", "forward")
    num_directions = 2 if direction == "both" else 1                       # step 3
    required = ("input", "weight", "recurrentWeight")
    _check_types(ctx, descs, required)                                     # step 4
    _check_ranks(ctx, descs, required, LSTM_LIMITS)                        # step 5
    if steps == 0:                                                         # step 6
        ctx.fail("steps is 0")
    in_shape = descs["input"].shape
    if in_shape[0] != steps:                                               # step 7
        ctx.fail(f"input's shape[0] {in_shape[0]} is not steps {steps}")
    batch_size, input_size = in_shape[1], in_shape[2]                      # steps 8-9
    _check_shape(ctx, "weight", descs["weight"], (num_directions, 4 * hidden_size, input_size))          # 10
    _check_shape(ctx, "recurrentWeight", descs["recurrentWeight"],
                 (num_directions, 4 * hidden_size, hidden_size))                                         # 11
    _check_combined_bias(ctx, hidden_size, 4)                                                            # 12
    _check_optional(ctx, descs, "bias", (num_directions, 4 * hidden_size))                               # 13
    _check_optional(ctx, descs, "recurrentBias", (num_directions, 4 * hidden_size))                      # 14
    _check_optional(ctx, descs, "peepholeWeight", (num_directions, 3 * hidden_size))                     # 15
    _check_optional(ctx, descs, "initialHiddenState", (num_directions, batch_size, hidden_size))         # 16
    _check_optional(ctx, descs, "initialCellState", (num_directions, batch_size, hidden_size))           # 17
    activations = _activations(ctx, options, LSTM_DEFAULT_ACTIVATIONS)                                   # 18-19
    dtype = descs["input"].data_type
    return_sequence = bool(options.get("returnSequence", False))
    state = OperandDescriptor(dtype, (num_directions, batch_size, hidden_size))                          # 20
    outputs = [state, state]
    if return_sequence:
        outputs.append(OperandDescriptor(dtype, (steps, num_directions, batch_size, hidden_size)))
    attributes = {"steps": steps, "hidden_size": hidden_size, "direction": direction,
                  "layout": options.get("layout", "iofg"), "return_sequence": return_sequence,
                  "activations": tuple(activations)}
    return ctx.emit([input, weight, recurrent_weight, *(options.get(n) for n in LSTM_OPTIONAL)],
                    outputs, attributes)


def build_lstm_cell(ctx: BuildContext, input, weight, recurrent_weight, hidden_state, cell_state,
                    hidden_size: int, options: dict):
    """§8.9.34 lstmCell(input, weight, recurrentWeight, hiddenState, cellState, hiddenSize, options), steps 2-21."""
    optional = ("bias", "recurrentBias", "peepholeWeight")
    descs = _descriptors(ctx, {"input": input, "weight": weight, "recurrentWeight": recurrent_weight,
                               "hiddenState": hidden_state, "cellState": cell_state,
                               **_options_operands(options, optional)})
    required = ("input", "weight", "recurrentWeight", "hiddenState", "cellState")
    _check_types(ctx, descs, required)                                     # step 3
    _check_ranks(ctx, descs, required, LSTM_CELL_LIMITS)                   # step 4
    batch_size, input_size = descs["input"].shape                          # steps 5-6
    _check_shape(ctx, "weight", descs["weight"], (4 * hidden_size, input_size))                          # 7
    _check_shape(ctx, "recurrentWeight", descs["recurrentWeight"], (4 * hidden_size, hidden_size))       # 8
    _check_shape(ctx, "hiddenState", descs["hiddenState"], (batch_size, hidden_size))                    # 9
    _check_shape(ctx, "cellState", descs["cellState"], (batch_size, hidden_size))                        # 10
    _check_combined_bias(ctx, hidden_size, 4)                                                            # 11
    _check_optional(ctx, descs, "bias", (4 * hidden_size,))                                              # 12
    _check_optional(ctx, descs, "recurrentBias", (4 * hidden_size,))                                     # 13
    _check_optional(ctx, descs, "peepholeWeight", (3 * hidden_size,))                                    # 14
    activations = _activations(ctx, options, LSTM_DEFAULT_ACTIVATIONS)                                   # 15-16
    state = OperandDescriptor(descs["input"].data_type, (batch_size, hidden_size))                       # 17-19
    attributes = {"hidden_size": hidden_size, "layout": options.get("layout", "iofg"),
                  "activations": tuple(activations)}
    return ctx.emit([input, weight, recurrent_weight, hidden_state, cell_state,
                     *(options.get(n) for n in optional)], [state, state], attributes)


# -- kernels --------------------------------------------------------------------------------

def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-x) overflows to inf for very negative x, giving the correct limit 0.
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


ACTIVATIONS = {"relu": _relu, "sigmoid": _sigmoid, "tanh": np.tanh}


def _gate_slices(order: tuple[str, ...], hidden_size: int) -> dict[str, slice]:
    return {gate: slice(k * hidden_size, (k + 1) * hidden_size) for k, gate in enumerate(order)}


def _or_zeros(array: np.ndarray | None, shape, dtype) -> np.ndarray:
    return np.zeros(shape, dtype) if array is None else array.astype(dtype, copy=False)


def _gru_biases(bias, recurrent_bias, hidden_size: int, n: slice, reset_after: bool, dtype):
    """(bias + recurrentBias, added once for the input part, and rb_n or None): §8.9.26's
    decomposition adds the two biases of z and r (and of n without resetAfter) to each other
    before the products; with resetAfter n's recurrentBias is inside r's product,
    r ⊙ (h · Rnᵀ + Rbn), so it stays out of the sum (zero there) and is returned apart."""
    recurrent = _or_zeros(recurrent_bias, (3 * hidden_size,), dtype)
    rb_n = None
    if reset_after and recurrent_bias is not None:
        rb_n = recurrent[n].copy()
        recurrent = recurrent.copy()
        recurrent[n] = 0
    return _or_zeros(bias, (3 * hidden_size,), dtype) + recurrent, rb_n


class _GruDirection:
    """One direction's parameters of a GRU, in compute precision (§8.9.26's math)."""

    def __init__(self, weight, recurrent_weight, bias, recurrent_bias, hidden_size, layout, reset_after,
                 activations, dtype):
        self.g = _gate_slices(GRU_GATES[layout], hidden_size)
        self.weight_t = weight.astype(dtype, copy=False).T                   # [inputSize, 3H]
        self.recurrent_t = recurrent_weight.astype(dtype, copy=False).T      # [H, 3H]
        self.bias, rb_n = _gru_biases(bias, recurrent_bias, hidden_size, self.g["n"], reset_after, dtype)
        self.rb_n = _or_zeros(rb_n, (hidden_size,), dtype)
        self.reset_after = reset_after
        self.f, self.g_act = (ACTIVATIONS[a] for a in activations)

    def input_part(self, x: np.ndarray) -> np.ndarray:
        """input · Wᵀ + (bias + recurrentBias) (but Rbn with resetAfter), for any leading
        dimensions (all time steps at once)."""
        return x @ self.weight_t + self.bias

    def step(self, x_part: np.ndarray, h: np.ndarray) -> np.ndarray:
        g = self.g
        # z and r need h · Rᵀ for their gates; n's recurrent product depends on resetAfter.
        z = self.f(x_part[:, g["z"]] + h @ self.recurrent_t[:, g["z"]])
        r = self.f(x_part[:, g["r"]] + h @ self.recurrent_t[:, g["r"]])
        rn = self.recurrent_t[:, g["n"]]
        if self.reset_after:
            # reset applied after the recurrent matmul: r ⊙ (h · Rnᵀ + Rbn)
            n = self.g_act(x_part[:, g["n"]] + r * (h @ rn + self.rb_n))
        else:
            # reset applied before it: (r ⊙ h) · Rnᵀ, Rbn in the input part
            n = self.g_act(x_part[:, g["n"]] + (r * h) @ rn)
        return z * h + (1 - z) * n


class _LstmDirection:
    """One direction's parameters of an LSTM, in compute precision (§8.9.34's math)."""

    def __init__(self, weight, recurrent_weight, bias, recurrent_bias, peephole, hidden_size, layout,
                 activations, dtype):
        self.g = _gate_slices(LSTM_GATES[layout], hidden_size)
        self.weight_t = weight.astype(dtype, copy=False).T                   # [inputSize, 4H]
        self.recurrent_t = recurrent_weight.astype(dtype, copy=False).T      # [H, 4H]
        self.bias = (_or_zeros(bias, (4 * hidden_size,), dtype)
                     + _or_zeros(recurrent_bias, (4 * hidden_size,), dtype))
        p = _gate_slices(PEEPHOLE_GATES, hidden_size)
        peephole = _or_zeros(peephole, (3 * hidden_size,), dtype)
        self.peephole = {gate: peephole[p[gate]] for gate in PEEPHOLE_GATES}
        self.f, self.g_act, self.h_act = (ACTIVATIONS[a] for a in activations)

    def input_part(self, x: np.ndarray) -> np.ndarray:
        """input · Wᵀ + bias + recurrentBias, for any leading dimensions (all time steps at once)."""
        return x @ self.weight_t + self.bias

    def step(self, x_part: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g, p = self.g, self.peephole
        gates = x_part + h @ self.recurrent_t
        # The peepholes of all three gates, the output gate's included, read the
        # incoming cell state, as the spec's decomposition does.
        i = self.f(gates[:, g["i"]] + c * p["i"])
        f = self.f(gates[:, g["f"]] + c * p["f"])
        o = self.f(gates[:, g["o"]] + c * p["o"])
        cell = self.g_act(gates[:, g["g"]])
        c_new = f * c + i * cell
        return o * self.h_act(c_new), c_new


# kernels.c's activation codes (activate2).
C_ACTIVATIONS = {"relu": 0, "sigmoid": 1, "tanh": 2}


def _fast_kernels(dtype):
    return kernels.simd() if np.dtype(dtype) == np.float32 else None


# What the C loops read and write starts on a cache line (64 bytes). Pyodide's allocator
# gives 8-byte alignment, and a SIMD load that straddles two lines costs more: with Rᵀ at
# 0 / 16 / 4 / 8 bytes mod 64 the zoo's lstm plan took 194 / 200 / 220 / 222 µs under Node,
# and in Chromium one recording's graphs took 0.1675-0.190 ms a dispatch depending on where
# their arrays fell, 0.165 ms every time once aligned.
_LINE = 64


def _empty(shape) -> np.ndarray:
    """An uninitialised C-contiguous float32 array of `shape` starting on a cache line."""
    size = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(size + _LINE // 4, np.float32)
    start = (-raw.__array_interface__["data"][0] % _LINE) // 4
    return raw[start:start + size].reshape(shape)


def _c_array(a) -> np.ndarray:
    """`a` as a C-contiguous float32 copy starting on a cache line."""
    out = _empty(np.shape(a))
    np.copyto(out, a, casting="unsafe")
    return out


def _c_weights(fast, weight, recurrent_weight):
    """Wᵀ (and its GEMM packing) and Rᵀ, contiguous float32: the C loop's layout."""
    weight_t = _c_array(weight.T)
    packed = fast.pack_b(weight_t)
    return weight_t, None if packed is None else _c_array(packed), _c_array(recurrent_weight.T)


class _Scratch:
    """A runner's working memory, made at its first run and reused by every later one, with
    every C call bound to it (in Pyodide an array's address costs ~1.7 µs, a fresh array's
    ~3.5 µs: a run now looks up none): the input x copied to float32 rows, the input parts of
    all time steps (xw, [steps, batch, gates * H]), the C loop's gate buffer, the states
    [directions, batch, H] (the initial ones copied in, the loop updates them in place) and
    the sequence [steps, directions, batch, H]. `bind(work)` gives the calls in their order
    (per direction: input GEMM, time loop), made one call (Kernels.chain: in Pyodide one
    crossing into JavaScript a run, not two per direction). A run never suspends (the C calls run to their
    end) and returns copies, so one set serves every run of its plan step; a new input shape
    makes a new set. With `views`, a run returns views of the states and the sequence
    instead (no copy): for a caller that is done with them before the next run and copies
    what it keeps (the plan, see specialise.py)."""

    __slots__ = ("shape", "x", "xw", "gates", "states", "sequence", "call", "views", "outputs")

    def __init__(self, views: bool):
        self.shape = None
        self.views = views

    def get(self, x: np.ndarray, shape: tuple, gates_size: int, states: int, return_sequence: bool,
            bind, fast) -> "_Scratch":
        """This set for x [steps, batch, input]; `shape` (directions, gates * H, H)."""
        if self.shape != x.shape:
            directions, width, hidden = shape
            steps, batch = x.shape[0], x.shape[1]
            self.x = _empty(x.shape)
            self.xw = _empty((steps, batch, width))
            self.gates = _empty((gates_size,))
            self.states = [_empty((directions, batch, hidden)) for _ in range(states)]
            self.sequence = _empty((steps, directions, batch, hidden)) if return_sequence else None
            self.call = fast.chain(bind(self))
            if self.views:
                arrays = self.states if self.sequence is None else [*self.states, self.sequence]
                self.outputs = tuple(array[...] for array in arrays)
            self.shape = x.shape
        return self

    def run(self, x: np.ndarray, initial_states):
        """One run: x and the initial states (zeros for None) in, the bound calls, the states and
        the sequence out (copies, or the views)."""
        # Item assignment: np.copyto costs ~0.2 µs more a copy in Pyodide (the
        # arrays are float32 of the same shape either way: the runners take float32 x and states).
        self.x[...] = x
        for state, initial in zip(self.states, initial_states):
            state[...] = 0 if initial is None else initial
        self.call()
        if self.views:
            return self.outputs
        results = [state.copy() for state in self.states]
        if self.sequence is not None:
            results.append(self.sequence.copy())
        return results


def lstm_runner(weight, recurrent_weight, bias, recurrent_bias, peephole, attributes, views: bool = False):
    """§8.9.33 for float32 in the C kernels, weights prepared now: returns run(x, h0, c0) giving
    the operator's outputs (fresh arrays, or with `views` views of the runner's memory that the
    next run overwrites: _Scratch), or None where there are no C kernels."""
    fast = _fast_kernels(weight.dtype)
    if fast is None:
        return None
    hidden = attributes["hidden_size"]
    order = LSTM_GATES[attributes["layout"]]
    offsets = tuple(order.index(g) for g in ("i", "o", "f", "g"))
    codes = tuple(C_ACTIVATIONS[a] for a in attributes["activations"])
    directions = []
    for d in range(weight.shape[0]):
        weight_t, packed, rt = _c_weights(fast, weight[d], recurrent_weight[d])
        # The numpy path's bias + recurrentBias, added once in float32.
        combined = _c_array(_or_zeros(None if bias is None else bias[d], (4 * hidden,), np.float32)
                            + _or_zeros(None if recurrent_bias is None else recurrent_bias[d], (4 * hidden,), np.float32))
        peep = None if peephole is None else _c_array(peephole[d])
        directions.append((weight_t, packed, rt, combined, peep))
    backward_all = attributes["direction"] == "backward"
    return_sequence = attributes["return_sequence"]
    shape = (len(directions), 4 * hidden, hidden)
    scratch = _Scratch(views)

    def bind(work):
        # x Wᵀ + (bias + recurrentBias) for every step at once, then the time loop.
        h, c = work.states
        seq = work.sequence
        calls = []
        for d, (weight_t, packed, rt, combined, peep) in enumerate(directions):
            calls.append(fast.bind_input_gemm(work.x, weight_t, packed, combined, work.xw))
            calls.append(fast.bind_lstm_sequence(work.xw, rt, peep, h[d], c[d], None if seq is None else seq[:, d],
                                                 work.gates, offsets, d == 1 or backward_all, codes))
        return calls

    def run(x, initial_hidden, initial_cell):
        work = scratch.get(x, shape, x.shape[1] * 4 * hidden, 2, return_sequence, bind, fast)
        return work.run(x, (initial_hidden, initial_cell))
    return run


def gru_runner(weight, recurrent_weight, bias, recurrent_bias, attributes, views: bool = False):
    """§8.9.25 for float32 in the C kernels, as lstm_runner: run(x, h0), or None."""
    fast = _fast_kernels(weight.dtype)
    if fast is None:
        return None
    hidden = attributes["hidden_size"]
    order = GRU_GATES[attributes["layout"]]
    offsets = tuple(order.index(g) for g in ("z", "r", "n"))
    codes = tuple(C_ACTIVATIONS[a] for a in attributes["activations"])
    return_sequence, reset_after = attributes["return_sequence"], attributes["reset_after"]
    directions = []
    for d in range(weight.shape[0]):
        weight_t, packed, rt = _c_weights(fast, weight[d], recurrent_weight[d])
        # The numpy path's bias + recurrentBias (but rb_n with resetAfter), added once in float32.
        b, rb_n = _gru_biases(None if bias is None else bias[d], None if recurrent_bias is None else recurrent_bias[d],
                              hidden, _gate_slices(order, hidden)["n"], reset_after, np.float32)
        b = None if bias is None and recurrent_bias is None else _c_array(b)
        directions.append((weight_t, packed, rt, b, None if rb_n is None else _c_array(rb_n)))
    backward_all = attributes["direction"] == "backward"
    shape = (len(directions), 3 * hidden, hidden)
    scratch = _Scratch(views)

    def bind(work):
        # x Wᵀ + (bias + recurrentBias) for every step at once, then the time loop (which adds
        # rb_n with resetAfter).
        (h,), seq = work.states, work.sequence
        calls = []
        for d, (weight_t, packed, rt, b, rb_n) in enumerate(directions):
            calls.append(fast.bind_input_gemm(work.x, weight_t, packed, b, work.xw))
            calls.append(fast.bind_gru_sequence(work.xw, rt, rb_n, h[d], None if seq is None else seq[:, d], work.gates,
                                                offsets, d == 1 or backward_all, reset_after, codes))
        return calls

    def run(x, initial_hidden):
        work = scratch.get(x, shape, x.shape[1] * (3 * hidden) + hidden, 1, return_sequence, bind, fast)
        return work.run(x, (initial_hidden,))
    return run


def _step_order(steps: int, reverse: bool):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def gru_kernel(inputs, attributes, outputs):
    """§8.9.25: every direction runs its time steps through the gruCell math; the
    backward direction reads the input from the last step to the first and its
    sequence entries are stored at the time index they were computed from."""
    x, weight, recurrent_weight, bias, recurrent_bias, initial_hidden = inputs
    run = gru_runner(weight, recurrent_weight, bias, recurrent_bias, attributes) if x.dtype == np.float32 else None
    if run is not None:
        return run(x, initial_hidden)
    out_dtype = x.dtype
    dtype = compute_type(x.dtype)
    steps, hidden_size = attributes["steps"], attributes["hidden_size"]
    direction = attributes["direction"]
    num_directions, batch_size = weight.shape[0], x.shape[1]
    x = x.astype(dtype, copy=False)
    hidden = _or_zeros(initial_hidden, (num_directions, batch_size, hidden_size), dtype)
    final = np.empty((num_directions, batch_size, hidden_size), dtype)
    sequence = np.empty((steps, num_directions, batch_size, hidden_size), dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for d in range(num_directions):
            cell = _GruDirection(weight[d], recurrent_weight[d], None if bias is None else bias[d],
                                 None if recurrent_bias is None else recurrent_bias[d], hidden_size,
                                 attributes["layout"], attributes["reset_after"], attributes["activations"], dtype)
            x_parts = cell.input_part(x)
            h = hidden[d]
            for t in _step_order(steps, d == 1 or direction == "backward"):
                h = cell.step(x_parts[t], h)
                sequence[t, d] = h
            final[d] = h
    results = [final.astype(out_dtype)]
    if attributes["return_sequence"]:
        results.append(sequence.astype(out_dtype))
    return results


def gru_cell_kernel(inputs, attributes, outputs):
    """§8.9.26: one time step."""
    x, weight, recurrent_weight, hidden, bias, recurrent_bias = inputs
    dtype = compute_type(x.dtype)
    cell = _GruDirection(weight, recurrent_weight, bias, recurrent_bias, attributes["hidden_size"],
                         attributes["layout"], attributes["reset_after"], attributes["activations"], dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        h = cell.step(cell.input_part(x.astype(dtype, copy=False)), hidden.astype(dtype, copy=False))
    return [h.astype(x.dtype)]


def lstm_kernel(inputs, attributes, outputs):
    """§8.9.33: like gru_kernel, carrying the cell state beside the hidden state."""
    x, weight, recurrent_weight, bias, recurrent_bias, peephole, initial_hidden, initial_cell = inputs
    run = (lstm_runner(weight, recurrent_weight, bias, recurrent_bias, peephole, attributes)
           if x.dtype == np.float32 else None)
    if run is not None:
        return run(x, initial_hidden, initial_cell)
    out_dtype = x.dtype
    dtype = compute_type(x.dtype)
    steps, hidden_size = attributes["steps"], attributes["hidden_size"]
    direction = attributes["direction"]
    num_directions, batch_size = weight.shape[0], x.shape[1]
    x = x.astype(dtype, copy=False)
    state_shape = (num_directions, batch_size, hidden_size)
    hidden = _or_zeros(initial_hidden, state_shape, dtype)
    cell_state = _or_zeros(initial_cell, state_shape, dtype)
    final_h = np.empty(state_shape, dtype)
    final_c = np.empty(state_shape, dtype)
    sequence = np.empty((steps, *state_shape), dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for d in range(num_directions):
            cell = _LstmDirection(weight[d], recurrent_weight[d], None if bias is None else bias[d],
                                  None if recurrent_bias is None else recurrent_bias[d],
                                  None if peephole is None else peephole[d], hidden_size,
                                  attributes["layout"], attributes["activations"], dtype)
            x_parts = cell.input_part(x)
            h, c = hidden[d], cell_state[d]
            for t in _step_order(steps, d == 1 or direction == "backward"):
                h, c = cell.step(x_parts[t], h, c)
                sequence[t, d] = h
            final_h[d], final_c[d] = h, c
    results = [final_h.astype(out_dtype), final_c.astype(out_dtype)]
    if attributes["return_sequence"]:
        results.append(sequence.astype(out_dtype))
    return results


def lstm_cell_kernel(inputs, attributes, outputs):
    """§8.9.34: one time step; returns [hidden state, cell state]."""
    x, weight, recurrent_weight, hidden, cell_state, bias, recurrent_bias, peephole = inputs
    dtype = compute_type(x.dtype)
    cell = _LstmDirection(weight, recurrent_weight, bias, recurrent_bias, peephole, attributes["hidden_size"],
                          attributes["layout"], attributes["activations"], dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        h, c = cell.step(cell.input_part(x.astype(dtype, copy=False)), hidden.astype(dtype, copy=False),
                         cell_state.astype(dtype, copy=False))
    return [h.astype(x.dtype), c.astype(x.dtype)]


register("gru", build=build_gru, kernel=gru_kernel, limits=GRU_LIMITS)
register("gruCell", build=build_gru_cell, kernel=gru_cell_kernel, limits=GRU_CELL_LIMITS)
register("lstm", build=build_lstm, kernel=lstm_kernel, limits=LSTM_LIMITS)
register("lstmCell", build=build_lstm_cell, kernel=lstm_cell_kernel, limits=LSTM_CELL_LIMITS)
