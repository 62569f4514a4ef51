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

/* Activation epilogue: act 0 = none, 1 = clamp(lo, hi) (relu is clamp(0, +inf)).
 * min(max(x, lo), hi) (§8.9.8 clamp's decomposition) written with compare masks:
 * NaN passes through (both compares are false), and a value equal to a bound gives
 * the bound itself, so -0 and +0 come out as numpy's maximum/minimum give them on
 * the host (its SIMD max returns the second operand on ties). */
INLINE v4 clamp4(v4 x, v4 lo, v4 hi) {
    v4i below = x <= lo, above = x >= hi;
    v4i r = ((v4i)lo & below) | ((v4i)x & ~below);
    return (v4)(((v4i)hi & above) | (r & ~above));
}
INLINE float clamp1(float x, float lo, float hi) {
    if (x <= lo) x = lo;
    if (x >= hi) x = hi;
    return x;
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
    for (; i < n; i++) out[i] = clamp1(x[i], lo_s, hi_s);
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
 * cache sets and evict each other.
 */
#define MC 64

INLINE void epilogue8(float *c, v4 s0, v4 s1, const float *bm, const float *bn, const float *r, int act,
                      v4 lo, v4 hi) {
    /* The graph's order: ((sum + bias) + residual), then the activation; absent terms
     * are skipped (no work for them). */
    if (bm) { v4 b = splat(*bm); s0 += b; s1 += b; }
    if (bn) { s0 += load4(bn); s1 += load4(bn + 4); }
    if (r) { s0 += load4(r); s1 += load4(r + 4); }
    if (act) { s0 = clamp4(s0, lo, hi); s1 = clamp4(s1, lo, hi); }
    store4(c, s0); store4(c + 4, s1);
}

INLINE void epilogue4(float *c, v4 s0, const float *bm, const float *bn, const float *r, int act, v4 lo, v4 hi) {
    if (bm) s0 += splat(*bm);
    if (bn) s0 += load4(bn);
    if (r) s0 += load4(r);
    if (act) s0 = clamp4(s0, lo, hi);
    store4(c, s0);
}

EXPORT void sgemm(int m, int n, int k,
                  const float *a, int a_rs, int a_cs,
                  const float *b, int ldb,
                  float *c, int ldc,
                  const float *bias_m, const float *bias_n, const float *res,
                  int act, float lo_s, float hi_s, float *pack) {
    v4 lo = splat(lo_s), hi = splat(hi_s);
    if (pack) {
        for (int j = 0; j + 8 <= n; j += 8) {
            float *dst = pack + (long)j * k;
            const float *src = b + j;
            for (int p = 0; p < k; p++, dst += 8, src += ldb) {
                store4(dst, load4(src));
                store4(dst + 4, load4(src + 4));
            }
        }
    }
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
                    c00 += x0 * b0; c01 += x0 * b1;
                    c10 += x1 * b0; c11 += x1 * b1;
                    c20 += x2 * b0; c21 += x2 * b1;
                    c30 += x3 * b0; c31 += x3 * b1;
                }
                float *ci = c + (long)i * ldc + j;
                const float *ri = res ? res + (long)i * ldc + j : 0, *bmi = bias_m ? bias_m + i : 0;
                epilogue8(ci, c00, c01, bmi, bnj, ri, act, lo, hi);
                epilogue8(ci + ldc, c10, c11, bmi ? bmi + 1 : 0, bnj, ri ? ri + ldc : 0, act, lo, hi);
                epilogue8(ci + 2 * ldc, c20, c21, bmi ? bmi + 2 : 0, bnj, ri ? ri + 2 * ldc : 0, act, lo, hi);
                epilogue8(ci + 3 * ldc, c30, c31, bmi ? bmi + 3 : 0, bnj, ri ? ri + 3 * ldc : 0, act, lo, hi);
            }
            for (; i < i1; i++) {
                const float *a0 = a + (long)i * a_rs;
                v4 c00 = {0}, c01 = {0};
                const float *bk = bj;
                for (int p = 0; p < k; p++, bk += step) {
                    v4 x0 = splat(a0[(long)p * a_cs]);
                    c00 += x0 * load4(bk); c01 += x0 * load4(bk + 4);
                }
                epilogue8(c + (long)i * ldc + j, c00, c01, bias_m ? bias_m + i : 0, bnj,
                          res ? res + (long)i * ldc + j : 0, act, lo, hi);
            }
        }
        for (; j + 4 <= n; j += 4) {
            const float *bnj = bias_n ? bias_n + j : 0;
            for (int i = i0; i < i1; i++) {
                const float *a0 = a + (long)i * a_rs;
                v4 c00 = {0};
                const float *bk = b + j;
                for (int p = 0; p < k; p++, bk += ldb)
                    c00 += splat(a0[(long)p * a_cs]) * load4(bk);
                epilogue4(c + (long)i * ldc + j, c00, bias_m ? bias_m + i : 0, bnj,
                          res ? res + (long)i * ldc + j : 0, act, lo, hi);
            }
        }
        for (; j < n; j++) {
            for (int i = i0; i < i1; i++) {
                const float *a0 = a + (long)i * a_rs;
                float s = 0.0f;
                for (int p = 0; p < k; p++)
                    s += a0[(long)p * a_cs] * b[(long)p * ldb + j];
                if (bias_m) s += bias_m[i];
                if (bias_n) s += bias_n[j];
                if (res) s += res[(long)i * ldc + j];
                c[(long)i * ldc + j] = act ? clamp1(s, lo_s, hi_s) : s;
            }
        }
    }
}

/* ----------------------------------------------------- depthwise conv2d ----
 * §8.9.10 conv2d with groups == input channels == output channels, NHWC input
 * [batches, h, w, ch], filter as [kh, kw, ch] (tap-major, channels contiguous),
 * output [batches, oh, ow, ch]; explicit begin padding (pt, pl), the end padding
 * being implied by oh/ow. out = bias + sum over the taps inside the input (the
 * padding contributes zeros), in row-major tap order, then the activation.
 * Channels go 16 at a time (4 accumulators), then 4, then 1.
 */
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
                int j_first = 0, j_last = kw;
                while (j_first < kw && x0 + j_first * dw < 0) j_first++;
                while (j_last > j_first && x0 + (j_last - 1) * dw >= w) j_last--;
                float *o = out + (((long)nb * oh + oy) * ow + ox) * ch;
                int c = 0;
                for (; c + 16 <= ch; c += 16) {
                    v4 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
                    if (bias) { s0 = load4(bias + c); s1 = load4(bias + c + 4); s2 = load4(bias + c + 8); s3 = load4(bias + c + 12); }
                    for (int i = i_first; i < i_last; i++) {
                        const float *xr = xb + ((long)(y0 + i * dh) * w + x0) * ch + c;
                        const float *fr = filter + (long)i * kw * ch + c;
                        for (int j = j_first; j < j_last; j++) {
                            const float *xp = xr + (long)j * dw * ch, *fp = fr + (long)j * ch;
                            s0 += load4(xp) * load4(fp);
                            s1 += load4(xp + 4) * load4(fp + 4);
                            s2 += load4(xp + 8) * load4(fp + 8);
                            s3 += load4(xp + 12) * load4(fp + 12);
                        }
                    }
                    if (act) { s0 = clamp4(s0, lo, hi); s1 = clamp4(s1, lo, hi); s2 = clamp4(s2, lo, hi); s3 = clamp4(s3, lo, hi); }
                    store4(o + c, s0); store4(o + c + 4, s1); store4(o + c + 8, s2); store4(o + c + 12, s3);
                }
                for (; c + 4 <= ch; c += 4) {
                    v4 s0 = bias ? load4(bias + c) : (v4){0};
                    for (int i = i_first; i < i_last; i++) {
                        const float *xr = xb + ((long)(y0 + i * dh) * w + x0) * ch + c;
                        const float *fr = filter + (long)i * kw * ch + c;
                        for (int j = j_first; j < j_last; j++)
                            s0 += load4(xr + (long)j * dw * ch) * load4(fr + (long)j * ch);
                    }
                    store4(o + c, act ? clamp4(s0, lo, hi) : s0);
                }
                for (; c < ch; c++) {
                    float s = bias ? bias[c] : 0.0f;
                    for (int i = i_first; i < i_last; i++)
                        for (int j = j_first; j < j_last; j++)
                            s += xb[((long)(y0 + i * dh) * w + x0 + j * dw) * ch + c] * filter[((long)i * kw + j) * ch + c];
                    o[c] = act ? clamp1(s, lo_s, hi_s) : s;
                }
            }
        }
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
 */
typedef union { double d; uint64_t u; } bits64;

/* 2^-k for 0 <= k <= 1022, from its bit pattern. */
INLINE double pow2_neg(int k) {
    bits64 b;
    b.u = (uint64_t)(1023 - k) << 52;
    return b.d;
}

/* exp(-w) for w >= 0 (or NaN): -w = r - k ln 2 with |r| <= ln2 / 2, exp(r) by its
 * Taylor polynomial to degree 13 (truncation < 2e-16 relative), then the power of two
 * in two steps so that no step leaves the normal range early. ln 2 is split in a
 * head with trailing zero bits (k * head is exact) and a tail. */
INLINE double exp_neg(double w) {
    if (!(w < 745.0)) return w == w ? 0.0 : w;    /* underflow (and +inf) -> 0; NaN stays */
    const double ln2_head = 0.693147180369123816490, ln2_tail = 1.90821492927058770002e-10;
    int k = (int)(w * 1.44269504088896340736 + 0.5);
    double r = ((double)k * ln2_head - w) + (double)k * ln2_tail;
    double p = 1.0 / 6227020800.0;                              /* 1/13! */
    p = p * r + 1.0 / 479001600.0;  p = p * r + 1.0 / 39916800.0; p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;     p = p * r + 1.0 / 40320.0;    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;        p = p * r + 1.0 / 120.0;      p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;          p = p * r + 0.5;              p = p * r + 1.0;
    p = p * r + 1.0;
    if (k > 1000) { p *= pow2_neg(1000); k -= 1000; }
    return p * pow2_neg(k);
}

EXPORT void gelu_f32(const float *x, float *out, int n, const double *table, int intervals, double inv_width) {
    for (int i = 0; i < n; i++) {
        double v = x[i];
        double z = (v < 0 ? -v : v) * 0.70710678118654752440;   /* |x| / sqrt 2 */
        double u = z * inv_width, s;
        int index;
        if (u < (double)intervals) { index = (int)u; s = u - (double)index; }
        else { index = intervals - 1; s = 1.0; }                /* beyond the table, or NaN */
        const double *c = table + (long)index * 5;
        double r = (((c[4] * s + c[3]) * s + c[2]) * s + c[1]) * s + c[0];
        double tail = r * exp_neg(z * z);
        double half = v >= 0 ? (tail * -2.0 + 2.0) + tail : tail;
        out[i] = (float)(half * 0.5 * v);
    }
}

/* --------------------------------------------------------------- softmax ----
 * §8.9.55 softmax along contiguous rows of length n (rows of them), float32 in and
 * out, in double like ops/activations.py's numpy path: e = exp(x - max) (x - max <= 0,
 * so exp_neg(max - x)), out = e / sum(e), rounded once. A NaN anywhere in a row makes
 * the maximum NaN and so the whole row NaN, as numpy's max does. `scratch` holds a
 * row's exponentials (n doubles, the caller's).
 */
EXPORT void softmax_rows_f32(const float *x, float *out, int rows, int n, double *scratch) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (long)r * n;
        float *orow = out + (long)r * n;
        double m = xr[0];
        for (int i = 1; i < n; i++) {
            double v = xr[i];
            if (m == m && (v > m || v != v)) m = v;
        }
        double sum = 0.0;
        for (int i = 0; i < n; i++) {
            double e = exp_neg(m - (double)xr[i]);
            scratch[i] = e;
            sum += e;
        }
        for (int i = 0; i < n; i++) orow[i] = (float)(scratch[i] / sum);
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
            for (int i = 0; i < kh; i++) {
                int iy = oy * sh + i * dh - pt;
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
        double sum = 0.0;
        for (int i = 0; i < n; i++) sum += xr[i];
        double mean = sum / n;
        double squares = 0.0;
        for (int i = 0; i < n; i++) {
            double d = xr[i] - mean;
            squares += d * d;
        }
        double deviation = __builtin_sqrt(squares / n + epsilon);
        for (int i = 0; i < n; i++) {
            double v = (xr[i] - mean) / deviation;
            if (scale) v *= scale[i];
            if (bias) v += bias[i];
            orow[i] = (float)v;
        }
    }
}
