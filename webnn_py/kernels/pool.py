"""The kernel pool: large float32 GEMMs with a constant (packed) B and batch-1 NHWC depthwise
convolutions split between the page's thread and a few dedicated workers, in cross-origin
isolated pages (README "Kernels", Threads).

Pyodide 0.27's memory is not shared, so the workers cannot read numpy's buffers: they run
kernels_shared.wasm (the same C, tools/build_kernels.py) on a SharedArrayBuffer-backed
WebAssembly.Memory of their own, the *arena*, which the page also holds (pool.js). Per GEMM
the page keeps the first rows for itself and computes them in place with kernels.wasm; the
other rows' A (and residual, bias) are copied into the arena, cut into tiles that the workers
and then the page claim with an atomic counter, and the workers' C rows copied back. A
constant B is copied into the arena once, when it is first used, and released with it. A
depthwise convolution is split over its output rows the same way, the workers reading a copy of
the input rows theirs need, and so is an im2col convolution, each worker making the patches of
its rows from such a copy. Per shape, pool.js uses the pool or the page's thread alone,
whichever has been faster lately (on a busy machine a pooled call can cost more than it saves).

Started only where it can help and cannot hang: Pyodide in a page or dedicated worker that
is `crossOriginIsolated` and can create workers, `navigator.hardwareConcurrency > 1`,
`webnnPolyfillConfig.kernelThreads` not 0 (the number of workers; default
hardwareConcurrency - 1, at most 3), and only when the first GEMM or depthwise convolution above
the thresholds comes.
Anywhere else, for GEMMs below the thresholds (the copies would not be amortised), and while no
worker is ready, kernels.Kernels.gemm runs on one thread as before; results are bit for bit the
same either way (the same C, each element summed over k in the same order).
"""
from __future__ import annotations

import logging
import sys
import weakref
from importlib import resources

import numpy as np

_log = logging.getLogger("webnn_py")

# A GEMM may go to the pool from this many multiply-adds, rows per thread, and columns of A and
# of C: the workers' rows of A (k floats) and of C (n floats) are copied, at ~6 multiply-adds'
# time a float, so a row's copies cost ~6/n + 6/k of its product (bench/threads.py), which
# pool.js's split takes into account. Narrow GEMMs with many rows (MobileNet's 16-32 channel
# 1x1 convolutions) can still gain; pool.js's per-shape choice drops those that do not. The
# 7x7 stages' GEMMs and convolutions (49 rows: 16 a thread, not 64 as until 2026-11-26) took
# 0.56-0.78x one thread pooled on a quiet machine (mobilenet_v2's 49x1280x320, resnet18's 3x3
# 512-channel ones: 15 ms of a 73 ms run on one thread before).
MIN_MACS = 2_000_000
MIN_ROWS = 16
MIN_COLUMNS = 16
# A batch-1 NHWC depthwise conv2d may go to the pool from this many multiply-adds and output rows
# per thread, where copying its workers' rows (~stride input rows in and one output row back per
# output row, a float at ~1.5 of its multiply-adds' time: pool.js's first estimate, then it
# measures) costs at most MAX_DEPTHWISE_COPIES of their work: a 3×3 window of stride 2 copies ~0.8
# (bench/threads.py: 1.1-1.3× one thread even in its fastest calls), of stride 1 ~0.33.
MIN_DEPTHWISE_MACS = 1_000_000
MIN_DEPTHWISE_ROWS = 4
DEPTHWISE_COPY_MACS = 1.5
MAX_DEPTHWISE_COPIES = 0.5
# pool.js addresses B's last n % 8 columns n floats before them, above its 64 KiB control block.
MAX_COLUMNS = 16384
MAX_WORKERS = 3
# How long an idle worker polls for the next GEMM before it sleeps (webnnPolyfillConfig.
# kernelThreadsLingerMs; by default, -1, pool.js decides: autoLinger). Waking a sleeping worker
# can cost the page's thread its core for a while (the scheduler runs the woken thread there),
# but a polling worker takes CPU time from the page's other steps: on this busy machine 2 ms
# made the zoo CNNs 1.1-1.5x slower than one thread, 0 ms 0.5-0.9x (bench/threads.py --pool).
LINGER_MS = -1.0
# The arena's largest size (kernels_shared.wasm declares the same maximum).
MAX_BYTES = 1 << 30


class KernelPool:
    """pool.js's pool, with the constant Bs it keeps in the arena."""

    def __init__(self, js_pool, address, recorder=None):
        self._pool = js_pool
        # The three computing calls, through the kernels' Recorder where there is one: a
        # plan's replay (runtime/replay.py) makes them again as recorded, and pool.js still
        # decides at each call whether the workers take part.
        self._calls = js_pool if recorder is None else recorder.recording(js_pool, ("gemm", "conv", "depthwise"),
                                                                          "pool.")
        self._address = address
        self.workers = int(js_pool.workers)
        self._kept: dict[int, tuple[int, weakref.ref]] = {}
        # (key, offset, packed floats, k, n) of kept Bs whose arrays died: released at the next call.
        self._released: list[tuple[int, int, int, int, int]] = []

    def _offset_of(self, b: np.ndarray, packed_b: np.ndarray) -> int:
        """Where packed_b (and B's last n % 8 columns) is in the arena; copied there at its first
        use. Negative: not now (no room, or a worker still busy)."""
        self._release_dead()
        key = id(packed_b)
        kept = self._kept.get(key)
        if kept is not None and kept[1]() is packed_b:
            return kept[0]
        k, n = b.shape
        ptr = self._address
        offset = int(self._pool.keep(ptr(packed_b), packed_b.size, ptr(b), b.strides[0] // 4, k, n))
        if offset >= 0:
            size = packed_b.size
            released = self._released

            def forget(_ref, key=key, offset=offset):
                released.append((key, offset, size, k, n))
            self._kept[key] = (offset, weakref.ref(packed_b, forget))
        return offset

    def _release_dead(self) -> None:
        while self._released:
            key, offset, size, k, n = self._released.pop()
            if key in self._kept and self._kept[key][0] == offset:
                del self._kept[key]
            self._pool.release(offset, size, k, n)

    def gemm(self, a: np.ndarray, b: np.ndarray, packed_b: np.ndarray, out: np.ndarray, ldc: int, bias_m, bias_n,
             residual, act: int, lo: float, hi: float) -> bool:
        """kernels.Kernels.gemm's product through pool.js, which runs it on the workers and this
        thread or on this thread alone, whichever has been faster for the shape lately; False
        (nothing done) when B has no room in the arena. a (rows of contiguous elements), b, out,
        bias and residual as Kernels.gemm checked them."""
        m, k = a.shape
        n = b.shape[1]
        kept = self._offset_of(b, packed_b)
        if kept < 0:
            return False
        ptr = self._address
        return bool(self._calls.gemm(m, n, k, ptr(a), a.strides[0] // 4, ptr(b), b.strides[0] // 4, ptr(packed_b),
                                    kept, packed_b.size, ptr(out), ldc, ptr(bias_m), ptr(bias_n), ptr(residual), act,
                                    lo, hi))

    def conv(self, x: np.ndarray, kernel, strides, dilations, pads_begin, out_hw, b: np.ndarray,
             packed_b: np.ndarray, out: np.ndarray, ldc: int, bias_n, residual, act: int, lo: float, hi: float,
             cols: np.ndarray, cols_rows: int) -> bool:
        """kernels.Kernels.im2col_gemm's convolution through pool.js (the pool or this thread,
        whichever has been faster for the shape lately); False (nothing done) when B has no room
        in the arena."""
        kept = self._offset_of(b, packed_b)
        if kept < 0:
            return False
        h, w, c = x.shape
        (kh, kw), (oh, ow) = kernel, out_hw
        ptr = self._address
        return bool(self._calls.conv(h, w, c, ptr(x), kh, kw, strides[0], strides[1], dilations[0], dilations[1],
                                    pads_begin[0], pads_begin[1], oh, ow, ptr(cols), cols_rows, ptr(b),
                                    b.strides[0] // 4, ptr(packed_b), kept, packed_b.size, b.shape[1], ptr(out), ldc,
                                    ptr(bias_n), ptr(residual), act, lo, hi))

    def depthwise(self, x: np.ndarray, filter_hwc: np.ndarray, bias, out: np.ndarray, strides, dilations,
                  pads_begin, act: int, lo: float, hi: float) -> None:
        """kernels.Kernels.depthwise_nhwc of a batch-1 x through pool.js (the pool or this thread,
        whichever has been faster for the shape lately); x, filter_hwc, bias and out C-contiguous."""
        _, h, w, c = x.shape
        kh, kw, _ = filter_hwc.shape
        _, oh, ow, _ = out.shape
        ptr = self._address
        self._calls.depthwise(h, w, c, ptr(x), ptr(filter_hwc), kh, kw, ptr(bias), ptr(out), oh, ow, strides[0],
                             strides[1], dilations[0], dilations[1], pads_begin[0], pads_begin[1], act, lo, hi)

    def set_mode(self, mode: str) -> None:
        """"choose" (the default: per GEMM shape, the pool or this thread, whichever has been
        faster lately), "pool" (always, where a worker is ready) or "one" (this thread)."""
        self._pool.setMode(mode)

    def idle(self, seconds: float) -> bool:
        """Whether every worker is ready and none is busy within `seconds` (spins)."""
        return bool(self._pool.idle(seconds * 1000))

    def stats(self) -> dict:
        """What the pool did so far: calls (pooled), oneThread, declined, tiles, workerTiles, late,
        stolen, wakeUps; ms spent checking the workers and the arena (readyMs), copying in
        (copyMs), waking the workers (wakeMs), on this thread's rows (mineMs, for mineMacs
        multiply-adds), its stolen tiles (stolenMs), waiting and copying back (waitMs);
        workerCalls (a worker took part in a call) and startMs (their sum of the time from the
        call's opening to the worker's first tile); workerMs, workerMacs: the workers' time in
        sgemm and its multiply-adds; lingerMs: the workers' linger now; poolGain: the median of
        the last pooled calls' times against their shapes' one-thread time (pool.js autoLinger),
        None until there are enough."""
        return self._pool.statistics().to_py()

    def close(self) -> None:
        self._pool.close()


def _address(array) -> int:
    """The address of an array's data (0 for None): KernelPool's default; Kernels gives its
    _ptr, which remembers the addresses of the arrays that own their memory (an
    __array_interface__ costs ~2 µs in Pyodide, and a pooled call passes up to 7)."""
    return 0 if array is None else array.__array_interface__["data"][0]


def worker_count() -> int:
    """How many workers this page may use: 0 unless cross-origin isolated with threads."""
    if sys.platform != "emscripten":
        return 0
    import js  # type: ignore[import-not-found]
    try:
        if not getattr(js, "crossOriginIsolated", False) or not hasattr(js, "Worker"):
            return 0   # not isolated, or a scope without dedicated workers (a service worker)
        cores = int(getattr(js.navigator, "hardwareConcurrency", 1) or 1)
        wanted = page_setting("kernelThreads", cores - 1)
        return max(min(int(wanted), MAX_WORKERS), 0)
    except Exception:  # noqa: BLE001 - anything odd: no threads
        return 0


def page_setting(name: str, default: float) -> float:
    """webnnPolyfillConfig[name] where the page set it as a number (or a boolean: 0 or 1): plain
    data properties only, so no page getter runs here. Pyodide only."""
    import js  # type: ignore[import-not-found]

    config = js.Object.getOwnPropertyDescriptor(js.globalThis, "webnnPolyfillConfig")
    if config is None or not hasattr(config, "value") or config.value is None:
        return default
    try:
        setting = js.Object.getOwnPropertyDescriptor(config.value, name)
    except Exception:  # noqa: BLE001 - not an object
        return default
    if setting is not None and hasattr(setting, "value") and isinstance(setting.value, (int, float)):
        return setting.value
    return default


class Threads:
    """Kernels.threads: the pool, started at the first GEMM that would use it (a page that never
    runs one starts no worker); after a failed start, one thread for good."""

    def __init__(self, main_exports, heap_memory, workers: int, address=_address, variant: str = "kernels.wasm",
                 recorder=None):
        self._main_exports = main_exports
        self._recorder = recorder
        self._heap_memory = heap_memory
        self._workers = workers
        self._address = address
        self._variant = variant
        self.pool: KernelPool | None = None
        self._failed = False

    def gemm(self, a, b, packed_b, out, ldc, bias_m, bias_n, residual, act, lo, hi) -> bool:
        m, k = a.shape
        n = b.shape[1]
        if (m < MIN_ROWS * (self._workers + 1) or m * n * k < MIN_MACS or min(n, k) < MIN_COLUMNS
                or a.strides[1] != 4 or n >= MAX_COLUMNS or self._failed):
            return False
        return self._started() and self.pool.gemm(a, b, packed_b, out, ldc, bias_m, bias_n, residual, act, lo, hi)

    def conv(self, x, kernel, strides, dilations, pads_begin, out_hw, b, packed_b, out, ldc, bias_n, residual, act,
             lo, hi, cols, cols_rows) -> bool:
        """Kernels.im2col_gemm's convolution through the pool where its GEMM would go there
        (gemm's thresholds for oh * ow rows); False (nothing done) otherwise."""
        k, n = b.shape
        m = out_hw[0] * out_hw[1]
        if (m < MIN_ROWS * (self._workers + 1) or out_hw[0] < self._workers + 1 or m * n * k < MIN_MACS
                or min(n, k) < MIN_COLUMNS or n >= MAX_COLUMNS or self._failed):
            return False
        return self._started() and self.pool.conv(x, kernel, strides, dilations, pads_begin, out_hw, b, packed_b, out,
                                                  ldc, bias_n, residual, act, lo, hi, cols, cols_rows)

    def depthwise(self, x, filter_hwc, bias, out, strides, dilations, pads_begin, act, lo, hi) -> bool:
        """Kernels.depthwise_nhwc's convolution through the pool where it may help (a batch-1
        input, enough work); False (nothing done) otherwise."""
        _, oh, ow, _ = out.shape
        taps = filter_hwc.shape[0] * filter_hwc.shape[1]
        if (x.shape[0] != 1 or oh < MIN_DEPTHWISE_ROWS * (self._workers + 1) or out.size * taps < MIN_DEPTHWISE_MACS
                or DEPTHWISE_COPY_MACS * (strides[0] * x.shape[2] + ow) > MAX_DEPTHWISE_COPIES * ow * taps
                or self._failed):
            return False
        if not self._started():
            return False
        self.pool.depthwise(x, filter_hwc, bias, out, strides, dilations, pads_begin, act, lo, hi)
        return True

    def _started(self) -> bool:
        """Whether the pool runs, started now if this is its first use (False: it failed to)."""
        if self.pool is None:
            self.pool = _start(self._main_exports, self._heap_memory, self._workers, self._address, self._variant,
                               self._recorder)
            self._failed = self.pool is None
        return not self._failed


def threads(main_exports, heap_memory, address=_address, variant: str = "kernels.wasm",
            recorder=None) -> Threads | None:
    """Kernels.threads for the exports of kernels.wasm (or `variant`, kernels.VARIANTS) on
    Pyodide's memory (`address`: an array's data address, 0 for None; `recorder`: the kernels'
    Recorder, which notes the pool's calls too): None where the pool must not or cannot run
    (see the module's doc)."""
    workers = worker_count()
    return Threads(main_exports, heap_memory, workers, address, variant, recorder) if workers > 0 else None


def shared_variant(variant: str) -> str:
    """The shared-memory build of the same code as `variant`: the workers' rows must have the
    bits this thread's rows have (kernels_relaxed.wasm's FMA or kernels.wasm's multiply and add)."""
    return variant.replace("kernels", "kernels_shared", 1)


def _start(main_exports, heap_memory, workers: int, address, variant: str, recorder=None) -> KernelPool | None:
    try:
        import js  # type: ignore[import-not-found]
        from pyodide.code import run_js  # type: ignore[import-not-found]
        from pyodide.ffi import to_js  # type: ignore[import-not-found]

        source = (resources.files(__package__) / "pool.js").read_text()
        shared = (resources.files(__package__) / "wasm" / shared_variant(variant)).read_bytes()
        make_pool = run_js(f"(function () {{\n{source}\n}})()")
        module = js.WebAssembly.Module.new(to_js(shared))
        linger = float(page_setting("kernelThreadsLingerMs", LINGER_MS))
        linger = LINGER_MS if linger != linger or linger < 0 else linger     # NaN or < 0: the default
        trace = bool(page_setting("kernelThreadsTrace", 0))   # bench/threads.py --trace
        return KernelPool(make_pool(module, heap_memory, main_exports, workers, MAX_BYTES, linger, trace), address,
                          recorder)
    except Exception as e:  # noqa: BLE001 - the single-thread kernels serve
        _log.warning("webnn-py: the kernel pool did not start (%s); one thread", e)
        return None
