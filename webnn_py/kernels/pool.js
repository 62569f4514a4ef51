// webnn-py's kernel pool: the float32 GEMM (kernels.c sgemm) on a few dedicated workers that
// share one WebAssembly.Memory (a SharedArrayBuffer) with the page. Only started by
// webnn_py/kernels/pool.py in cross-origin isolated pages with more than one core; see the
// README's "Kernels" section (Threads) for the design. This file is the body of a function
// (pool.py evaluates it with Function) that returns makePool; workerMain is sent to each
// worker as its whole script.
"use strict";

// The control block, at the start of the shared memory (Int32 words).
const STATE = 0;          // (generation << 12) | next unclaimed tile; CLOSED when no call is open
const WAKE = 1;           // bumped for each call: the workers' Atomics.wait address
const ARGS = 2;           // the open call's arguments (ARG_* below), written before STATE opens it
const READY = 32;         // READY + w: worker w has instantiated the kernels
const BUSY = 64;          // BUSY + w: worker w is between looking at STATE and finishing its tile
const SLEEPING = 80;      // SLEEPING + w: worker w is in (or about to enter) Atomics.wait
const DONE = 96;          // DONE + t: the generation whose tile t is in the arena's C
const CLAIMED_AT = 4096;  // Float64 CLAIMED_AT + w: when (ms since the epoch) worker w claimed its first tile of a call
const WORKED = 4112;      // Float64 WORKED + w: ms worker w has spent in sgemm (stats)
const WORKED_MACS = 4128; // Float64 WORKED_MACS + w: the multiply-adds of those calls
const MAX_WORKERS = 16;
const LINGER = 48;        // how long (ms, float32) a worker polls for the next call before it sleeps
                          // (after READY's words: ARGS' slots reach word 31; at 20 until 2026-11-26,
                          // a depthwise or convolution call's arguments overwrote it with ~0)
const TILE_BITS = 12;
const CLOSED = (1 << TILE_BITS) - 1;
const MAX_TILES = CLOSED - 1;
const CONTROL_BYTES = 65536;   // DONE + MAX_TILES words fit below it
const [ARG_TILES, ARG_TILE_ROWS, ARG_ROWS, ARG_N, ARG_K, ARG_A, ARG_PACK, ARG_B, ARG_LDB, ARG_C, ARG_BIAS_M,
       ARG_BIAS_N, ARG_RES, ARG_ACT, ARG_LO, ARG_HI] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
// What a call's tiles are (ARG_KIND): rows of a GEMM's C (the ARG_* above), or output rows of a
// batch-1 NHWC depthwise conv2d (kernels.c depthwise_nhwc), whose arguments take the GEMM's
// slots 3-12 and 16-21 (DW below; the activation stays in ARG_ACT, ARG_LO, ARG_HI): DW.H input
// rows in the arena from the first one the workers' rows read, DW.PT the begin padding of the
// workers' first output row against that slab (negative: it starts inside the slab).
// A convolution's tiles (KIND_CONV: im2col + GEMM of one NHWC image) are output rows too: each
// worker writes the patch matrix of its tile's rows (kernels.c im2col_nhwc, from the arena's
// input slab) into its own scratch (ARG_A + worker * tile rows * ow * k floats), then runs the
// GEMM's kernel on it (the GEMM's slots; ARG_ROWS etc. count output rows of ow pixels); its
// geometry in CONV's slots.
const ARG_KIND = 22;
const KIND_GEMM = 0, KIND_DEPTHWISE = 1, KIND_CONV = 2;
const DW = { H: 3, W: 4, CH: 5, X: 6, FILTER: 7, KH: 8, KW: 9, BIAS: 10, OUT: 11, OW: 12, SH: 16, SW: 17, DH: 18,
             DWIDTH: 19, PT: 20, PL: 21 };
const CONV = { H: 16, W: 17, CH: 18, X: 19, KH: 20, KW: 21, SH: 23, SW: 24, DH: 25, DWIDTH: 26, PT: 27, PL: 28, OW: 29 };

// One worker: instantiate the shared build on the memory, then take tiles of each call until
// none is left and sleep until the next call. Its only messages are the first one (ours;
// anything else, e.g. the polyfill's Worker wrapper's port, is ignored).
function workerMain() {
  "use strict";
  const CONSTANTS = null;   // replaced by makePool's constants when the script is made
  const { STATE, WAKE, ARGS, READY, BUSY, SLEEPING, LINGER, DONE, CLAIMED_AT, WORKED, WORKED_MACS, TILE_BITS, CLOSED,
          ARG_KIND, KIND_GEMM, KIND_DEPTHWISE, DW, CONV } = CONSTANTS;
  self.onmessage = (event) => {
    const data = event.data;
    if (!data || data.webnnKernelPool !== 1) return;
    self.onmessage = null;
    const { memory, index } = data;
    const kernels = new WebAssembly.Instance(data.module, { env: { memory } }).exports;
    const control = new Int32Array(memory.buffer, 0, DONE);
    const controlF32 = new Float32Array(memory.buffer, 0, DONE);
    const done = new Int32Array(memory.buffer, 0, 16384);
    const claimedAt = new Float64Array(memory.buffer, CLAIMED_AT * 8, 16);
    const worked = new Float64Array(memory.buffer, WORKED * 8, 16);
    const workedMacs = new Float64Array(memory.buffer, WORKED_MACS * 8, 16);
    let claimedIn = 0;   // the generation of this worker's last claim
    const arg = (i) => control[ARGS + i];
    // Rows r0.. of the call's arena C; returns the multiply-adds (stats).
    const gemmTile = (r0, rows) => {
      const n = arg(3), k = arg(4), biasM = arg(10), res = arg(12);
      kernels.sgemm(rows, n, k, arg(5) + r0 * k * 4, k, 1, arg(7), arg(8), arg(9) + r0 * n * 4, n,
                    biasM ? biasM + r0 * 4 : 0, arg(11), res ? res + r0 * n * 4 : 0, arg(13),
                    controlF32[ARGS + 14], controlF32[ARGS + 15], arg(6), 1);
      return rows * n * k;
    };
    // Output rows r0.. of the workers' part of an im2col convolution: their patch matrix into
    // this worker's scratch, from the arena's input slab, then its GEMM into the arena's C.
    const convTile = (r0, rows) => {
      const ow = arg(CONV.OW), n = arg(3), k = arg(4), sh = arg(CONV.SH), scratch = arg(5) + index * arg(1) * ow * k * 4;
      const res = arg(12), pixels = rows * ow, first = r0 * ow;
      kernels.im2col_nhwc(arg(CONV.X), arg(CONV.H), arg(CONV.W), arg(CONV.CH), arg(CONV.KH), arg(CONV.KW), sh,
                          arg(CONV.SW), arg(CONV.DH), arg(CONV.DWIDTH), arg(CONV.PT) - r0 * sh, arg(CONV.PL), 0, rows,
                          ow, scratch);
      kernels.sgemm(pixels, n, k, scratch, k, 1, arg(7), arg(8), arg(9) + first * n * 4, n, 0, arg(11),
                    res ? res + first * n * 4 : 0, arg(13), controlF32[ARGS + 14], controlF32[ARGS + 15], arg(6), 1);
      return pixels * n * k;
    };
    // Output rows r0.. of the workers' part of a depthwise conv2d, from the arena's input slab.
    const depthwiseTile = (r0, rows) => {
      const ow = arg(DW.OW), ch = arg(DW.CH), sh = arg(DW.SH);
      kernels.depthwise_nhwc(1, arg(DW.H), arg(DW.W), ch, arg(DW.X), arg(DW.FILTER), arg(DW.KH), arg(DW.KW),
                             arg(DW.BIAS), arg(DW.OUT) + r0 * ow * ch * 4, rows, ow, sh, arg(DW.SW), arg(DW.DH),
                             arg(DW.DWIDTH), arg(DW.PT) - r0 * sh, arg(DW.PL), arg(13), controlF32[ARGS + 14],
                             controlF32[ARGS + 15]);
      return rows * ow * ch * arg(DW.KH) * arg(DW.KW);
    };
    Atomics.store(control, READY + index, 1);
    let seen = Atomics.load(control, WAKE);
    for (;;) {
      for (;;) {
        // BUSY first: the page starts no call while it is set, so the arguments read
        // after a successful claim are that call's.
        Atomics.store(control, BUSY + index, 1);
        const state = Atomics.load(control, STATE), tile = state & CLOSED;
        if (tile === CLOSED || tile >= control[ARGS]) break;
        if (Atomics.compareExchange(control, STATE, state, state + 1) !== state) continue;
        if (state >>> TILE_BITS !== claimedIn) {
          claimedIn = state >>> TILE_BITS;
          claimedAt[index] = performance.timeOrigin + performance.now();   // stats: the pool's start-up per call
        }
        const tileRows = control[ARGS + 1], rows = Math.min(tileRows, control[ARGS + 2] - tile * tileRows);
        const r0 = tile * tileRows;
        const tileStart = performance.now();
        const kind = control[ARGS + ARG_KIND];
        workedMacs[index] += kind === KIND_GEMM ? gemmTile(r0, rows) : kind === KIND_DEPTHWISE ? depthwiseTile(r0, rows)
          : convTile(r0, rows);
        worked[index] += performance.now() - tileStart;
        Atomics.store(done, DONE + tile, state >>> TILE_BITS);
      }
      Atomics.store(control, BUSY + index, 0);
      // Poll for the next call for the linger time (the page sets it: makePool's lingerMs, or
      // while pooled calls win, AUTO_LINGER_MS), then sleep: a polling worker needs no
      // wake-up, but it takes CPU time from the page's other steps and from everything else on
      // a busy machine (bench/threads.py: polling between the GEMMs of a dispatch made them
      // slower at load 2-3), while waking from Atomics.wait takes ~0.02 ms a call when a core is free.
      const until = performance.now() + controlF32[LINGER];
      while (Atomics.load(control, WAKE) === seen && performance.now() < until) { /* poll */ }
      // Asleep only if no call came meanwhile: the page bumps WAKE, then notifies the workers
      // marked SLEEPING, so marking it after a call came (the poll ended on it) cost that call
      // a notify it did not need (0.1-0.7 ms of the page's thread when no core is free). A call
      // that comes between this check and the wait ends the wait at once (WAKE is no longer seen).
      if (Atomics.load(control, WAKE) === seen) {
        Atomics.store(control, SLEEPING + index, 1);
        Atomics.wait(control, WAKE, seen);
        Atomics.store(control, SLEEPING + index, 0);
      }
      seen = Atomics.load(control, WAKE);
    }
  };
}

// The page's side. sharedModule: kernels_shared.wasm compiled; heap: Pyodide's
// WebAssembly.Memory; mainKernels: kernels.wasm's exports on it; workerCount: how many;
// lingerMs: how long an idle worker polls before it sleeps (< 0: AUTO_LINGER_MS while pooled
// calls win, else 0: autoLinger); trace: keep every call's time per
// shape for bench/threads.py (the page's webnnKernelPoolTrace(), which returns them and starts
// afresh; only in a page that asked for it with kernelThreadsTrace).
function makePool(sharedModule, heap, mainKernels, workerCount, maxBytes, lingerMs, trace) {
  const constants = { STATE, WAKE, ARGS, READY, BUSY, SLEEPING, LINGER, DONE, CLAIMED_AT, WORKED, WORKED_MACS, TILE_BITS, CLOSED,
                      ARG_KIND, KIND_GEMM, KIND_DEPTHWISE, DW, CONV };
  const pageSize = 65536;
  const memory = new WebAssembly.Memory({ initial: 64, maximum: maxBytes / pageSize, shared: true });
  const sharedKernels = new WebAssembly.Instance(sharedModule, { env: { memory } }).exports;
  const control = new Int32Array(memory.buffer, 0, DONE + MAX_TILES + 1);
  const controlF32 = new Float32Array(memory.buffer, 0, DONE);
  Atomics.store(control, STATE, CLOSED);
  controlF32[LINGER] = Math.max(lingerMs, 0);
  const script = `(${workerMain.toString().replace("const CONSTANTS = null;",
                                                    `const CONSTANTS = ${JSON.stringify(constants)};`)})();`;
  const url = URL.createObjectURL(new Blob([script], { type: "text/javascript" }));
  const workers = [];
  workerCount = Math.min(workerCount, MAX_WORKERS);
  try {
    for (let w = 0; w < workerCount; w++) {
      const worker = new Worker(url, { name: `webnn-py kernels ${w + 1}` });
      workers.push(worker);
      // WebKitGTK 2.50 cannot clone a shared WebAssembly.Memory (DataCloneError): no pool there.
      worker.postMessage({ webnnKernelPool: 1, module: sharedModule, memory, index: w });
    }
  } catch (error) {
    for (let w = 0; w < workers.length; w++) workers[w].terminate();
    throw error;
  } finally {
    URL.revokeObjectURL(url);
  }
  let generation = 0;
  let arena = new Float32Array(memory.buffer);
  let heapF32 = new Float32Array(heap.buffer);
  // The constant operands kept in the arena: [offset, bytes] blocks, first fit, bump above them.
  const free = [];
  let top = CONTROL_BYTES;
  // What the calls did; the times in ms: checking the workers and the arena (readyMs), copying
  // in (copyMs), waking the workers (wakeMs), the page's own rows (mineMs, for mineMacs
  // multiply-adds), its stolen tiles (stolenMs), waiting for and copying back the workers' tiles.
  // calls: pooled GEMMs; oneThread: GEMMs this thread did alone (chosen, or declined: no worker
  // ready).
  // workerCalls: (worker, call) pairs where the worker took a tile; startMs: their sum of the
  // time from the call's opening to the worker's first claim.
  const stats = { calls: 0, oneThread: 0, declined: 0, tiles: 0, workerTiles: 0, late: 0, stolen: 0, wakeUps: 0,
                  workerCalls: 0, readyMs: 0, wakeMs: 0, copyMs: 0, mineMs: 0, mineMacs: 0, stolenMs: 0, waitMs: 0,
                  startMs: 0 };
  const claimedAt = new Float64Array(memory.buffer, CLAIMED_AT * 8, MAX_WORKERS);
  const worked = new Float64Array(memory.buffer, WORKED * 8, MAX_WORKERS);
  const workedMacs = new Float64Array(memory.buffer, WORKED_MACS * 8, MAX_WORKERS);
  // The workers' clocks start elsewhere: claim times are compared on the epoch's (for stats only;
  // a page that replaced the getter gets NaN there, nothing else).
  let timeOrigin = NaN;
  try { timeOrigin = performance.timeOrigin; } catch { /* stats only */ }
  const timings = new Map();   // "m,n,k" -> {pool, one: the last RECENT calls' ms, calls}
  const RECENT = 5;
  // A float copied into or out of the arena (TypedArray.set) costs about this many of the
  // GEMM's multiply-adds (~0.1 ns a float against ~0.02-0.04 ns a multiply-add in Chromium).
  const COPY_MACS = 6;
  // The same for depthwise_nhwc's multiply-adds (a first guess, pool.py's; calls then measure it:
  // job.measured).
  const DEPTHWISE_COPY_MACS = 1.5;
  const MIN_TILE_PIXELS = 32;   // the fewest output pixels in a convolution's tile (conv)
  let mode = "choose";
  // chooseWay's and autoLinger's (declared here: the functions below come after the return).
  const CLEAR_LEAD = 0.8;
  const AUTO_LINGER_MS = 0.5;
  const LINGER_GAIN = 0.95;
  const gains = [];   // the last GAINS pooled calls' times against their shape's median one-thread time
  const GAINS = 16;
  const traced = new Map();   // key -> {pool, one: every call's ms since the last trace read}
  const wakes = [], starts = [], tracedStats = {};   // traced: each wake-up's Atomics.notify ms, each worker's start ms
  if (trace) {
    Object.defineProperty(globalThis, "webnnKernelPoolTrace", { configurable: true, value: () => {
      const shapes = [...traced].map(([key, t]) => ({ key, pool: t.pool, one: t.one }));
      const since = {};   // the stats since the last read
      for (const name in stats) since[name] = stats[name] - (tracedStats[name] || 0);
      Object.assign(tracedStats, stats);
      traced.clear();
      return { shapes, stats: since, wakes: wakes.splice(0), starts: starts.splice(0) };
    } });
  }

  function ensure(bytes) {
    if (bytes > memory.buffer.byteLength) {
      if (bytes > maxBytes) return false;
      memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / pageSize));
    }
    if (arena.buffer !== memory.buffer || arena.length * 4 !== memory.buffer.byteLength) {
      arena = new Float32Array(memory.buffer);
    }
    return true;
  }
  function heapView() {
    if (heapF32.buffer !== heap.buffer) heapF32 = new Float32Array(heap.buffer);
    return heapF32;
  }
  function allocate(bytes) {
    bytes = Math.ceil(bytes / 64) * 64;
    for (let i = 0; i < free.length; i++) {
      if (free[i][1] >= bytes) {
        const offset = free[i][0];
        if (free[i][1] === bytes) free.splice(i, 1);
        else { free[i][0] += bytes; free[i][1] -= bytes; }
        return offset;
      }
    }
    if (!ensure(top + bytes)) return -1;
    top += bytes;
    return top - bytes;
  }
  // Copies rows of `cols` floats, `stride` apart in `from` (a float index), to contiguous rows.
  function copyRows(to, toIndex, from, fromIndex, rows, cols, stride) {
    if (stride === cols) to.set(from.subarray(fromIndex, fromIndex + rows * cols), toIndex);
    else for (let i = 0; i < rows; i++) to.set(from.subarray(fromIndex + i * stride, fromIndex + i * stride + cols), toIndex + i * cols);
  }
  // How many workers can take part in a call: 0 while one is still busy (a worker that was
  // late is still on an abandoned tile, whose arena rows a new call would reuse). A worker
  // is also briefly busy each time it looks for work: give it a moment to go back to sleep.
  function readyWorkers() {
    let ready = 0;
    const deadline = performance.now() + 0.2;
    for (let w = 0; w < workers.length; w++) {
      while (Atomics.load(control, BUSY + w) !== 0) {
        if (performance.now() > deadline) return 0;
      }
      ready += Atomics.load(control, READY + w);
    }
    return ready;
  }

  return {
    workers: workers.length,
    // What the calls did (stats), with the workers' time in sgemm and its multiply-adds, the
    // workers' linger now and autoLinger's gain (null until GAINS pooled calls were compared).
    statistics() {
      let workerMs = 0, workerMacs = 0;
      for (let w = 0; w < workers.length; w++) { workerMs += worked[w]; workerMacs += workedMacs[w]; }
      return { ...stats, workerMs, workerMacs, lingerMs: controlF32[LINGER],
               poolGain: gains.length === GAINS ? median(gains) : null };
    },
    // A constant B (its packed strips, packPtr/packFloats in Pyodide's memory, and its last
    // n % 8 columns, which the packed kernel reads from B itself: remPtr rows of `rem`
    // floats ldb apart) copied into the arena once; returns its offset (-1: no room).
    keep(packPtr, packFloats, bPtr, ldb, k, n) {
      const rem = n % 8, n8 = n - rem;
      const offset = allocate((packFloats + k * rem) * 4);
      if (offset < 0) return -1;
      const heapNow = heapView();
      arena.set(heapNow.subarray(packPtr / 4, packPtr / 4 + packFloats), offset / 4);
      if (rem) copyRows(arena, offset / 4 + packFloats, heapNow, bPtr / 4 + n8, k, rem, ldb);
      return offset;
    },
    release(offset, packFloats, k, n) {
      free.push([offset, Math.ceil((packFloats + k * (n % 8)) * 4 / 64) * 64]);
    },
    // C[m, n] = epilogue(A @ B) as kernels.c sgemm with a packed constant B (kept at `kept`):
    // on this thread alone, or with rows split between this thread (in place, in Pyodide's
    // memory) and the workers (on copies in the arena), whichever has been faster for this
    // shape lately (chooseWay). Always computes C.
    gemm(m, n, k, aPtr, lda, bPtr, ldb, packPtr, kept, packFloats, outPtr, ldc, biasM, biasN, res, act, lo, hi) {
      // In place: the rows of Pyodide's A, C, residual and bias_m from `row` on.
      const inPlace = (row, count) => mainKernels.sgemm(
        count, n, k, aPtr + row * lda * 4, lda, 1, bPtr, ldb, outPtr + row * ldc * 4, ldc,
        biasM ? biasM + row * 4 : 0, biasN, res ? res + row * ldc * 4 : 0, act, lo, hi, packPtr, 1);
      let aAt = 0, cAt = 0;
      return runJob(`gemm ${m},${n},${k}`, inPlace, {
        kind: KIND_GEMM, rows: m, align: 4, minTile: 8, rowMacs: n * k,
        // A worker's row copies k (+ n of a residual) floats in and n back for n k multiply-adds.
        copies: COPY_MACS * (k + n + (res ? n : 0)) / (n * k),
        floats: (rows) => rows * k + rows * n + (res ? rows * n : 0) + (biasM ? rows : 0) + (biasN ? n : 0),
        copyIn(at, mine, rows, heapNow) {
          aAt = at; at += rows * k;
          cAt = at; at += rows * n;
          copyRows(arena, aAt, heapNow, aPtr / 4 + mine * lda, rows, k, lda);
          let resAt = 0, biasMAt = 0, biasNAt = 0;
          if (res) { resAt = at; at += rows * n; copyRows(arena, resAt, heapNow, res / 4 + mine * ldc, rows, n, ldc); }
          if (biasM) { biasMAt = at; at += rows; arena.set(heapNow.subarray(biasM / 4 + mine, biasM / 4 + m), biasMAt); }
          if (biasN) { biasNAt = at; at += n; arena.set(heapNow.subarray(biasN / 4, biasN / 4 + n), biasNAt); }
          gemmArgs(n, k, aAt, kept, packFloats, cAt, biasMAt, biasNAt, resAt);
        },
        copyBack(heapNow, row, r0, count) {
          copyRowsBack(heapNow, outPtr / 4 + row * ldc, cAt + r0 * n, count, n, ldc);
        },
      }, act, lo, hi);
    },
    // The im2col convolution of one NHWC image x [h, w, c]: out's oh * ow pixel rows (n floats,
    // ldc apart) = epilogue(patches @ B) for B packed and kept as gemm's (k = kh kw c); on this
    // thread its rows' patches go through `cols` (Pyodide's memory, colsRows output rows at a
    // time), the workers' rows are split as gemm's, each worker making the patches of its rows
    // from a copy of the input rows they read: the workers' part of the patch matrix (k floats a
    // pixel, 9 times the input's for a 3×3 window) is never copied, nor made on this thread.
    conv(h, w, c, xPtr, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, colsPtr, colsRows, bPtr, ldb, packPtr, kept,
         packFloats, n, outPtr, ldc, biasN, res, act, lo, hi) {
      const k = kh * kw * c;
      const inPlace = (first, count) => {
        for (let r = first; r < first + count; r += colsRows) {
          const rows = Math.min(colsRows, first + count - r), at = r * ow * ldc * 4;
          mainKernels.im2col_nhwc(xPtr, h, w, c, kh, kw, sh, sw, dh, dw, pt, pl, r, rows, ow, colsPtr);
          mainKernels.sgemm(rows * ow, n, k, colsPtr, k, 1, bPtr, ldb, outPtr + at, ldc, 0, biasN, res ? res + at : 0,
                            act, lo, hi, packPtr, 1);
        }
      };
      const slab = inputRows(h, kh, sh, dh, pt, oh);
      let cAt = 0;
      return runJob(`conv ${h},${w},${c},${kh},${kw},${sh},${sw},${dh},${dw},${pt},${pl},${oh},${ow},${n},${ldc}`,
                    inPlace, {
        // A tile's GEMM has (tile rows) ow pixel rows: at least MIN_TILE_PIXELS, so that a small
        // image's tiles are not 7-row products (resnet18's 7x7 stage), mostly kernels.c's
        // remainder rows.
        kind: KIND_CONV, rows: oh, align: 1, minTile: Math.ceil(MIN_TILE_PIXELS / ow), rowMacs: ow * n * k,
        // A worker's output row copies ~sh input rows (w c floats; a residual's ow n) in and ow n
        // back, for ow n k multiply-adds (and the patches' ow k floats, which this thread makes
        // for its own rows).
        copies: COPY_MACS * (sh * w * c + ow * n * (res ? 2 : 1)) / (ow * (n * k + COPY_MACS * k)),
        measured: true,
        floats(rows, tileRows) {   // with every worker's scratch
          const [y0, y1] = slab(oh - rows);
          return (y1 - y0) * w * c + rows * ow * n * (res ? 2 : 1) + (biasN ? n : 0) + workers.length * tileRows * ow * k;
        },
        copyIn(at, mine, rows, heapNow) {
          const [y0, y1] = slab(mine);
          const xAt = at; at += (y1 - y0) * w * c;
          arena.set(heapNow.subarray(xPtr / 4 + y0 * w * c, xPtr / 4 + y1 * w * c), xAt);
          cAt = at; at += rows * ow * n;
          let resAt = 0, biasNAt = 0;
          if (res) { resAt = at; at += rows * ow * n; copyRows(arena, resAt, heapNow, res / 4 + mine * ow * ldc, rows * ow, n, ldc); }
          if (biasN) { biasNAt = at; at += n; arena.set(heapNow.subarray(biasN / 4, biasN / 4 + n), biasNAt); }
          gemmArgs(n, k, at, kept, packFloats, cAt, 0, biasNAt, resAt);
          const convArgs = [[CONV.H, y1 - y0], [CONV.W, w], [CONV.CH, c], [CONV.X, xAt * 4], [CONV.KH, kh],
                            [CONV.KW, kw], [CONV.SH, sh], [CONV.SW, sw], [CONV.DH, dh], [CONV.DWIDTH, dw],
                            [CONV.PT, pt + y0 - mine * sh], [CONV.PL, pl], [CONV.OW, ow]];
          for (const [slot, value] of convArgs) control[ARGS + slot] = value;
        },
        copyBack(heapNow, first, r0, count) {
          copyRowsBack(heapNow, outPtr / 4 + first * ow * ldc, cAt + r0 * ow * n, count * ow, n, ldc);
        },
      }, act, lo, hi);
    },
    // out[1, oh, ow, ch] = kernels.c depthwise_nhwc of a batch-1 NHWC x [h, w, ch] (every
    // pointer in Pyodide's memory): on this thread alone, or split over output rows like gemm's
    // rows, the workers reading a copy of the input rows their output rows need (the filter and
    // bias copied with it). Always computes out.
    depthwise(h, w, ch, xPtr, filterPtr, kh, kw, biasPtr, outPtr, oh, ow, sh, sw, dh, dw, pt, pl, act, lo, hi) {
      const row = ow * ch;
      // In place: output rows from `first` on (the begin padding measured from that row).
      const inPlace = (first, count) => mainKernels.depthwise_nhwc(
        1, h, w, ch, xPtr, filterPtr, kh, kw, biasPtr, outPtr + first * row * 4, count, ow, sh, sw, dh, dw,
        pt - first * sh, pl, act, lo, hi);
      const slab = inputRows(h, kh, sh, dh, pt, oh);
      let outAt = 0;
      return runJob(`depthwise ${h},${w},${ch},${kh},${kw},${sh},${sw},${dh},${dw},${pt},${pl},${oh},${ow}`, inPlace, {
        kind: KIND_DEPTHWISE, rows: oh, align: 1, minTile: 1, rowMacs: row * kh * kw,
        // A worker's output row copies ~sh input rows of w ch floats in and ow ch back.
        copies: DEPTHWISE_COPY_MACS * (sh * w * ch + row) / (row * kh * kw),
        measured: true,
        floats(rows) {
          const [y0, y1] = slab(oh - rows);
          return (y1 - y0) * w * ch + kh * kw * ch + (biasPtr ? ch : 0) + rows * row;
        },
        copyIn(at, mine, rows, heapNow) {
          const [y0, y1] = slab(mine);
          const xAt = at; at += (y1 - y0) * w * ch;
          arena.set(heapNow.subarray(xPtr / 4 + y0 * w * ch, xPtr / 4 + y1 * w * ch), xAt);
          const filterAt = at; at += kh * kw * ch;
          arena.set(heapNow.subarray(filterPtr / 4, filterPtr / 4 + kh * kw * ch), filterAt);
          let biasAt = 0;
          if (biasPtr) { biasAt = at; at += ch; arena.set(heapNow.subarray(biasPtr / 4, biasPtr / 4 + ch), biasAt); }
          outAt = at;
          const args = [[DW.H, y1 - y0], [DW.W, w], [DW.CH, ch], [DW.X, xAt * 4], [DW.FILTER, filterAt * 4],
                        [DW.KH, kh], [DW.KW, kw], [DW.BIAS, biasAt * 4], [DW.OUT, outAt * 4], [DW.OW, ow],
                        [DW.SH, sh], [DW.SW, sw], [DW.DH, dh], [DW.DWIDTH, dw], [DW.PT, pt + y0 - mine * sh], [DW.PL, pl]];
          for (const [slot, value] of args) control[ARGS + slot] = value;
        },
        copyBack(heapNow, first, r0, count) {
          heapNow.set(arena.subarray(outAt + r0 * row, outAt + (r0 + count) * row), outPtr / 4 + first * row);
        },
      }, act, lo, hi);
    },
    // "choose" (the default: per shape, chooseWay), "pool" (every call that can be pooled is:
    // bench/threads.py's GEMM table) or "one" (this thread alone).
    setMode(value) { mode = value; },
    // Whether every worker is ready and none busy within `ms` (tests wait with it so that the
    // next call is pooled).
    idle(ms) {
      const deadline = performance.now() + ms;
      while (performance.now() < deadline) {
        let idle = true;
        for (let w = 0; w < workers.length; w++) {
          idle = idle && Atomics.load(control, READY + w) === 1 && Atomics.load(control, BUSY + w) === 0;
        }
        if (idle) return true;
      }
      return false;
    },
    close() {
      for (let w = 0; w < workers.length; w++) workers[w].terminate();
      workers.length = 0;
    },
  };

  // Whether this call of a shape tries the pool: the first six calls alternate (pool first),
  // then the way with the lower median of its last RECENT times (medians: one call that met a
  // page fault, the arena's growth or a descheduled thread does not decide), except every n-th
  // call, which tries the other way: a machine whose other work comes and goes changes the
  // answer (on a busy machine a worker the scheduler does not run loses its tiles to this
  // thread after the copies were made), and 3 good calls bring a way back.
  // - n = 4 while neither way leads by more than CLEAR_LEAD: a noisy median that sent a shape
  //   the slower way is undone within ~12 calls (at every 8th, squeezenet1_1's small GEMMs,
  //   pooled at 0.65-0.8x, ran 25-40 % of their calls on one thread).
  // - n = 32 while the pool leads clearly: on a quiet machine most pooled shapes take
  //   0.55-0.75x one thread, and every 8th call on one thread cost them a quarter of their calls.
  // - n = 8 while one thread leads clearly: three slow pooled calls (a moment the worker was
  //   not scheduled) do that, and at every 32nd the shape then stayed ~96 calls on one thread
  //   (squeezenet1_1's share of calls there 15.7 -> 11.6 %, mobilenet_v3_small's 38 -> 20 %,
  //   bench/threads.py --trace, load 1.8); a pool that truly loses (two CPU burners) costs at
  //   most an 8th of its shape's calls.
  function chooseWay(timing) {
    if (mode !== "choose") return mode === "pool";
    const call = timing.calls++;
    if (call < 6) return call % 2 === 0;
    const pool = median(timing.pool), one = median(timing.one);
    const poolIsFaster = pool < one;
    const clear = Math.min(pool, one) < CLEAR_LEAD * Math.max(pool, one);
    const every = !clear ? 4 : poolIsFaster ? 32 : 8;
    return call % every === 0 ? !poolIsFaster : poolIsFaster;
  }

  // The workers' linger with lingerMs < 0: AUTO_LINGER_MS while the median of the last GAINS
  // pooled calls took under LINGER_GAIN of their shapes' one-thread time (a second core is
  // free: then a worker polling between the calls of a dispatch saves each call its wake-up,
  // ~0.02-0.05 ms, and the page's Atomics.notify), else 0 (on a busy machine the polling would
  // take the core the page's thread needs). On a quiet machine 0.5 ms took mobilenet_v2 and
  // squeezenet1_1 from 0.88x / 0.82x one thread to 0.80x / 0.75x (bench/threads.py --pool).
  // Not CLEAR_LEAD (0.8): small pooled calls that pay a wake-up each (mobilenet_v3_small's,
  // 0.07-0.14 ms) stay above it without the linger they would gain from (0.95 against 0.8:
  // mobilenet_v3_small 0.98x / 1.03x one thread, squeezenet1_1 0.74x / 0.82x, load 1.3-1.6;
  // with two CPU burners, load 3.8, equal).
  function autoLinger(took, timing) {
    if (lingerMs >= 0 || timing.one.length === 0) return;
    gains.push(took / median(timing.one));
    if (gains.length > GAINS) gains.shift();
    controlF32[LINGER] = gains.length === GAINS && median(gains) < LINGER_GAIN ? AUTO_LINGER_MS : 0;
  }
  function median(times) {
    const sorted = times.slice().sort((a, b) => a - b);
    return sorted[sorted.length >> 1];
  }

  // A GEMM's arguments (ARG_N.. ARG_RES) for the workers: A, C, bias and residual at these float
  // indices of the arena (0: none), B packed and kept at byte offset `kept` (its last n % 8
  // columns after its packFloats packed ones, addressed as kernels.c's sgemm reads them: n floats
  // before them a row).
  function gemmArgs(n, k, aAt, kept, packFloats, cAt, biasMAt, biasNAt, resAt) {
    const rem = n % 8;
    const args = [n, k, aAt * 4, kept, rem ? kept + packFloats * 4 - (n - rem) * 4 : 0, rem, cAt * 4, biasMAt * 4,
                  biasNAt * 4, resAt * 4];
    for (let i = 0; i < args.length; i++) control[ARGS + ARG_N + i] = args[i];
  }

  // For a window of kh rows dh apart, stride sh, begin padding pt over h input rows: a function
  // giving the input rows [y0, y1) that output rows from `first` to oh read (padding excluded).
  function inputRows(h, kh, sh, dh, pt, oh) {
    return (first) => {
      const y0 = Math.max(0, first * sh - pt);
      return [y0, Math.max(y0, Math.min(h, (oh - 1) * sh - pt + (kh - 1) * dh + 1))];
    };
  }

  // One call of a job (gemm's, depthwise's, conv's): chooseWay's way for its shape (`key`), timed.
  function runJob(key, inPlace, job, act, lo, hi) {
    let timing = timings.get(key);
    if (!timing) timings.set(key, timing = { pool: [], one: [], calls: 0, copies: [] });
    const started = performance.now();
    const pooled = chooseWay(timing) && parallel(job, inPlace, timing, act, lo, hi);
    if (!pooled) {
      inPlace(0, job.rows);
      stats.oneThread++;
    }
    const recent = pooled ? timing.pool : timing.one, took = performance.now() - started;
    if (pooled) autoLinger(took, timing);
    recent.push(took);
    if (trace) (traced.get(key) || traced.set(key, { pool: [], one: [] }).get(key))[pooled ? "pool" : "one"].push(took);
    if (recent.length > RECENT) recent.shift();
    return true;
  }

  // The pooled call of a job: its first rows in place on this thread, the others in tiles in
  // the arena; false, having done nothing, when no worker can take part now. A job gives its
  // kind (what a worker runs), rows (of C, of output pixels), align (this thread's rows and
  // the tiles in multiples of it), minTile, rowMacs (stats), copies (what copying a worker's
  // row in and out costs this thread, as a fraction of the row's own work), measured (that
  // estimate replaced by the median of what the last calls measured), floats(rows, tileRows) (the arena
  // space for the workers' rows), copyIn(at, mine, rows, heap) (into the arena from float
  // index `at`, and its arguments into the control block) and copyBack(heap, row, r0, count)
  // (tile rows r0.. in the arena to the job's rows row..).
  function parallel(job, inPlace, timing, act, lo, hi) {
    const entered = performance.now();
    const ready = readyWorkers();
    if (!ready) { stats.declined++; return false; }
    // This thread's rows first, in place; the rest in tiles that anyone may take. This thread
    // also copies the workers' rows in and back, which costs about a fraction `copies` of their
    // work, so it keeps m (1 - w copies) / (1 + w (1 - copies)) rows (w workers), which
    // leaves every thread the same time if the estimate holds; if it does not, this thread
    // takes the tiles still unclaimed after its own rows (eight per worker), so it errs low.
    const m = job.rows, align = job.align;
    const copies = Math.min(0.5, job.measured && timing.copies.length ? median(timing.copies) : job.copies);
    const share = Math.max(0, (1 - ready * copies) / (1 + ready * (1 - copies)));
    const mine = Math.floor(m * share / align) * align;
    const rows = m - mine;
    const tileRows = Math.max(job.minTile, Math.ceil(rows / (8 * ready) / align) * align);
    const tiles = Math.ceil(rows / tileRows);
    const base = Math.ceil(top / 64) * 64;
    if (tiles > MAX_TILES || !ensure(base + job.floats(rows, tileRows) * 4 + 64)) { stats.declined++; return false; }
    const copying = performance.now();
    stats.readyMs += copying - entered;
    const heapNow = heapView();
    job.copyIn(base / 4, mine, rows, heapNow);
    control[ARGS + ARG_TILES] = tiles;
    control[ARGS + ARG_TILE_ROWS] = tileRows;
    control[ARGS + ARG_ROWS] = rows;
    control[ARGS + ARG_ACT] = act;
    controlF32[ARGS + ARG_LO] = lo;
    controlF32[ARGS + ARG_HI] = hi;
    control[ARGS + ARG_KIND] = job.kind;
    generation = generation % 0xFFFFF + 1;
    const open = generation << TILE_BITS;
    const opening = performance.now();
    const copiedIn = opening - copying;
    stats.copyMs += copiedIn;
    const openedAt = timeOrigin + opening;
    Atomics.store(control, STATE, open);
    // Wake the sleeping workers. Waking from Atomics.wait takes ~0.005-0.02 ms when a core is
    // free; when none is, the notify itself can hold this thread 0.1-0.7 ms (the scheduler runs
    // the woken worker on this thread's core: bench/threads.py's "wake ms" at load 2-4), which
    // the per-shape choice then counts against the pool. (Waking them before the copy-in, to
    // overlap it, left a woken worker polling for the call on this core in that case.)
    Atomics.add(control, WAKE, 1);
    const wokenBefore = stats.wakeUps;
    for (let w = 0; w < workers.length; w++) {
      if (Atomics.load(control, SLEEPING + w)) { Atomics.notify(control, WAKE); stats.wakeUps++; break; }
    }
    const started = performance.now();
    stats.wakeMs += started - opening;
    if (trace && stats.wakeUps > wokenBefore) wakes.push(started - opening);
    if (mine) inPlace(0, mine);
    const mineTook = performance.now() - started;
    // Then the tiles nobody has taken yet (a worker that is late or asleep loses them).
    const takenHere = new Uint8Array(tiles);
    for (;;) {
      const state = Atomics.load(control, STATE), tile = state & CLOSED;
      if (tile >= tiles) break;
      if (Atomics.compareExchange(control, STATE, state, state + 1) !== state) continue;
      takenHere[tile] = 1;
      const r0 = tile * tileRows;
      inPlace(mine + r0, Math.min(tileRows, rows - r0));
    }
    Atomics.store(control, STATE, open | CLOSED);
    const waited = performance.now();
    // The workers' tiles: wait for each (spinning: a window's main thread cannot
    // Atomics.wait) at most about twice what such a tile took here, then compute it here;
    // the late worker's result in the arena is ignored, and its BUSY flag keeps later calls
    // on this thread alone until it has finished.
    const budget = 0.5 + 2 * (mine ? mineTook * tileRows / mine : 1);
    let copiedBack = 0, copiedRows = 0;
    for (let tile = 0; tile < tiles; tile++) {
      if (takenHere[tile]) continue;
      const r0 = tile * tileRows, count = Math.min(tileRows, rows - r0);
      const deadline = performance.now() + budget;
      let ok = Atomics.load(control, DONE + tile) === generation;
      while (!ok && performance.now() < deadline) ok = Atomics.load(control, DONE + tile) === generation;
      if (ok) {
        const copyStart = performance.now();
        job.copyBack(heapNow, mine + r0, r0, count);
        copiedBack += performance.now() - copyStart;
        copiedRows += count;
        stats.workerTiles++;
      } else {
        inPlace(mine + r0, count);
        stats.late++;
      }
    }
    // What this call's copies cost against this thread's own rows (job.measured's estimate).
    if (mine && copiedRows) {
      timing.copies.push((copiedIn / rows + copiedBack / copiedRows) / (mineTook / mine));
      if (timing.copies.length > RECENT) timing.copies.shift();
    }
    stats.calls++;
    stats.mineMs += mineTook;
    stats.mineMacs += mine * job.rowMacs;
    stats.stolenMs += waited - started - mineTook;
    stats.waitMs += performance.now() - waited;
    stats.tiles += tiles;
    for (let tile = 0; tile < tiles; tile++) stats.stolen += takenHere[tile];
    for (let w = 0; w < workers.length; w++) {
      if (claimedAt[w] >= openedAt) {
        stats.workerCalls++;
        stats.startMs += claimedAt[w] - openedAt;
        if (trace) starts.push(claimedAt[w] - openedAt);
      }
    }
    return true;
  }

  // The arena's contiguous rows back into C's rows ldc apart.
  function copyRowsBack(heapNow, toIndex, fromIndex, rows, cols, ldc) {
    if (ldc === cols) heapNow.set(arena.subarray(fromIndex, fromIndex + rows * cols), toIndex);
    else for (let i = 0; i < rows; i++) heapNow.set(arena.subarray(fromIndex + i * cols, fromIndex + (i + 1) * cols), toIndex + i * ldc);
  }
}

return makePool;
