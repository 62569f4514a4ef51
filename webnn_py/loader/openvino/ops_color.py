"""NV12toRGB/BGR-8 and I420toRGB/BGR-8: YUV 4:2:0 images (NHWC, one plane or
separate Y and chroma planes) to RGB or BGR, each output pixel from its Y and
the U, V of its 2 x 2 block:

    c = Y - 16, d = U - 128, e = V - 128
    R = 1.164 c + 1.596 e,  G = 1.164 c - 0.391 d - 0.813 e,  B = 1.164 c + 2.018 d

clamped to [0, 255]; for u8 images rounded to the nearest integer first
(halves to even, as the float-to-int conversion OpenVINO's reference uses).
"""
from __future__ import annotations

import numpy as np

_WEIGHTS = {"R": (1.164, 0.0, 1.596), "G": (1.164, -0.391, -0.813), "B": (1.164, 2.018, 0.0)}


def _rows(t, plane, start: int, count: int):
    n, _, w, ch = plane.shape
    return t.b.slice(plane, [0, start, 0, 0], [n, count, w, ch])


def _upsample(t, chroma):
    """[N, H/2, W/2, 1] -> [N, H, W, 1], each value repeated over its 2 x 2 block."""
    n, h, w, _ = chroma.shape
    spread = t.b.expand(t.b.reshape(chroma, [n, h, 1, w, 1, 1]), [n, h, 2, w, 2, 1])
    return t.b.reshape(spread, [n, 2 * h, 2 * w, 1])


def _planes(t, inputs):
    """(Y [N, H, W, 1], U, V [N, H/2, W/2, 1]) operands of the layer's inputs."""
    nv12 = t.layer.type.startswith("NV12")
    planes = [t.operand(v) for v in inputs]
    if any(len(p.shape) != 4 or p.shape[-1] not in (1, 2) for p in planes):
        raise t.malformed(f"the planes {[list(p.shape) for p in planes]} are not NHWC images")
    if len(planes) == 1:
        image = planes[0]
        n, rows, w, _ = image.shape
        h = rows * 2 // 3
        if rows % 3 or h % 2 or w % 2:
            raise t.malformed(f"a single-plane image of {rows} rows x {w} is not a 4:2:0 image")
        y = _rows(t, image, 0, h)
        if nv12:
            uv = t.b.reshape(_rows(t, image, h, h // 2), [n, h // 2, w // 2, 2])
            planes = [y, uv]
        else:
            quarter = h // 4
            if h % 4:
                raise t.malformed(f"an I420 image of height {h} does not split its chroma rows in two")
            u = t.b.reshape(_rows(t, image, h, quarter), [n, h // 2, w // 2, 1])
            v = t.b.reshape(_rows(t, image, h + quarter, quarter), [n, h // 2, w // 2, 1])
            return y, u, v
    if nv12:
        t.arity(planes, 2)
        y, uv = planes
        n, h2, w2, _ = uv.shape
        u = t.b.slice(uv, [0, 0, 0, 0], [n, h2, w2, 1])
        v = t.b.slice(uv, [0, 0, 0, 1], [n, h2, w2, 1])
        return y, u, v
    t.arity(planes, 3)
    return tuple(planes)


def color_convert(t, inputs):
    y, u, v = _planes(t, inputs)
    n, h, w, _ = y.shape
    if list(u.shape) != [n, h // 2, w // 2, 1] or list(v.shape) != list(u.shape) or h % 2 or w % 2:
        raise t.malformed(f"Y {list(y.shape)} and chroma {list(u.shape)}, {list(v.shape)} are not a 4:2:0 image")
    kind = y.dataType
    if kind not in ("uint8", "float32", "float16"):
        raise t.unsupported(f"{kind} images are not supported (u8, f32, f16 are)")
    work = "float32" if kind == "uint8" else kind

    def as_float(p, offset: float):
        value = t.b.cast(p, work) if kind == "uint8" else p
        return t.b.sub(value, t.operand(np.array(offset, np.dtype(work))))
    c, d, e = as_float(y, 16), _upsample(t, as_float(u, 128)), _upsample(t, as_float(v, 128))
    channels = []
    for name in t.layer.type[-3:]:          # "RGB" or "BGR"
        kc, kd, ke = _WEIGHTS[name]
        total = t.b.mul(c, t.operand(np.array(kc, np.dtype(work))))
        for k, plane in ((kd, d), (ke, e)):
            if k:
                total = t.b.add(total, t.b.mul(plane, t.operand(np.array(k, np.dtype(work)))))
        if kind == "uint8":
            total = t.b.roundEven(total)
        channels.append(t.b.clamp(total, {"minValue": 0, "maxValue": 255}))
    out = t.b.concat(channels, 3)
    return [t.b.cast(out, "uint8") if kind == "uint8" else out]


TRANSLATORS = {name: color_convert for name in ("NV12toRGB", "NV12toBGR", "I420toRGB", "I420toBGR")}
