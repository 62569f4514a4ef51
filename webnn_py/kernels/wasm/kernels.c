/* float32 kernels for webnn_py, compiled twice from this one source:
 *   - for wasm32 with -msimd128 (tools/build_kernels.py), loaded by Pyodide into its own
 *     WebAssembly.Memory (imported), so every pointer is a numpy buffer's address;
 *   - natively (same file), only so that tests/kernels can check it against numpy/torch.
 *
 * Rules this file keeps so that it can share Pyodide's memory safely:
 *   - no static or global data (nothing of ours lives in the shared memory);
 *   - no stack: no arrays or address-taken locals, no calls that are not inlined, so
 *     clang never touches __stack_pointer (the build checks the assembly for it).
 *     Register blocks are therefore written out as separate vector variables.
 *   - no libc (no memset/memcpy/expf): the build links with -nostdlib and fails on any
 *     undefined symbol.
 * Vectors are GCC/clang vector extensions: SIMD128 f32x4 on wasm, SSE natively.
 */
#include <stdint.h>

typedef float v4 __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
/* The same vector with 4-byte alignment: numpy buffers are only float-aligned. */
typedef float v4u __attribute__((vector_size(16), aligned(4)));

#define EXPORT __attribute__((visibility("default")))
#define INLINE static inline __attribute__((always_inline))

INLINE v4 load4(const float *p) { return *(const v4u *)p; }
INLINE void store4(float *p, v4 v) { *(v4u *)p = v; }
INLINE v4 splat(float a) { return (v4){a, a, a, a}; }

/* Activation epilogue: act 0 = none, 1 = clamp(lo, hi) (relu is clamp(0, +inf)), 2-5 below.
 * min(max(x, lo), hi) (§8.9.8 clamp's decomposition) written with compare masks:
 * NaN passes through (both compares are false), and a value equal to a bound gives
 * the bound itself, so -0 and +0 come out as numpy's maximum/minimum give them on
 * the host (its SIMD max returns the second operand on ties). */
INLINE float clamp1(float x, float lo, float hi) {
    if (x <= lo) x = lo;
    if (x >= hi) x = hi;
    return x;
}

/* The other epilogue activations, float32 four lanes at a time (act codes: see
 * webnn_py/kernels Activation):
 *   2 hardSwish    (x * max(0, min(6, x + 3))) / 6, §8.9.28's decomposition in its order
 *                  (the same float32 operations as ops/activations.py: bit for bit);
 *   3 sigmoid      1 / (1 + e^-x) (sigmoidS below);
 *   4 x * sigmoid(x) (SiLU / swish: mul(x, sigmoid(x)) in the graph), the sigmoid rounded
 *                  to float32 before the product, as the two operators round;
 *   5 hardSigmoid  max(min(alpha x + beta, 1), 0) with alpha = lo, beta = hi (§8.9.27,
 *                  bit for bit);
 *   6 x * lo       a mul by a constant scalar (attention's 1/sqrt(d) after q kT): the
 *                  float32 product element-wise mul rounds (bit for bit).
 * Sigmoid and tanh are within 2 and 3 float32 ULP of the correctly rounded value
 * (tests/kernels/test_recurrent_activation_accuracy.py sweeps the float32 range against
 * float64; every float32 in [-90, -2^-7] and [2^-7, 20] for sigmoid and [2^-6, 10] for tanh
 * was checked once), where numpy's float32 1 / (exp(-x) + 1) differs by up to ~2. */
/* The helpers below are defined once for a float vector type V (int lanes VI) by
 * FLOAT_ACTIVATIONS(V, VI, S), names ending in S: for v4 (suffix 4) everywhere, and for the
 * FW-lane vw (suffix w) where the native build is wider (AVX-512), so that its epilogue
 * passes run 16 lanes at a time with the same float32 operations in every lane.
 *   clampS        min(max(x, lo), hi), as described above;
 *   reduce_expS   y = r + k ln 2 (k rounded to nearest, |r| <= ln2 / 2) for -87.5 <= y <= 89
 *                 (or NaN), with 2^k as `scale` from its bit pattern (2^128 is +inf: e^y overflows
 *                 as it should above ln FLT_MAX = 88.72, and slightly early from 88.38 on, where
 *                 sigmoid's result is below 2^-126 anyway); ln 2 = 0.693145751953125 (9 trailing
 *                 zero bits: kf * it is exact) + 1.42860677e-6;
 *   exp_polyS     e^r = 1 + r + c2 r^2 + ... + c6 r^6, expm1_polyS e^r - 1 = r (1 + d1 r + ... +
 *                 d5 r^5), for |r| <= ln2 / 2: our own minimax fits (relative error 2.0e-9 and
 *                 1.3e-8, i.e. 0.02 and 0.11 ULP, before float32 rounding);
 *   activateS     as described above;
 *   sigmoidS      1 / (1 + e^-x) with -x clamped to [-87.5, 89] (pmin / pmax keep NaN): one exp,
 *                 one division and no select; e^-x = +inf below x = -88.38 gives +0, as does
 *                 -inf; NaN stays NaN. 27 wasm SIMD instructions where the e^-|x| form took 36;
 *   tanhS         tanh x = sign(x) (-m / (2 + m)), m = e^-2|x| - 1 = 2^k q + (2^k - 1) with
 *                 q = e^r - 1 (no cancellation for small |x|), -2|x| clamped to [-20, 0]
 *                 (tanh 10 rounds to 1); tanh(±0) = ±0, NaN stays NaN; 31 instructions (was 39);
 *   recurrent_activationS   lstm / gru's act: 0 relu (NaN stays NaN), 1 sigmoid, 2 tanh
 *                 (ops/recurrent.py's C_ACTIVATIONS). */
/* pminS(a, b) = b < a ? b : a, pmaxS(a, b) = a < b ? b : a: a NaN a is kept. In wasm the
 * f32x4.pmin / pmax instructions (one minps / maxps in V8; clang would otherwise emit f32x4.min /
 * max, whose NaN and signed-zero rules cost V8 several instructions). */
#define PMIN_PMAX(V, VI, S)                                                                               \
INLINE V pmin##S(V a, V b) { VI m = b < a; return (V)(((VI)b & m) | ((VI)a & ~m)); }                     \
INLINE V pmax##S(V a, V b) { VI m = a < b; return (V)(((VI)b & m) | ((VI)a & ~m)); }
#if defined(__wasm_simd128__)
INLINE v4 pmin4(v4 a, v4 b) { return __builtin_wasm_pmin_f32x4(a, b); }
INLINE v4 pmax4(v4 a, v4 b) { return __builtin_wasm_pmax_f32x4(a, b); }
#else
PMIN_PMAX(v4, v4i, 4)
#endif
/* select(m, a, b) = m ? a : b lane by lane (m all ones or all zeros). In wasm v128.bitselect
 * itself: clang 19 turns the and/or form of clamp's `x <= lo ? lo : x` (and of the recurrent
 * relu's `x > 0 or NaN ? x : 0`) into f32x4.pmax(x, lo), which keeps -0 where lo is +0 (x < lo
 * is false), so relu(-0) gave -0. */
#if defined(__wasm_simd128__)
#define SELECT(V, VI, m, a, b) ((V)__builtin_wasm_bitselect((v4i)(a), (v4i)(b), (v4i)(m)))
#else
#define SELECT(V, VI, m, a, b) ((V)(((VI)(a) & (m)) | ((VI)(b) & ~(m))))
#endif
#define FLOAT_ACTIVATIONS(V, VI, S)                                                                       \
INLINE V clamp##S(V x, V lo, V hi) {                                                                      \
    VI below = x <= lo, above = x >= hi;                                                                  \
    return SELECT(V, VI, above, hi, SELECT(V, VI, below, lo, x));                                         \
}                                                                                                         \
typedef struct { V r, scale; } reduced##S;                                                                \
INLINE reduced##S reduce_exp##S(V y) {                                                                    \
    const V zero = {0}, shifter = zero + 12582912.0f;              /* 1.5 * 2^23: round to nearest */   \
    V t = y * (zero + 1.44269504088896341f) + shifter;                                                    \
    V kf = t - shifter;                                                                                   \
    V r = (y - kf * (zero + 0.693145751953125f)) - kf * (zero + 1.428606765330187e-6f);                  \
    return (reduced##S){r, (V)(((VI)t - ((VI)shifter - 127)) << 23)};                                    \
}                                                                                                         \
INLINE V expm1_poly##S(V r) {                                                                             \
    const V zero = {0};                                                                                   \
    V q = zero + 1.38825201e-3f;                                                                          \
    q = q * r + 8.36652704e-3f; q = q * r + 4.16672006e-2f;                                               \
    q = q * r + 1.66665435e-1f; q = q * r + 4.99999970e-1f;                                               \
    return (q * r + 1.0f) * r;                                                                            \
}                                                                                                         \
INLINE V exp_poly##S(V r) {                                                                               \
    const V zero = {0};                                                                                   \
    V p = zero + 1.38436351e-3f;                                                                          \
    p = p * r + 8.37417133e-3f; p = p * r + 4.16680016e-2f;                                               \
    p = p * r + 1.66664317e-1f; p = p * r + 4.99999940e-1f;                                               \
    return (p * r + 1.0f) * r + 1.0f;                                                                     \
}                                                                                                         \
INLINE V sigmoid##S(V x) {                                                                                \
    const V zero = {0};                                                                                   \
    V y = pmin##S(pmax##S(-x, zero - 87.5f), zero + 89.0f);                                               \
    reduced##S e = reduce_exp##S(y);                                                                      \
    return (zero + 1.0f) / (1.0f + exp_poly##S(e.r) * e.scale);                                           \
}                                                                                                         \
INLINE V activate##S(V x, int act, V lo, V hi) {                                                          \
    const V zero = {0};                                                                                   \
    switch (act) {                                                                                        \
    case 1: return clamp##S(x, lo, hi);                                                                   \
    case 2: return (x * clamp##S(x + 3.0f, zero, zero + 6.0f)) / 6.0f;                                    \
    case 3: return sigmoid##S(x);                                                                         \
    case 4: return x * sigmoid##S(x);                                                                     \
    case 5: return clamp##S(lo * x + hi, zero, zero + 1.0f);                                              \
    case 6: return x * lo;                                                                                \
    default: return x;                                                                                    \
    }                                                                                                     \
}                                                                                                         \
INLINE V tanh##S(V x) {                                                                                   \
    const V zero = {0};                                                                                   \
    VI sign = (VI)x & INT32_MIN;                                                                          \
    V y = pmax##S((V)((VI)x ^ sign) * -2.0f, zero - 20.0f);                                               \
    reduced##S e = reduce_exp##S(y);                                                                      \
    V m = e.scale * expm1_poly##S(e.r) + (e.scale - 1.0f);                                                \
    return (V)((VI)((zero - m) / (2.0f + m)) | sign);                                                     \
}                                                                                                         \
INLINE V recurrent_activation##S(V x, int act) {                                                          \
    const V zero = {0};                                                                                   \
    if (act == 1) return sigmoid##S(x);                                                                   \
    if (act == 2) return tanh##S(x);                                                                      \
    VI keep = (x > zero) | (x != x);                                                                      \
    return SELECT(V, VI, keep, x, zero);                                                                  \
}
FLOAT_ACTIVATIONS(v4, v4i, 4)

/* FW lanes of float32 for loops that the native build runs wider: 4 in wasm (f32x4, the
 * same as v4) and SSE builds, 16 where the native build targets AVX-512 (-march=native).
 * Each lane does the same float32 operations whatever FW is: results do not depend on it. */
#if defined(__AVX512F__)
#define FW 16
#define DL 8               /* lanes of double: see the gelu / softmax / layerNormalization section */
#else
#define FW 4
#define DL 4
#endif
typedef float vw __attribute__((vector_size(FW * 4)));
typedef int32_t vwi __attribute__((vector_size(FW * 4)));
typedef float vwu __attribute__((vector_size(FW * 4), aligned(4)));
INLINE vw loadw(const float *p) { return *(const vwu *)p; }
INLINE void storew(float *p, vw v) { *(vwu *)p = v; }
INLINE vw splatw(float a) { const vw zero = {0}; return a - zero; }     /* as splatd */
#if FW > 4
PMIN_PMAX(vw, vwi, w)
FLOAT_ACTIVATIONS(vw, vwi, w)
/* A v4 splat (an activation's lo / hi) as FW lanes. */
INLINE vw widen_splat(v4 v) { return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0); }
#endif

INLINE float activate1(float x, int act, float lo, float hi) {
    return activate4(splat(x), act, splat(lo), splat(hi))[0];
}

/* The activation (if any) of FW lanes, and the store. */
INLINE void storew_activated(float *p, vw s, int act, v4 lo, v4 hi) {
#if FW > 4
    storew(p, act ? activatew(s, act, widen_splat(lo), widen_splat(hi)) : s);
#else
    store4(p, act ? activate4(s, act, lo, hi) : s);
#endif
}

/* clamp / relu on their own (when no producer's epilogue took them): n elements,
 * out may be x. */
EXPORT void clamp_f32(const float *x, float *out, int n, float lo_s, float hi_s) {
    v4 lo = splat(lo_s), hi = splat(hi_s);
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        v4 a = load4(x + i), b = load4(x + i + 4), c = load4(x + i + 8), d = load4(x + i + 12);
        store4(out + i, clamp4(a, lo, hi)); store4(out + i + 4, clamp4(b, lo, hi));
        store4(out + i + 8, clamp4(c, lo, hi)); store4(out + i + 12, clamp4(d, lo, hi));
    }
    for (; i + 4 <= n; i += 4) store4(out + i, clamp4(load4(x + i), lo, hi));
    /* Not vectorized: clang 19 makes f32x4.pmax / pmin of clamp1's compares (see SELECT). */
#pragma clang loop vectorize(disable)
    for (; i < n; i++) out[i] = clamp1(x[i], lo_s, hi_s);
}

/* A 2-D float32 view with element strides (rs between rows, cs between columns) copied
 * into the contiguous dst[rows, cols]: a transposed right operand laid out for the GEMM
 * (attention's kT). Blocks of 4 source columns (contiguous when cs == 1), read down 4 rows
 * at a time, so both sides stay in cache for a transpose. */
EXPORT void copy_2d_f32(const float *src, int rows, int cols, int rs, int cs, float *dst) {
    if (rs == 1 && cols <= 16) {
        /* A transpose to few columns (an NCHW image's channel planes into NHWC pixels): each
         * source column read 4 rows at a time with one vector load, its lanes stored to the 4
         * rows of dst. */
        int i = 0;
        for (; i + 4 <= rows; i += 4) {
            float *d = dst + (long)i * cols;
            for (int j = 0; j < cols; j++) {
                v4 v = load4(src + (long)j * cs + i);
                d[j] = v[0]; d[cols + j] = v[1]; d[2 * cols + j] = v[2]; d[3 * cols + j] = v[3];
            }
        }
        for (; i < rows; i++)
            for (int j = 0; j < cols; j++) dst[(long)i * cols + j] = src[i + (long)j * cs];
        return;
    }
    for (int i0 = 0; i0 < rows; i0 += 16) {
        int i1 = i0 + 16 < rows ? i0 + 16 : rows;
        for (int j0 = 0; j0 < cols; j0 += 16) {
            int j1 = j0 + 16 < cols ? j0 + 16 : cols;
            for (int i = i0; i < i1; i++) {
                const float *s = src + (long)i * rs;
                float *d = dst + (long)i * cols;
                for (int j = j0; j < j1; j++) d[j] = s[(long)j * cs];
            }
        }
    }
}

/* ---------------------------------------------------------------- GEMM ----
 * C[m, n] = sum_k A[m, k] B[k, n] (+ bias_m[m]) (+ bias_n[n]) (+ res[m, n], row stride ldc),
 * then the activation: a matmul's bias add and residual add fused into its epilogue.
 * Row-major with leading dimensions lda/ldb/ldc (elements); A may also be given
 * transposed through its strides (a_rs, a_cs: element strides of a row and of a
 * column), so a.T of a C-contiguous array needs no copy. B's rows must have unit
 * column stride (vector loads along n).
 *
 * Blocking: rows in panels of MC (the A panel stays in L2), within that the
 * columns in strips of 8 (the K x 8 strip of B stays in L1 across the panel's
 * rows), and a 4 x 8 register block: 8 f32x4 accumulators, a broadcast of A
 * and two loads of B per k. Edges: 4-wide column strips, then scalars; rows in
 * blocks of 1. The sum over k is in increasing k order for every element.
 *
 * With `pack` (the caller's scratch of k * (n / 8) * 8 floats), the full 8-column
 * strips of B are first copied there, each strip's K x 8 block contiguous: reading
 * a strip straight from B walks k rows ldb apart, and with ldb a multiple of 1024
 * floats (a transformer's 1024-wide weights) those rows all fall into the same few
 * cache sets and evict each other. With `packed` set, `pack` already holds them (a
 * constant B, packed once when the graph was built: gemm_pack_b).
 */
#define MC 64

/* The k loop's step (and depthwise conv2d's tap, the recurrent GEMV's), c + a b: one rounding
 * where the build has relaxed SIMD (kernels_relaxed.wasm, chosen where the engine validates it:
 * f32x4.relaxed_madd, which Chromium's V8 and Firefox's SpiderMonkey lower to the CPU's FMA,
 * tests/browser/test_kernel_throughput.py), two elsewhere (kernels.wasm, e.g. in WebKitGTK 2.50
 * and Node 20, which have no relaxed SIMD; the native build, -ffp-contract=off). On an Intel
 * core, which issues f32x4 multiplies and adds on the same two ports, the FMA takes the 4 x 8
 * block from ~30 to ~39 GFLOP/s and depthwise conv2d 1.08-1.13x faster (README "Kernels").
 * Every step of every element's sum, whichever path (block, row, strip, column) computes it, is
 * the same operation, so a product split over rows (the kernel pool) has the same bits. */
#ifdef __wasm_relaxed_simd__
INLINE v4 madd4(v4 a, v4 b, v4 c) { return __builtin_wasm_relaxed_madd_f32x4(a, b, c); }
INLINE float madd1(float a, float b, float c) { return madd4(splat(a), splat(b), splat(c))[0]; }
#else
INLINE v4 madd4(v4 a, v4 b, v4 c) { return c + a * b; }
INLINE float madd1(float a, float b, float c) { return c + a * b; }
#endif
/* The same for FW lanes (depthwise conv2d's channel blocks, the recurrent GEMV's columns): madd4
 * in wasm (FW 4), a multiply and an add in the native build. */
INLINE vw maddw(vw a, vw b, vw c) {
#if FW > 4
    return c + a * b;
#else
    return madd4(a, b, c);
#endif
}

/* The epilogue of 8 sums in the graph's order: ((sum + bias) + residual), stored (sums8),
 * then the activation, applied to the stored values in place (activate8: the same float32
 * values, so the same bits); absent terms are skipped (no work for them). Split so that the
 * 4 x 8 block stores all its accumulators before any activation runs: with the activation's
 * code between them and the other rows' accumulators still live, SpiderMonkey's optimizing
 * compiler kept the k loop's 8 accumulators and 4 broadcasts out of registers, and sgemm ran
 * at 13-32 GFLOP/s in Firefox 153 against ~60 in Chromium; stored first, ~60 in both
 * (README "Browsers"). */
INLINE void sums8(float *c, v4 s0, v4 s1, const float *bm, const float *bn, const float *r) {
    if (bm) { v4 b = splat(*bm); s0 += b; s1 += b; }
    if (bn) { s0 += load4(bn); s1 += load4(bn + 4); }
    if (r) { s0 += load4(r); s1 += load4(r + 4); }
    store4(c, s0); store4(c + 4, s1);
}

INLINE void activate8(float *c, int act, v4 lo, v4 hi) {
    store4(c, activate4(load4(c), act, lo, hi));
    store4(c + 4, activate4(load4(c + 4), act, lo, hi));
}

INLINE void epilogue8(float *c, v4 s0, v4 s1, const float *bm, const float *bn, const float *r, int act,
                      v4 lo, v4 hi) {
    sums8(c, s0, s1, bm, bn, r);
    if (act) activate8(c, act, lo, hi);
}

INLINE void epilogue4(float *c, v4 s0, const float *bm, const float *bn, const float *r, int act, v4 lo, v4 hi) {
    if (bm) s0 += splat(*bm);
    if (bn) s0 += load4(bn);
    if (r) s0 += load4(r);
    if (act) s0 = activate4(s0, act, lo, hi);
    store4(c, s0);
}

/* One element's epilogue (epilogue4's operations on one lane) and store. */
INLINE void gemm_store1(float *c, int ldc, int i, int j, float s, const float *bias_m, const float *bias_n,
                        const float *res, int act, float lo_s, float hi_s) {
    if (bias_m) s += bias_m[i];
    if (bias_n) s += bias_n[j];
    if (res) s += res[(long)i * ldc + j];
    c[(long)i * ldc + j] = act ? activate1(s, act, lo_s, hi_s) : s;
}

/* B's full 8-column strips, each K x 8 block contiguous, into pack (k * (n / 8) * 8 floats). */
EXPORT void gemm_pack_b(int k, int n, const float *b, int ldb, float *pack) {
    for (int j = 0; j + 8 <= n; j += 8) {
        float *dst = pack + (long)j * k;
        const float *src = b + j;
        for (int p = 0; p < k; p++, dst += 8, src += ldb) {
            store4(dst, load4(src));
            store4(dst + 4, load4(src + 4));
        }
    }
}

EXPORT void sgemm(int m, int n, int k,
                  const float *a, int a_rs, int a_cs,
                  const float *b, int ldb,
                  float *c, int ldc,
                  const float *bias_m, const float *bias_n, const float *res,
                  int act, float lo_s, float hi_s, float *pack, int packed) {
    v4 lo = splat(lo_s), hi = splat(hi_s);
    if (pack && !packed) gemm_pack_b(k, n, b, ldb, pack);
    for (int i0 = 0; i0 < m; i0 += MC) {
        int i1 = i0 + MC < m ? i0 + MC : m;
        int j = 0;
        for (; j + 8 <= n; j += 8) {
            /* The strip and the step from one k to the next, in B or in its packed copy. */
            const float *bj = pack ? pack + (long)j * k : b + j;
            int step = pack ? 8 : ldb;
            const float *bnj = bias_n ? bias_n + j : 0;
            int i = i0;
            for (; i + 4 <= i1; i += 4) {
                const float *a0 = a + (long)i * a_rs, *a1 = a0 + a_rs, *a2 = a1 + a_rs, *a3 = a2 + a_rs;
                v4 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
                const float *bk = bj;
                for (int p = 0; p < k; p++, bk += step) {
                    v4 b0 = load4(bk), b1 = load4(bk + 4);
                    long off = (long)p * a_cs;
                    v4 x0 = splat(a0[off]), x1 = splat(a1[off]), x2 = splat(a2[off]), x3 = splat(a3[off]);
                    c00 = madd4(x0, b0, c00); c01 = madd4(x0, b1, c01);
                    c10 = madd4(x1, b0, c10); c11 = madd4(x1, b1, c11);
                    c20 = madd4(x2, b0, c20); c21 = madd4(x2, b1, c21);
                    c30 = madd4(x3, b0, c30); c31 = madd4(x3, b1, c31);
                }
                float *ci = c + (long)i * ldc + j;
                const float *ri = res ? res + (long)i * ldc + j : 0, *bmi = bias_m ? bias_m + i : 0;
                sums8(ci, c00, c01, bmi, bnj, ri);
                sums8(ci + ldc, c10, c11, bmi ? bmi + 1 : 0, bnj, ri ? ri + ldc : 0);
                sums8(ci + 2 * ldc, c20, c21, bmi ? bmi + 2 : 0, bnj, ri ? ri + 2 * ldc : 0);
                sums8(ci + 3 * ldc, c30, c31, bmi ? bmi + 3 : 0, bnj, ri ? ri + 3 * ldc : 0);
                if (act)
                    for (int r = 0; r < 4; r++) activate8(ci + (long)r * ldc, act, lo, hi);
            }
            for (; i < i1; i++) {
                const float *a0 = a + (long)i * a_rs;
                v4 c00 = {0}, c01 = {0};
                const float *bk = bj;
                for (int p = 0; p < k; p++, bk += step) {
                    v4 x0 = splat(a0[(long)p * a_cs]);
                    c00 = madd4(x0, load4(bk), c00); c01 = madd4(x0, load4(bk + 4), c01);
                }
                epilogue8(c + (long)i * ldc + j, c00, c01, bias_m ? bias_m + i : 0, bnj,
                          res ? res + (long)i * ldc + j : 0, act, lo, hi);
            }
        }
        /* The last n % 8 columns: a 4-wide strip, then single columns, 4 rows at a time
         * (4 independent sums: one row's chain of dependent adds would leave the vector
         * units mostly idle, e.g. 5 of attention's 197 key columns), then row by row. */
        for (; j + 4 <= n; j += 4) {
            const float *bnj = bias_n ? bias_n + j : 0;
            int i = i0;
            for (; i + 4 <= i1; i += 4) {
                const float *a0 = a + (long)i * a_rs, *a1 = a0 + a_rs, *a2 = a1 + a_rs, *a3 = a2 + a_rs;
                v4 c00 = {0}, c10 = {0}, c20 = {0}, c30 = {0};
                const float *bk = b + j;
                for (int p = 0; p < k; p++, bk += ldb) {
                    v4 b0 = load4(bk);
                    long off = (long)p * a_cs;
                    c00 = madd4(splat(a0[off]), b0, c00); c10 = madd4(splat(a1[off]), b0, c10);
                    c20 = madd4(splat(a2[off]), b0, c20); c30 = madd4(splat(a3[off]), b0, c30);
                }
                for (int r = 0; r < 4; r++)
                    epilogue4(c + (long)(i + r) * ldc + j, r == 0 ? c00 : r == 1 ? c10 : r == 2 ? c20 : c30,
                              bias_m ? bias_m + i + r : 0, bnj, res ? res + (long)(i + r) * ldc + j : 0, act, lo, hi);
            }
            for (; i < i1; i++) {
                const float *a0 = a + (long)i * a_rs;
                v4 c00 = {0};
                const float *bk = b + j;
                for (int p = 0; p < k; p++, bk += ldb)
                    c00 = madd4(splat(a0[(long)p * a_cs]), load4(bk), c00);
                epilogue4(c + (long)i * ldc + j, c00, bias_m ? bias_m + i : 0, bnj,
                          res ? res + (long)i * ldc + j : 0, act, lo, hi);
            }
        }
        for (; j < n; j++) {
            int i = i0;
            for (; i + 4 <= i1; i += 4) {
                const float *a0 = a + (long)i * a_rs, *a1 = a0 + a_rs, *a2 = a1 + a_rs, *a3 = a2 + a_rs;
                float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
                for (int p = 0; p < k; p++) {
                    float bp = b[(long)p * ldb + j];
                    long off = (long)p * a_cs;
                    s0 = madd1(a0[off], bp, s0); s1 = madd1(a1[off], bp, s1);
                    s2 = madd1(a2[off], bp, s2); s3 = madd1(a3[off], bp, s3);
                }
                for (int r = 0; r < 4; r++)
                    gemm_store1(c, ldc, i + r, j, r == 0 ? s0 : r == 1 ? s1 : r == 2 ? s2 : s3, bias_m, bias_n, res,
                                act, lo_s, hi_s);
            }
            for (; i < i1; i++) {
                const float *a0 = a + (long)i * a_rs;
                float s = 0.0f;
                for (int p = 0; p < k; p++)
                    s = madd1(a0[(long)p * a_cs], b[(long)p * ldb + j], s);
                gemm_store1(c, ldc, i, j, s, bias_m, bias_n, res, act, lo_s, hi_s);
            }
        }
    }
}

/* §8.9.35 matmul of computed operands over a batch (attention's q kT and p v, every head
 * in one call): C_i = A_i B_i, then the activation (no bias, no residual), each exactly as
 * sgemm computes it. Matrix i of A starts at a + i * a_bs (element strides a_rs, a_cs), of B at
 * b + i * b_bs (b_rs, b_cs), of C at c + i * c_bs (rows ldc apart, unit column stride); a
 * batch stride of 0 broadcasts one matrix. A B whose columns are not contiguous (kT as a
 * transposed view) is first laid out in `scratch` (k * n floats) by copy_2d_f32; with
 * `pack` (k * (n / 8) * 8 floats) B's strips are packed there per matrix, as sgemm does.
 */
EXPORT void sgemm_batch(int batch, int m, int n, int k,
                        const float *a, int a_bs, int a_rs, int a_cs,
                        const float *b, int b_bs, int b_rs, int b_cs,
                        float *c, int c_bs, int ldc,
                        int act, float lo_s, float hi_s, float *scratch, float *pack) {
    for (int i = 0; i < batch; i++) {
        const float *bi = b + (long)i * b_bs;
        int ldb = b_rs;
        if (b_cs != 1) {
            copy_2d_f32(bi, k, n, b_rs, b_cs, scratch);
            bi = scratch;
            ldb = n;
        }
        sgemm(m, n, k, a + (long)i * a_bs, a_rs, a_cs, bi, ldb, c + (long)i * c_bs, ldc, 0, 0, 0,
              act, lo_s, hi_s, pack, 0);
    }
}

/* The GEMM's epilogue on its own, for a product computed elsewhere (the host's BLAS,
 * which is faster there than sgemm above): dst[m, n] = ((src + bias_m[i]) + bias_n[j])
 * + res, then the activation; the same float32 operations in the same order as
 * epilogue8. Rows of n contiguous floats, ld apart in src, dst and res alike (ld = n, or
 * a product written in place into a channel slice of a wider buffer: a concat's part);
 * dst may be src, and res may be dst (each element is read before it is written).
 */
EXPORT void gemm_epilogue(const float *src, float *dst, int m, int n, int ld, const float *bias_m,
                          const float *bias_n, const float *res, int act, float lo_s, float hi_s) {
    v4 lo = splat(lo_s), hi = splat(hi_s);
    for (int i = 0; i < m; i++) {
        const float *si = src + (long)i * ld, *ri = res ? res + (long)i * ld : 0, *bmi = bias_m ? bias_m + i : 0;
        float *di = dst + (long)i * ld;
        int j = 0;
#if FW > 4
        for (; j + FW <= n; j += FW) {              /* epilogue8's operations, FW lanes at a time */
            vw s = loadw(si + j);
            if (bmi) s += *bmi;
            if (bias_n) s += loadw(bias_n + j);
            if (ri) s += loadw(ri + j);
            storew_activated(di + j, s, act, lo, hi);
        }
#endif
        for (; j + 8 <= n; j += 8)
            epilogue8(di + j, load4(si + j), load4(si + j + 4), bmi, bias_n ? bias_n + j : 0, ri ? ri + j : 0,
                      act, lo, hi);
        for (; j + 4 <= n; j += 4)
            epilogue4(di + j, load4(si + j), bmi, bias_n ? bias_n + j : 0, ri ? ri + j : 0, act, lo, hi);
        for (; j < n; j++) {
            float s = si[j];
            if (bias_m) s += bias_m[i];
            if (bias_n) s += bias_n[j];
            if (res) s += ri[j];
            di[j] = act ? activate1(s, act, lo_s, hi_s) : s;
        }
    }
}

/* ----------------------------------------------------- depthwise conv2d ----
 * §8.9.10 conv2d with groups == input channels == output channels, NHWC input
 * [batches, h, w, ch], filter as [kh, kw, ch] (tap-major, channels contiguous),
 * output [batches, oh, ow, ch]; explicit begin padding (pt, pl), the end padding
 * being implied by oh/ow. out = bias + sum over the taps inside the input (the
 * padding contributes zeros), in row-major tap order, then the activation.
 * Where FW > 4 (the AVX-512 native build), four adjacent output pixels go together
 * (depthwise_pixels4: one filter load for four sums, four independent sums whatever the
 * channel count -- a 16-channel layer had one chain of dependent adds per pixel before),
 * channels FW, then 4, then 1 at a time. Otherwise (and a row's last pixels) one pixel at a
 * time, channels 4 FW at a time (4 accumulators of FW lanes), then FW, then 4, then 1: in
 * wasm (V8, f32x4) the four-pixel blocks with their column checks measured 1.1-1.4x slower.
 * Each output's sum is the same either way.
 */
/* Four output pixels, sw * ch floats apart in x, taps of rows i_first..i_last - 1; a column
 * tap outside the input is skipped for the pixels it misses. */
#define DEPTHWISE_PIXELS4(V, LOADV, STORE_ACTIVATED, WIDTH)                                               \
    for (; c + (WIDTH) <= ch; c += (WIDTH)) {                                                             \
        V s0 = {0};                                                                                       \
        if (bias) s0 = LOADV(bias + c);                                                                   \
        V s1 = s0, s2 = s0, s3 = s0;                                                                      \
        for (int i = i_first; i < i_last; i++) {                                                          \
            const float *xr = xb + ((long)(y0 + i * dh) * w + x0) * ch + c;                               \
            const float *fr = filter + (long)i * kw * ch + c;                                             \
            for (int j = 0; j < kw; j++) {                                                                \
                int x = x0 + j * dw;                                                                      \
                const float *xp = xr + (long)j * dw * ch;                                                 \
                V f = LOADV(fr + (long)j * ch);                                                           \
                if (x >= 0 && x + 3 * sw < w) {                                                           \
                    s0 += LOADV(xp) * f; s1 += LOADV(xp + step) * f;                                      \
                    s2 += LOADV(xp + 2 * step) * f; s3 += LOADV(xp + 3 * step) * f;                       \
                    continue;                                                                             \
                }                                                                                         \
                if (x >= 0 && x < w) s0 += LOADV(xp) * f;                                                 \
                if (x + sw >= 0 && x + sw < w) s1 += LOADV(xp + step) * f;                                \
                if (x + 2 * sw >= 0 && x + 2 * sw < w) s2 += LOADV(xp + 2 * step) * f;                    \
                if (x + 3 * sw >= 0 && x + 3 * sw < w) s3 += LOADV(xp + 3 * step) * f;                    \
            }                                                                                             \
        }                                                                                                 \
        STORE_ACTIVATED(o + c, s0, act, lo, hi); STORE_ACTIVATED(o + ch + c, s1, act, lo, hi);            \
        STORE_ACTIVATED(o + 2 * ch + c, s2, act, lo, hi); STORE_ACTIVATED(o + 3 * ch + c, s3, act, lo, hi); \
    }
/* The same for two groups of FW channels at once: eight independent sums (four were still
 * bound by the adds' latency on wide layers, 14x14x240 5x5). */
#define DEPTHWISE_PIXELS4_PAIR(PX)                                                                        \
    if (in##PX) {                                                                                         \
        a##PX += loadw(xp + PX * step) * f0; b##PX += loadw(xp + PX * step + FW) * f1;                     \
    }
#define DEPTHWISE_PIXELS4_2FW                                                                             \
    for (; c + 2 * FW <= ch; c += 2 * FW) {                                                               \
        vw a0 = {0}, b0 = {0};                                                                            \
        if (bias) { a0 = loadw(bias + c); b0 = loadw(bias + c + FW); }                                    \
        vw a1 = a0, a2 = a0, a3 = a0, b1 = b0, b2 = b0, b3 = b0;                                          \
        for (int i = i_first; i < i_last; i++) {                                                          \
            const float *xr = xb + ((long)(y0 + i * dh) * w + x0) * ch + c;                               \
            const float *fr = filter + (long)i * kw * ch + c;                                             \
            for (int j = 0; j < kw; j++) {                                                                \
                int x = x0 + j * dw;                                                                      \
                const float *xp = xr + (long)j * dw * ch;                                                 \
                vw f0 = loadw(fr + (long)j * ch), f1 = loadw(fr + (long)j * ch + FW);                     \
                int in0 = x >= 0 && x < w, in1 = x + sw >= 0 && x + sw < w;                               \
                int in2 = x + 2 * sw >= 0 && x + 2 * sw < w, in3 = x + 3 * sw >= 0 && x + 3 * sw < w;     \
                DEPTHWISE_PIXELS4_PAIR(0) DEPTHWISE_PIXELS4_PAIR(1)                                       \
                DEPTHWISE_PIXELS4_PAIR(2) DEPTHWISE_PIXELS4_PAIR(3)                                       \
            }                                                                                             \
        }                                                                                                 \
        storew_activated(o + c, a0, act, lo, hi); storew_activated(o + c + FW, b0, act, lo, hi);          \
        storew_activated(o + ch + c, a1, act, lo, hi); storew_activated(o + ch + c + FW, b1, act, lo, hi); \
        storew_activated(o + 2 * ch + c, a2, act, lo, hi);                                                \
        storew_activated(o + 2 * ch + c + FW, b2, act, lo, hi);                                           \
        storew_activated(o + 3 * ch + c, a3, act, lo, hi);                                                \
        storew_activated(o + 3 * ch + c + FW, b3, act, lo, hi);                                           \
    }
INLINE void store4_activated(float *p, v4 s, int act, v4 lo, v4 hi) { store4(p, act ? activate4(s, act, lo, hi) : s); }

#if FW > 4
INLINE float loadf(const float *p) { return *p; }
INLINE void storef_activated(float *p, float s, int act, v4 lo, v4 hi) {
    *p = act ? activate1(s, act, lo[0], hi[0]) : s;
}
INLINE void depthwise_pixels4(const float *xb, int w, int ch, const float *filter, int kw, const float *bias,
                              float *o, int y0, int x0, int i_first, int i_last, int sw, int dh, int dw,
                              int act, v4 lo, v4 hi) {
    long step = (long)sw * ch;
    int c = 0;
    DEPTHWISE_PIXELS4_2FW
    DEPTHWISE_PIXELS4(vw, loadw, storew_activated, FW)
    DEPTHWISE_PIXELS4(v4, load4, store4_activated, 4)
    DEPTHWISE_PIXELS4(float, loadf, storef_activated, 1)
}
#endif

EXPORT void depthwise_nhwc(int batches, int h, int w, int ch,
                           const float *x, const float *filter, int kh, int kw,
                           const float *bias, float *out, int oh, int ow,
                           int sh, int sw, int dh, int dw, int pt, int pl,
                           int act, float lo_s, float hi_s) {
    v4 lo = splat(lo_s), hi = splat(hi_s);
    for (int nb = 0; nb < batches; nb++) {
        const float *xb = x + (long)nb * h * w * ch;
        for (int oy = 0; oy < oh; oy++) {
            /* The filter rows inside the input for this output row. */
            int y0 = oy * sh - pt;
            int i_first = 0, i_last = kh;
            while (i_first < kh && y0 + i_first * dh < 0) i_first++;
            while (i_last > i_first && y0 + (i_last - 1) * dh >= h) i_last--;
            for (int ox = 0; ox < ow; ox++) {
                int x0 = ox * sw - pl;
#if FW > 4
                if (ow >= 4) {
                    /* A row's last block ends at its last pixel: it recomputes a few pixels of
                     * the block before (the same values) rather than leave 1-3 to the slower
                     * one-pixel path. */
                    int bx = ox + 4 <= ow ? ox : ow - 4;
                    depthwise_pixels4(xb, w, ch, filter, kw, bias, out + (((long)nb * oh + oy) * ow + bx) * ch,
                                      y0, bx * sw - pl, i_first, i_last, sw, dh, dw, act, lo, hi);
                    ox = bx + 3;
                    continue;
                }
#endif
                int j_first = 0, j_last = kw;
                while (j_first < kw && x0 + j_first * dw < 0) j_first++;
                while (j_last > j_first && x0 + (j_last - 1) * dw >= w) j_last--;
                float *o = out + (((long)nb * oh + oy) * ow + ox) * ch;
                int c = 0;
                for (; c + 4 * FW <= ch; c += 4 * FW) {
                    vw s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
                    if (bias) {
                        s0 = loadw(bias + c); s1 = loadw(bias + c + FW);
                        s2 = loadw(bias + c + 2 * FW); s3 = loadw(bias + c + 3 * FW);
                    }
                    for (int i = i_first; i < i_last; i++) {
                        const float *xr = xb + ((long)(y0 + i * dh) * w + x0) * ch + c;
                        const float *fr = filter + (long)i * kw * ch + c;
                        for (int j = j_first; j < j_last; j++) {
                            const float *xp = xr + (long)j * dw * ch, *fp = fr + (long)j * ch;
                            s0 = maddw(loadw(xp), loadw(fp), s0);
                            s1 = maddw(loadw(xp + FW), loadw(fp + FW), s1);
                            s2 = maddw(loadw(xp + 2 * FW), loadw(fp + 2 * FW), s2);
                            s3 = maddw(loadw(xp + 3 * FW), loadw(fp + 3 * FW), s3);
                        }
                    }
                    storew_activated(o + c, s0, act, lo, hi); storew_activated(o + c + FW, s1, act, lo, hi);
                    storew_activated(o + c + 2 * FW, s2, act, lo, hi); storew_activated(o + c + 3 * FW, s3, act, lo, hi);
                }
#if FW > 4
                for (; c + FW <= ch; c += FW) {
                    vw s0 = bias ? loadw(bias + c) : (vw){0};
                    for (int i = i_first; i < i_last; i++) {
                        const float *xr = xb + ((long)(y0 + i * dh) * w + x0) * ch + c;
                        const float *fr = filter + (long)i * kw * ch + c;
                        for (int j = j_first; j < j_last; j++)
                            s0 = maddw(loadw(xr + (long)j * dw * ch), loadw(fr + (long)j * ch), s0);
                    }
                    storew_activated(o + c, s0, act, lo, hi);
                }
#endif
                for (; c + 4 <= ch; c += 4) {
                    v4 s0 = bias ? load4(bias + c) : (v4){0};
                    for (int i = i_first; i < i_last; i++) {
                        const float *xr = xb + ((long)(y0 + i * dh) * w + x0) * ch + c;
                        const float *fr = filter + (long)i * kw * ch + c;
                        for (int j = j_first; j < j_last; j++)
                            s0 = madd4(load4(xr + (long)j * dw * ch), load4(fr + (long)j * ch), s0);
                    }
                    store4(o + c, act ? activate4(s0, act, lo, hi) : s0);
                }
                for (; c < ch; c++) {
                    float s = bias ? bias[c] : 0.0f;
                    for (int i = i_first; i < i_last; i++)
                        for (int j = j_first; j < j_last; j++)
                            s = madd1(xb[((long)(y0 + i * dh) * w + x0 + j * dw) * ch + c],
                                      filter[((long)i * kw + j) * ch + c], s);
                    o[c] = act ? activate1(s, act, lo_s, hi_s) : s;
                }
            }
        }
    }
}

/* ------------------------------------------------------ direct conv2d ----
 * §8.9.10 conv2d with groups 1 and few input channels (an image's first convolution, 3
 * channels, where im2col's patch rows are 27 floats and cost more than the product): one
 * image, out[oy, ox, o] = act((sum over (i, j, ch) of x[iy, ix, ch] f[i, j, ch, o]) +
 * bias[o]), the sum in the im2col GEMM's k order (i, j, ch) from zero, the bias and the
 * activation as its epilogue8 applies them. x is read through element strides (ys, xs, cs),
 * so an NCHW image needs no transpose to NHWC first; filter [kh, kw, c, o] (the GEMM's
 * matrix), output NHWC [oh, ow, o] with o a multiple of 4. Output channels go in strips of
 * FW (then 4), pixels 8 at a time along the row, sharing each weight load; taps outside
 * the input (padding) are skipped, as depthwise_nhwc skips them.
 */
/* One strip of V's lanes of output channels for 8 pixels of a row (np 8) or 1 (np 1): eight
 * independent sums, so the adds' latency is hidden. */
#define CONV_DIRECT_TERM(k) if (in##k) s##k += xc[k * step] * wv;
#define CONV_DIRECT_BLOCK(V, S, LOADV, STORE_ACTIVATED)                                                   \
INLINE void conv_direct_block##S(const float *x, int h, int w, int c, int ys, int xs, int cs,            \
                                 const float *f, int kh, int kw, int o, const float *bias, float *dst,    \
                                 int oy, int ox, int np, int sh, int sw, int dh, int dw, int pt, int pl,  \
                                 int act, v4 lo, v4 hi) {                                                 \
    V s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0};                     \
    for (int i = 0; i < kh; i++) {                                                                        \
        int iy = oy * sh + i * dh - pt;                                                                   \
        if (iy < 0 || iy >= h) continue;                                                                  \
        const float *xr = x + (long)iy * ys;                                                              \
        for (int j = 0; j < kw; j++) {                                                                    \
            int ix = ox * sw + j * dw - pl;                                                               \
            int in0 = ix >= 0 && ix < w, in1 = ix + sw >= 0 && ix + sw < w;                               \
            int in2 = ix + 2 * sw >= 0 && ix + 2 * sw < w, in3 = ix + 3 * sw >= 0 && ix + 3 * sw < w;     \
            int in4 = ix + 4 * sw >= 0 && ix + 4 * sw < w, in5 = ix + 5 * sw >= 0 && ix + 5 * sw < w;     \
            int in6 = ix + 6 * sw >= 0 && ix + 6 * sw < w, in7 = ix + 7 * sw >= 0 && ix + 7 * sw < w;     \
            const float *xp = xr + (long)ix * xs;                                                         \
            long step = (long)sw * xs;                                                                    \
            const float *fk = f + (long)(i * kw + j) * c * o;                                             \
            for (int ch = 0; ch < c; ch++) {                                                              \
                V wv = LOADV(fk + (long)ch * o);                                                          \
                const float *xc = xp + (long)ch * cs;                                                     \
                CONV_DIRECT_TERM(0)                                                                       \
                if (np == 8) {                                                                            \
                    CONV_DIRECT_TERM(1) CONV_DIRECT_TERM(2) CONV_DIRECT_TERM(3)                           \
                    CONV_DIRECT_TERM(4) CONV_DIRECT_TERM(5) CONV_DIRECT_TERM(6) CONV_DIRECT_TERM(7)       \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
    if (bias) {                                                                                           \
        V b = LOADV(bias);                                                                                \
        s0 += b; s1 += b; s2 += b; s3 += b; s4 += b; s5 += b; s6 += b; s7 += b;                           \
    }                                                                                                     \
    STORE_ACTIVATED(dst, s0, act, lo, hi);                                                                \
    if (np == 8) {                                                                                        \
        STORE_ACTIVATED(dst + o, s1, act, lo, hi); STORE_ACTIVATED(dst + 2 * o, s2, act, lo, hi);         \
        STORE_ACTIVATED(dst + 3 * o, s3, act, lo, hi); STORE_ACTIVATED(dst + 4 * o, s4, act, lo, hi);     \
        STORE_ACTIVATED(dst + 5 * o, s5, act, lo, hi); STORE_ACTIVATED(dst + 6 * o, s6, act, lo, hi);     \
        STORE_ACTIVATED(dst + 7 * o, s7, act, lo, hi);                                                    \
    }                                                                                                     \
}
CONV_DIRECT_BLOCK(v4, 4, load4, store4_activated)
#if FW > 4
CONV_DIRECT_BLOCK(vw, w, loadw, storew_activated)
#endif

/* The strips of one output row: blocks of 8 pixels, then the row's last pixels one by one. */
#define CONV_DIRECT_ROW(S, WIDTH)                                                                         \
    for (; s + (WIDTH) <= o; s += (WIDTH)) {                                                              \
        const float *bs = bias ? bias + s : 0;                                                            \
        int ox = 0;                                                                                       \
        for (; ox + 8 <= ow; ox += 8)                                                                     \
            conv_direct_block##S(x, h, w, c, ys, xs, cs, filter + s, kh, kw, o, bs, row + (long)ox * o + s, \
                                 oy, ox, 8, sh, sw, dh, dw, pt, pl, act, lo, hi);                         \
        for (; ox < ow; ox++)                                                                             \
            conv_direct_block##S(x, h, w, c, ys, xs, cs, filter + s, kh, kw, o, bs, row + (long)ox * o + s, \
                                 oy, ox, 1, sh, sw, dh, dw, pt, pl, act, lo, hi);                         \
    }

EXPORT void conv2d_direct(const float *x, int h, int w, int c, int ys, int xs, int cs,
                          const float *filter, int kh, int kw, const float *bias, float *out, int oh, int ow, int o,
                          int sh, int sw, int dh, int dw, int pt, int pl, int act, float lo_s, float hi_s) {
    v4 lo = splat(lo_s), hi = splat(hi_s);
    for (int oy = 0; oy < oh; oy++) {
        float *row = out + (long)oy * ow * o;
        int s = 0;
#if FW > 4
        CONV_DIRECT_ROW(w, FW)
#endif
        CONV_DIRECT_ROW(4, 4)
    }
}

/* ------------------------------------------------------------------ gelu ----
 * §8.9.23 gelu: 0.5 x (1 + erf(x / sqrt 2)), float32 in and out, evaluated in double
 * and rounded once, the same way as ops/activations.py's numpy path: with
 * t = erfc(|x| / sqrt 2), 1 + erf(x / sqrt 2) is t for x < 0 (no cancellation) and
 * 2 - t for x >= 0. erfc(z) = exp(-z^2) R(z), R read from the caller's table of
 * piecewise polynomials (ops/elementwise_unary.py's interpolants: `intervals` rows
 * of 5 power-basis coefficients in s in [0, 1) over intervals of 1/inv_width),
 * clipped to the last interval beyond its end, where exp(-z^2) makes it 0 anyway.
 * The table comes as a pointer because this module keeps no data of its own.
 * DL lanes of double at a time (see below): the double evaluation is what keeps the
 * result within one float32 ULP, and branch-free lanes are what makes it fast.
 * Groups of DL that all lie within |x| <= 2 sqrt 2 (most of a network's activations)
 * take a shorter path without exp or lookups (gelud_near).
 */
/* The double-precision kernels (gelu, softmax, layerNormalization) work on DL lanes of
 * double at a time: 4 (two f64x2 in wasm, as the previous two-pairs-per-four-floats code
 * did; two SSE2 registers natively), 8 where the native build targets AVX-512 (the host
 * build is -march=native): one register, 2-4x the throughput of f64x2 on the host, where
 * these kernels ran ~3 ns an element. Every lane does the same double operations
 * whatever DL is (the build forbids FMA contraction), so the results do not depend on it
 * beyond the order of softmax's and layerNormalization's sums. (DL is defined with FW.) */
typedef double vd __attribute__((vector_size(DL * 8)));
typedef int64_t vdl __attribute__((vector_size(DL * 8)));
typedef float vdf __attribute__((vector_size(DL * 4)));
/* Unaligned views: numpy's float32 buffers are only 4-byte, float64 only 8-byte aligned. */
typedef float vdfu __attribute__((vector_size(DL * 4), aligned(4)));
typedef double vdu __attribute__((vector_size(DL * 8), aligned(8)));

/* a - (+0) is a exactly (-0 included), so the compiler drops the subtraction: a broadcast.
 * (0 + a would cost an add: it turns -0 into +0.) */
INLINE vd splatd(double a) { const vd zero = {0}; return a - zero; }
/* mask ? a : b, lane by lane (mask lanes all ones or all zeros). */
INLINE vd selectd(vdl mask, vd a, vd b) { return (vd)(((vdl)a & mask) | ((vdl)b & ~mask)); }
/* DL floats as doubles, and back (rounded once, to nearest). */
INLINE vd loadd(const float *p) { return __builtin_convertvector(*(const vdfu *)p, vd); }
INLINE void stored(float *p, vd v) { *(vdfu *)p = __builtin_convertvector(v, vdf); }
/* Lane extractions and sums through f64x2 halves: wasm has no wider vector, and lanes of
 * one taken directly would go through the stack. */
typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2l __attribute__((vector_size(16)));
INLINE int all_lanes(vdl mask) {
#if DL == 8
    typedef int64_t v4l __attribute__((vector_size(32)));
    v4l q = __builtin_shufflevector(mask, mask, 0, 1, 2, 3) & __builtin_shufflevector(mask, mask, 4, 5, 6, 7);
#else
    vdl q = mask;
#endif
    v2l h = __builtin_shufflevector(q, q, 0, 1) & __builtin_shufflevector(q, q, 2, 3);
    return (h[0] & h[1]) != 0;
}
INLINE double firstd(vd v) { return ((v2d)__builtin_shufflevector(v, v, 0, 1))[0]; }
INLINE double sumd(vd v) {
#if DL == 8
    typedef double v4d __attribute__((vector_size(32)));
    v4d q = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
#else
    vd q = v;
#endif
    v2d h = __builtin_shufflevector(q, q, 0, 1) + __builtin_shufflevector(q, q, 2, 3);
    return h[0] + h[1];
}

/* exp(-w) for w >= 0 (or NaN): -w = r - k ln 2 with |r| <= ln2 / 2, exp(r)
 * by its Taylor polynomial to degree 8 (truncation < 3e-10 relative, a hundredth of the
 * 2^-25 that a result rounded once to float32 can absorb and stay within one ULP; the
 * tests check gelu and softmax at one ULP), times 2^-k built from its bit pattern in two halves so
 * that neither leaves the normal range. k is rounded to nearest by adding 1.5 * 2^52,
 * whose low mantissa bits then hold k. ln 2 is split in a head with trailing zero bits
 * (k * head is exact for k < 2^11) and a tail. w >= 745 (or +inf) gives 0; NaN stays. */
INLINE vd exp_negd(vd w) {
    const vd shifter = splatd(6755399441055744.0);
    vdl in_range = w < splatd(745.0);
    vd wc = selectd(in_range, w, splatd(0.0));
    vd t = wc * splatd(1.44269504088896340736) + shifter;
    vd kd = t - shifter;
    vdl k = (vdl)t - (vdl)shifter;
    vd r = (kd * splatd(0.693147180369123816490) - wc) + kd * splatd(1.90821492927058770002e-10);
    vd p = splatd(1.0 / 40320.0);                                               /* 1/8! */
    p = p * r + splatd(1.0 / 5040.0);
    p = p * r + splatd(1.0 / 720.0);     p = p * r + splatd(1.0 / 120.0);
    p = p * r + splatd(1.0 / 24.0);      p = p * r + splatd(1.0 / 6.0);
    p = p * r + splatd(0.5);             p = p * r + splatd(1.0);
    p = p * r + splatd(1.0);
    vdl k1 = k >> 1, k2 = k - k1;
    vdl bias = (vdl)splatd(0.0) + 1023;
    vd e = p * (vd)((bias - k1) << 52) * (vd)((bias - k2) << 52);
    vdl is_nan = w != w;
    return selectd(in_range, e, (vd)((vdl)w & is_nan));     /* NaN's own bits, else +0 */
}

/* gelu of DL lanes of double (float32 values), see above. The table has rows of 6
 * (5 coefficients and a zero); each lane reads its interval's row. */
INLINE vd gelud(vd v, const double *table, int intervals, double inv_width) {
    vd z = (vd)((vdl)v & INT64_MAX) * splatd(0.70710678118654752440);   /* |x| / sqrt 2 */
    vd u = z * splatd(inv_width);
    vd end = splatd((double)intervals);
    u = selectd(u < end, u, end);                 /* beyond the table, or NaN: the last interval's end */
    /* floor(u) by the 1.5 * 2^52 trick on u - 1/2 (a tie may round an integer u down to
     * the previous interval, evaluated at its s = 1: as accurate); u = intervals becomes
     * the last interval's s = 1. */
    const vd shifter = splatd(6755399441055744.0);
    vd t = (u - splatd(0.5)) + shifter;
    vdl whole = (vdl)t - (vdl)shifter;
    vdl past = whole == (vdl)splatd(0.0) + intervals;
    whole = whole + past;
    vd s = u - ((t - shifter) - (vd)((vdl)splatd(1.0) & past));
    /* Each lane's row, its index taken through f64x2-sized halves (no stack in wasm). */
    v2l w01 = __builtin_shufflevector(whole, whole, 0, 1), w23 = __builtin_shufflevector(whole, whole, 2, 3);
    const double *r0 = table + w01[0] * 6, *r1 = table + w01[1] * 6, *r2 = table + w23[0] * 6,
                 *r3 = table + w23[1] * 6;
#if DL == 8
    v2l w45 = __builtin_shufflevector(whole, whole, 4, 5), w67 = __builtin_shufflevector(whole, whole, 6, 7);
    const double *r4 = table + w45[0] * 6, *r5 = table + w45[1] * 6, *r6 = table + w67[0] * 6,
                 *r7 = table + w67[1] * 6;
#define COEFFICIENT(j) ((vd){r0[j], r1[j], r2[j], r3[j], r4[j], r5[j], r6[j], r7[j]})
#else
#define COEFFICIENT(j) ((vd){r0[j], r1[j], r2[j], r3[j]})
#endif
    vd r = COEFFICIENT(4);
    r = r * s + COEFFICIENT(3);
    r = r * s + COEFFICIENT(2);
    r = r * s + COEFFICIENT(1);
    r = r * s + COEFFICIENT(0);
#undef COEFFICIENT
    vd tail = r * exp_negd(z * z);
    vd half = selectd(v >= splatd(0.0), splatd(2.0) - tail, tail);
    return half * splatd(0.5) * v;
}

/* The short path, for |x| <= near_x (ERF_NEAR sqrt 2 rounded down to a float): 1 + erf(z) =
 * 1 + z P(z^2 inv_near2), inv_near2 = 1 / ERF_NEAR^2, P of degree 12 from the caller's `near`
 * coefficients (ops/elementwise_unary.py), no exp and no lookup; in double, so 1 + erf(z)
 * keeps its precision where erf(z) nears -1. */
INLINE vd gelud_near(vd v, const double *near, double inv_near2) {
    vd z = v * splatd(0.70710678118654752440);
    vd s = z * z * splatd(inv_near2);
    vd p = splatd(near[12]);
    p = p * s + splatd(near[11]); p = p * s + splatd(near[10]); p = p * s + splatd(near[9]);
    p = p * s + splatd(near[8]);  p = p * s + splatd(near[7]);  p = p * s + splatd(near[6]);
    p = p * s + splatd(near[5]);  p = p * s + splatd(near[4]);  p = p * s + splatd(near[3]);
    p = p * s + splatd(near[2]);  p = p * s + splatd(near[1]);  p = p * s + splatd(near[0]);
    return (splatd(1.0) + z * p) * splatd(0.5) * v;
}

/* DL floats at a time: the short path when all of them are near (most of a network's
 * activations), else the table path. NaN and infinities are never near. The last
 * n % DL floats go one at a time through lane 0. */
EXPORT void gelu_f32(const float *x, float *out, int n, const double *table, int intervals, double inv_width,
                     const double *near, float near_x, double inv_near2) {
    vd limit = splatd(near_x);
    int i = 0;
    for (; i + DL <= n; i += DL) {
        vd v = loadd(x + i);
        vdl inside = (vd)((vdl)v & INT64_MAX) <= limit;
        if (all_lanes(inside))
            stored(out + i, gelud_near(v, near, inv_near2));
        else
            stored(out + i, gelud(v, table, intervals, inv_width));
    }
    for (; i < n; i++) out[i] = (float)firstd(gelud(splatd(x[i]), table, intervals, inv_width));
}

/* --------------------------------------------------------------- softmax ----
 * §8.9.55 softmax along contiguous rows of length n (rows of them), float32 in and
 * out, in double like ops/activations.py's numpy path: e = exp(x - max) (x - max <= 0,
 * so exp_negd(max - x)), out = e / sum(e), rounded once. A NaN anywhere in a row makes
 * the maximum NaN and so the whole row NaN, as numpy's max does. `scratch` holds a
 * row's exponentials (n doubles, the caller's).
 */
EXPORT void softmax_rows_f32(const float *x, float *out, int rows, int n, double *scratch) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * n;
        float *orow = out + (long)r * n;
        float m1 = xr[0];
        int i = 1;
        if (n >= 4) {
            v4 m = load4(xr);
            for (i = 4; i + 4 <= n; i += 4) {
                v4 v = load4(xr + i);
                m = (v4)(((v4i)v & ((v > m) | (v != v))) | ((v4i)m & ~((v > m) | (v != v))));
            }
            float lanes1 = m[1], lanes2 = m[2], lanes3 = m[3];   /* constant lanes: no stack */
            m1 = m[0];
            if (m1 == m1 && (lanes1 > m1 || lanes1 != lanes1)) m1 = lanes1;
            if (m1 == m1 && (lanes2 > m1 || lanes2 != lanes2)) m1 = lanes2;
            if (m1 == m1 && (lanes3 > m1 || lanes3 != lanes3)) m1 = lanes3;
        }
        for (; i < n; i++) if (m1 == m1 && (xr[i] > m1 || xr[i] != xr[i])) m1 = xr[i];
        vd md = splatd(m1), sums = splatd(0.0);
        i = 0;
        for (; i + DL <= n; i += DL) {
            vd e = exp_negd(md - loadd(xr + i));
            *(vdu *)(scratch + i) = e;
            sums += e;
        }
        double sum = sumd(sums);
        for (; i < n; i++) {
            double e = firstd(exp_negd(splatd(m1 - (double)xr[i])));
            scratch[i] = e;
            sum += e;
        }
        vd total = splatd(sum);
        i = 0;
        for (; i + DL <= n; i += DL) stored(orow + i, *(vdu *)(scratch + i) / total);
        for (; i < n; i++) orow[i] = (float)(scratch[i] / sum);
    }
}

/* ---------------------------------------------------------------- im2col ----
 * The patch matrix of output rows [oy0, oy0 + rows) of a conv2d on one NHWC image
 * [h, w, c]: row (oy - oy0) * ow + ox, columns (i, j, ch) in that order (the filter
 * matrix's row order for NHWC), zeros where a tap falls into the padding (begin
 * padding pt, pl; the end padding is implied). Replaces kh * kw strided numpy copies
 * and the padded copy of the input: with MobileNet's first conv (3 channels) those
 * copies moved 3 floats at a time.
 */
EXPORT void im2col_nhwc(const float *x, int h, int w, int c, int kh, int kw, int sh, int sw, int dh, int dw,
                        int pt, int pl, int oy0, int rows, int ow, float *out) {
    for (int oy = oy0; oy < oy0 + rows; oy++) {
        for (int ox = 0; ox < ow; ox++) {
            int ix0 = ox * sw - pl;
            for (int i = 0; i < kh; i++) {
                int iy = oy * sh + i * dh - pt;
                if (dw == 1 && iy >= 0 && iy < h && ix0 >= 0 && ix0 + kw <= w) {
                    /* The window's row lies inside the input: its kw pixels are kw * c contiguous
                     * floats (one copy instead of kw, which matters for an image's 3 channels). */
                    const float *src = x + ((long)iy * w + ix0) * c;
                    int span = kw * c, e = 0;
                    for (; e + 4 <= span; e += 4) store4(out + e, load4(src + e));
                    for (; e < span; e++) out[e] = src[e];
                    out += span;
                    continue;
                }
                for (int j = 0; j < kw; j++) {
                    int ix = ox * sw + j * dw - pl;
                    int ch = 0;
                    if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                        const float *src = x + ((long)iy * w + ix) * c;
                        for (; ch + 4 <= c; ch += 4) store4(out + ch, load4(src + ch));
                        for (; ch < c; ch++) out[ch] = src[ch];
                    } else {
                        for (; ch + 4 <= c; ch += 4) store4(out + ch, splat(0.0f));
                        for (; ch < c; ch++) out[ch] = 0.0f;
                    }
                    out += c;
                }
            }
        }
    }
}

/* ---------------------------------------------------- layerNormalization ----
 * §8.9.30 over the last axis: each of `rows` rows of n floats becomes
 * (x - mean) / sqrt(variance + epsilon) * scale + bias (scale, bias: n floats or
 * null), the mean and the (biased) variance of the row, and the formula, in
 * double, rounded once to float32 -- the numpy path's formula with no float32
 * rounding in between (a transformer's rows are 256-1024 long: one pass of
 * numpy per term cost ~10 ns an element in Pyodide). NaN/inf in a row give NaN
 * for the row, as the formula does.
 */
EXPORT void layernorm_rows_f32(const float *x, float *out, int rows, int n,
                               const float *scale, const float *bias, double epsilon) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * n;
        float *orow = out + (long)r * n;
        /* DL lanes of double at a time, the last n % DL elements one by one. */
        vd sums = splatd(0.0);
        int i = 0;
        for (; i + DL <= n; i += DL) sums += loadd(xr + i);
        double sum = sumd(sums);
        for (; i < n; i++) sum += xr[i];
        double mean = sum / n;
        vd meand = splatd(mean), squaresd = splatd(0.0);
        for (i = 0; i + DL <= n; i += DL) {
            vd d = loadd(xr + i) - meand;
            squaresd += d * d;
        }
        double squares = sumd(squaresd);
        for (; i < n; i++) {
            double d = xr[i] - mean;
            squares += d * d;
        }
        double deviation1 = __builtin_sqrt(squares / n + epsilon);
        vd deviation = splatd(deviation1);
        for (i = 0; i + DL <= n; i += DL) {
            vd v = (loadd(xr + i) - meand) / deviation;
            if (scale) v *= loadd(scale + i);
            if (bias) v += loadd(bias + i);
            stored(orow + i, v);
        }
        for (; i < n; i++) {
            double v = (xr[i] - mean) / deviation1;
            if (scale) v *= scale[i];
            if (bias) v += bias[i];
            orow[i] = (float)v;
        }
    }
}

/* ------------------------------------------------------------ lstm / gru ----
 * §8.9.33 lstm and §8.9.25 gru over a whole sequence, one direction per call: the
 * caller computed every step's input part xw[t] = x[t] Wᵀ + bias (+ recurrentBias for
 * lstm) as one GEMM up front; this loop does the rest of each step (the spec's
 * lstmCell / gruCell decomposition, §8.9.34 / §8.9.26) without leaving C:
 *   recurrent product  h R: rt is Rᵀ [hidden, gates * hidden] row-major; each output
 *                      column is a sum over k in increasing k order, 32 columns at a
 *                      time in registers (one pass over rt per step and batch row);
 *   gates              the float32 operations of the decomposition, in its order;
 *   activations        sigmoid, tanh (relu), float32 four lanes at a time (sigmoid4,
 *                      tanh4: within 2 and 3 float32 ULP of the exact value).
 * h, c: [batch, hidden] states, read and updated in place. seq (or null): step t's
 * hidden state is written to seq + t * seq_stride ([batch, hidden] there). `gates`:
 * the caller's scratch, batch * gates * hidden floats (gru: + batch * hidden more).
 * Gate offsets are given in units of hidden (the `layout` option's order).
 */
/* x[i] = act(x[i]), n floats, in place. */
INLINE void activate_f32(float *x, int n, int act) {
    int i = 0;
#if FW > 4
    for (; i + FW <= n; i += FW) storew(x + i, recurrent_activationw(loadw(x + i), act));
#endif
    for (; i + 4 <= n; i += 4) store4(x + i, recurrent_activation4(load4(x + i), act));
    for (; i < n; i++) x[i] = recurrent_activation4(splat(x[i]), act)[0];
}

/* activate_f32 on its own: the recurrent activations' accuracy sweep (tests/kernels) and
 * their timing in a browser call it. */
EXPORT void recurrent_activation_f32(float *x, int n, int act) { activate_f32(x, n, act); }

/* One row k of the 8 FW-column block: s0..s7 += h[k] * rt[k, 8 FW columns] (row at r). */
#define GEMV_ROW8(hk, r)                                                                               \
    {                                                                                                  \
        vw x = splatw(hk);                                                                             \
        s0 = maddw(x, loadw(r), s0); s1 = maddw(x, loadw((r) + FW), s1);                               \
        s2 = maddw(x, loadw((r) + 2 * FW), s2); s3 = maddw(x, loadw((r) + 3 * FW), s3);                \
        s4 = maddw(x, loadw((r) + 4 * FW), s4); s5 = maddw(x, loadw((r) + 5 * FW), s5);                \
        s6 = maddw(x, loadw((r) + 6 * FW), s6); s7 = maddw(x, loadw((r) + 7 * FW), s7);                \
    }

/* out[j] = add[j] + sum_k h[k] rt[k, j] for j < n (rt row stride ld), k in increasing order;
 * with_add 0 (a constant at every call: the branches fold): out[j] = the sum alone. */
INLINE void gemv(const float *h, int hidden, const float *rt, int ld, int n, const float *add, float *out,
                 const int with_add) {
#define GEMV_ADD(a, s) (with_add ? (a) + (s) : (s))
    int j = 0;
    /* Columns 8 FW at a time (32 in wasm, 128 with AVX-512 natively), then 4 FW, then FW. */
    for (; j + 8 * FW <= n; j += 8 * FW) {
        /* 8 independent accumulators: the adds' latency overlaps. */
        vw s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0}, s7 = {0};
        const float *r = rt + j;
        int k = 0;
        /* Two rows an iteration (the same adds in the same order). Node 20's V8 (11.3) pays a
         * fixed cost per wasm loop iteration that Chromium 156's does not: the zoo's lstm loop
         * (32 steps, 64 -> 128) takes 0.170 -> 0.150 ms under Node and 0.11 ms in Chromium
         * either way; four rows took Node to 0.116 ms but Chromium to 0.118 (+5 %). */
        for (; k + 2 <= hidden; k += 2, r += 2 * ld) {
            GEMV_ROW8(h[k], r)
            GEMV_ROW8(h[k + 1], r + ld)
        }
        for (; k < hidden; k++, r += ld) GEMV_ROW8(h[k], r)
        float *o = out + j;
        const float *a = add + j;
        storew(o, GEMV_ADD(loadw(a), s0)); storew(o + FW, GEMV_ADD(loadw(a + FW), s1));
        storew(o + 2 * FW, GEMV_ADD(loadw(a + 2 * FW), s2)); storew(o + 3 * FW, GEMV_ADD(loadw(a + 3 * FW), s3));
        storew(o + 4 * FW, GEMV_ADD(loadw(a + 4 * FW), s4)); storew(o + 5 * FW, GEMV_ADD(loadw(a + 5 * FW), s5));
        storew(o + 6 * FW, GEMV_ADD(loadw(a + 6 * FW), s6)); storew(o + 7 * FW, GEMV_ADD(loadw(a + 7 * FW), s7));
    }
    for (; j + 4 * FW <= n; j += 4 * FW) {
        vw s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        const float *r = rt + j;
        for (int k = 0; k < hidden; k++, r += ld) {
            vw x = splatw(h[k]);
            s0 = maddw(x, loadw(r), s0); s1 = maddw(x, loadw(r + FW), s1);
            s2 = maddw(x, loadw(r + 2 * FW), s2); s3 = maddw(x, loadw(r + 3 * FW), s3);
        }
        storew(out + j, GEMV_ADD(loadw(add + j), s0)); storew(out + j + FW, GEMV_ADD(loadw(add + j + FW), s1));
        storew(out + j + 2 * FW, GEMV_ADD(loadw(add + j + 2 * FW), s2));
        storew(out + j + 3 * FW, GEMV_ADD(loadw(add + j + 3 * FW), s3));
    }
#if FW > 4
    for (; j + FW <= n; j += FW) {
        vw s0 = {0};
        const float *r = rt + j;
        for (int k = 0; k < hidden; k++, r += ld) s0 = maddw(splatw(h[k]), loadw(r), s0);
        storew(out + j, GEMV_ADD(loadw(add + j), s0));
    }
#endif
    for (; j + 4 <= n; j += 4) {
        v4 s0 = {0};
        const float *r = rt + j;
        for (int k = 0; k < hidden; k++, r += ld) s0 = madd4(splat(h[k]), load4(r), s0);
        store4(out + j, GEMV_ADD(load4(add + j), s0));
    }
    for (; j < n; j++) {
        float s = 0.0f;
        for (int k = 0; k < hidden; k++) s = madd1(h[k], rt[(long)k * ld + j], s);
        out[j] = GEMV_ADD(add[j], s);
    }
#undef GEMV_ADD
}

INLINE void gemv_add(const float *h, int hidden, const float *rt, int ld, int n, const float *add, float *out) {
    gemv(h, hidden, rt, ld, n, add, out, 1);
}

/* out[j] = sum_k h[k] rt[k, j]: gemv_add without the add (no zero-filled out to add to;
 * `add` is out, never read: no arithmetic on a null pointer). */
INLINE void gemv_store(const float *h, int hidden, const float *rt, int ld, int n, float *out) {
    gemv(h, hidden, rt, ld, n, out, out, 0);
}

/* lstm: gates = xw[t] + h Rᵀ; i, f, o = f_act(gate + c ⊙ peephole) (peephole i, o, f, or
 * null); g = g_act(gate); c' = f ⊙ c + i ⊙ g; h' = o ⊙ h_act(c'). */
EXPORT void lstm_sequence_f32(int steps, int batch, int hidden, const float *xw, const float *rt,
                              const float *peephole, float *h, float *c, float *seq, int seq_stride, float *gates,
                              int gi, int go, int gf, int gg, int reverse, int act_f, int act_g, int act_h) {
    int width = 4 * hidden;
    for (int s = 0; s < steps; s++) {
        int t = reverse ? steps - 1 - s : s;
        for (int b = 0; b < batch; b++) {
            float *gb = gates + (long)b * width, *hb = h + (long)b * hidden, *cb = c + (long)b * hidden;
            gemv_add(hb, hidden, rt, width, width, xw + ((long)t * batch + b) * width, gb);
            float *ig = gb + gi * hidden, *og = gb + go * hidden, *fg = gb + gf * hidden, *gg_ = gb + gg * hidden;
            if (peephole) {
                for (int j = 0; j < hidden; j++) {
                    ig[j] += cb[j] * peephole[j];
                    og[j] += cb[j] * peephole[hidden + j];
                    fg[j] += cb[j] * peephole[2 * hidden + j];
                }
            }
            activate_f32(ig, hidden, act_f);
            activate_f32(fg, hidden, act_f);
            activate_f32(og, hidden, act_f);
            activate_f32(gg_, hidden, act_g);
            for (int j = 0; j < hidden; j++) cb[j] = fg[j] * cb[j] + ig[j] * gg_[j];
            for (int j = 0; j < hidden; j++) gg_[j] = cb[j];           /* h_act(c') in g's place */
            activate_f32(gg_, hidden, act_h);
            for (int j = 0; j < hidden; j++) hb[j] = og[j] * gg_[j];
            if (seq) {
                float *out = seq + (long)t * seq_stride + (long)b * hidden;
                for (int j = 0; j < hidden; j++) out[j] = hb[j];
            }
        }
    }
}

/* The end of a gru step on lanes [j, j + lanes of V), z and r activated: with reset_after,
 * n's argument xw_n + r ⊙ (h R_nᵀ + rb_n) (hn holds the parenthesis; without, hn holds the
 * whole argument); n = g(argument); h' = z ⊙ h + (1 - z) ⊙ n into h and seq (or null).
 * V: vw or v4, LOAD / STORE / ACT its load, store, activation. (z's and r's activations in
 * this loop too took Chromium's gru_sequence_f32 from 0.0765 to 0.0765 ms where relu's took
 * 0.0653 to 0.0593: three activations' constants do not stay in registers.) */
#define GRU_STEP_END(V, LOAD, STORE, ACT, j)                                                           \
    {                                                                                                  \
        V z = LOAD(zg + (j));                                                                          \
        V arg = reset_after ? LOAD(xn + (j)) + LOAD(rg + (j)) * LOAD(hn + (j)) : LOAD(hn + (j));       \
        V n = ACT(arg, act_g), hv = LOAD(hb + (j));                                                    \
        V out = z * hv + ((V){0} + 1.0f - z) * n;                                                      \
        STORE(hb + (j), out);                                                                          \
        if (seq_b) STORE(seq_b + (j), out);                                                            \
    }
INLINE v4 load1(const float *p) { return splat(*p); }
INLINE void store1(float *p, v4 v) { *p = v[0]; }

INLINE void gru_step_end(int hidden, const float *zg, const float *rg, const float *xn, const float *hn, float *hb,
                         float *seq_b, const int reset_after, int act_g) {
    int j = 0;
#if FW > 4
    for (; j + FW <= hidden; j += FW) GRU_STEP_END(vw, loadw, storew, recurrent_activationw, j)
#endif
    for (; j + 4 <= hidden; j += 4) GRU_STEP_END(v4, load4, store4, recurrent_activation4, j)
    for (; j < hidden; j++) GRU_STEP_END(v4, load1, store1, recurrent_activation4, j)
}

/* gru: z = f(xw_z + h R_zᵀ), r likewise; n = g(xw_n + r ⊙ (h R_nᵀ + rb_n)) with reset_after,
 * else g(xw_n + (r ⊙ h) R_nᵀ); h' = z ⊙ h + (1 - z) ⊙ n. xw holds x Wᵀ + bias + recurrentBias
 * (the caller's GEMM added them as one vector) but for n's recurrentBias with reset_after,
 * which is inside r's product: rb_n (hidden floats, or null) is that part, added here as
 * the spec's decomposition does, to h R_nᵀ. */
EXPORT void gru_sequence_f32(int steps, int batch, int hidden, const float *xw, const float *rt, const float *rb_n,
                             float *h, float *seq, int seq_stride, float *gates, int gz, int gr, int gn,
                             int reverse, int reset_after, int act_f, int act_g) {
    int width = 3 * hidden;
    float *rh = gates + (long)batch * width;           /* r ⊙ h (without reset_after) */
    for (int s = 0; s < steps; s++) {
        int t = reverse ? steps - 1 - s : s;
        for (int b = 0; b < batch; b++) {
            float *gb = gates + (long)b * width, *hb = h + (long)b * hidden;
            const float *xb = xw + ((long)t * batch + b) * width, *xn = xb + gn * hidden;
            float *zg = gb + gz * hidden, *rg = gb + gr * hidden, *hn = gb + gn * hidden;
            float *seq_b = seq ? seq + (long)t * seq_stride + (long)b * hidden : 0;
            gemv_add(hb, hidden, rt + gz * hidden, width, hidden, xb + gz * hidden, zg);
            gemv_add(hb, hidden, rt + gr * hidden, width, hidden, xb + gr * hidden, rg);
            activate_f32(zg, hidden, act_f);
            activate_f32(rg, hidden, act_f);
            if (reset_after) {
                /* hn = rb_n + h R_nᵀ (one add: the same float as (h R_nᵀ) + rb_n). */
                if (rb_n)
                    gemv_add(hb, hidden, rt + gn * hidden, width, hidden, rb_n, hn);
                else
                    gemv_store(hb, hidden, rt + gn * hidden, width, hidden, hn);
                gru_step_end(hidden, zg, rg, xn, hn, hb, seq_b, 1, act_g);
            } else {
                for (int j = 0; j < hidden; j++) rh[j] = rg[j] * hb[j];
                gemv_add(rh, hidden, rt + gn * hidden, width, hidden, xn, hn);
                gru_step_end(hidden, zg, rg, xn, hn, hb, seq_b, 0, act_g);
            }
        }
    }
}

/* --------------------------------------------------------------- pooling ----
 * §8.9.37 maxPool2d on NHWC float32 [batches, h, w, ch] → [batches, oh, ow, ch]: each
 * output the maximum over the window's offsets that lie inside the input (begin padding
 * pt, pl; the end padding, ceil rounding included, implied by oh, ow), taken in (i, j)
 * order from -inf, as ops/pooling.py's np.maximum over its taps: NaN propagates, and on
 * equal values (-0, +0) the earlier one stays. A window with nothing inside gives -inf. */
INLINE v4 max4(v4 m, v4 a) {
    v4i take = (a > m) | (a != a);
    return (v4)(((v4i)a & take) | ((v4i)m & ~take));
}

#if FW > 4
INLINE vw maxw(vw m, vw a) {             /* max4's lanes, FW at a time */
    vwi take = (a > m) | (a != a);
    return (vw)(((vwi)a & take) | ((vwi)m & ~take));
}
#else
INLINE vw maxw(vw m, vw a) { return max4(m, a); }
#endif

/* The maximum over an ni x nj block of taps (the window's part inside the input) starting at
 * p (channel c of the first tap), rows `row` and taps `col` floats apart: channels c.. c+3
 * (`wide`) or c alone (in lane 0). */
INLINE v4 window_max4(const float *p, long row, long col, int ni, int nj, int wide) {
    v4 m = splat(-__builtin_inff());
    for (int i = 0; i < ni; i++, p += row)
        for (int j = 0; j < nj; j++) m = max4(m, wide ? load4(p + j * col) : splat(p[j * col]));
    return m;
}

/* The window's part inside the input is the same rectangle for every channel: its bounds are
 * found once per output pixel, then the channels go 4 FW (four maxima in flight: one chain of
 * dependent maxima per pixel waited on each one's latency), FW (16 with AVX-512 natively), 4,
 * 1 at a time over the taps in (i, j) order. */
EXPORT void maxpool_nhwc(int batches, int h, int w, int ch, const float *x, float *out, int oh, int ow,
                         int kh, int kw, int sh, int sw, int dh, int dw, int pt, int pl) {
    long row = (long)dh * w * ch, col = (long)dw * ch;
    for (int nb = 0; nb < batches; nb++) {
        const float *xb = x + (long)nb * h * w * ch;
        for (int oy = 0; oy < oh; oy++) {
            int y0 = oy * sh - pt, i_first = 0, i_last = kh;
            while (i_first < kh && y0 + i_first * dh < 0) i_first++;
            while (i_last > i_first && y0 + (i_last - 1) * dh >= h) i_last--;
            for (int ox = 0; ox < ow; ox++) {
                int x0 = ox * sw - pl, j_first = 0, j_last = kw;
                while (j_first < kw && x0 + j_first * dw < 0) j_first++;
                while (j_last > j_first && x0 + (j_last - 1) * dw >= w) j_last--;
                float *o = out + (((long)nb * oh + oy) * ow + ox) * ch;
                const float *first = xb + ((long)(y0 + i_first * dh) * w + x0 + j_first * dw) * ch;
                int ni = i_last - i_first, nj = j_last - j_first, c = 0;
                for (; c + 4 * FW <= ch; c += 4 * FW) {      /* four independent maxima in flight */
                    vw m0 = splatw(-__builtin_inff()), m1 = m0, m2 = m0, m3 = m0;
                    const float *p = first + c;
                    for (int i = 0; i < ni; i++, p += row)
                        for (int j = 0; j < nj; j++) {
                            const float *q = p + j * col;
                            m0 = maxw(m0, loadw(q)); m1 = maxw(m1, loadw(q + FW));
                            m2 = maxw(m2, loadw(q + 2 * FW)); m3 = maxw(m3, loadw(q + 3 * FW));
                        }
                    storew(o + c, m0); storew(o + c + FW, m1); storew(o + c + 2 * FW, m2); storew(o + c + 3 * FW, m3);
                }
#if FW > 4
                for (; c + FW <= ch; c += FW) {
                    vw m = splatw(-__builtin_inff());
                    const float *p = first + c;
                    for (int i = 0; i < ni; i++, p += row)
                        for (int j = 0; j < nj; j++) m = maxw(m, loadw(p + j * col));
                    storew(o + c, m);
                }
#endif
                for (; c + 4 <= ch; c += 4) store4(o + c, window_max4(first + c, row, col, ni, nj, 1));
                for (; c < ch; c++) o[c] = window_max4(first + c, row, col, ni, nj, 0)[0];
            }
        }
    }
}

/* Global averagePool2d on NHWC float32 [batches, hw, ch] → [batches, ch]: the rows summed
 * in order from the first (float32, as numpy's sum over the outer axes adds them), then
 * divided by hw. */
EXPORT void global_avgpool_nhwc(int batches, int hw, int ch, const float *x, float *out) {
    float count = (float)hw;
    for (int nb = 0; nb < batches; nb++) {
        const float *xb = x + (long)nb * hw * ch;
        float *o = out + (long)nb * ch;
        int c = 0;
        for (; c + 16 <= ch; c += 16) {
            v4 s0 = load4(xb + c), s1 = load4(xb + c + 4), s2 = load4(xb + c + 8), s3 = load4(xb + c + 12);
            for (int p = 1; p < hw; p++) {
                const float *r = xb + (long)p * ch + c;
                s0 += load4(r); s1 += load4(r + 4); s2 += load4(r + 8); s3 += load4(r + 12);
            }
            v4 d = splat(count);
            store4(o + c, s0 / d); store4(o + c + 4, s1 / d); store4(o + c + 8, s2 / d); store4(o + c + 12, s3 / d);
        }
        for (; c + 4 <= ch; c += 4) {
            v4 s0 = load4(xb + c);
            for (int p = 1; p < hw; p++) s0 += load4(xb + (long)p * ch + c);
            store4(o + c, s0 / splat(count));
        }
        for (; c < ch; c++) {
            float s = xb[c];
            for (int p = 1; p < hw; p++) s += xb[(long)p * ch + c];
            o[c] = s / count;
        }
    }
}

/* ------------------------------------------------------- channel scaling ----
 * out[b, p, c] = x[b, p, c] * s[b, c]: a mul of an NHWC feature map [batches, rows, ch] by a
 * per-channel [batches, 1, 1, ch] operand (a squeeze-excitation block's scale), one float32
 * product each as numpy's broadcast multiply; out may be x. */
EXPORT void scale_channels_f32(const float *x, const float *s, float *out, int batches, int rows, int ch) {
    for (int b = 0; b < batches; b++) {
        const float *sb = s + (long)b * ch;
        for (int p = 0; p < rows; p++) {
            const float *xr = x + ((long)b * rows + p) * ch;
            float *o = out + ((long)b * rows + p) * ch;
            int c = 0;
            for (; c + 4 <= ch; c += 4) store4(o + c, load4(xr + c) * load4(sb + c));
            for (; c < ch; c++) o[c] = xr[c] * sb[c];
        }
    }
}
