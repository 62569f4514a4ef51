"""Issue 6's check on the host: MediaPipe's real models give LiteRT's outputs
within 1e-4 of each output's magnitude (max |ours - LiteRT| / max(1, max |LiteRT|))."""
from __future__ import annotations

import numpy as np
import pytest

from .helpers import astronaut, litert_run, relative_error, webnn_run

TOLERANCE = 1e-4

CASES = {
    # model, input name, input shape, value range of the input
    "selfie_segmentation.tflite": ("input_1", 256, 0.0, 1.0),
    "face_detection_short_range.tflite": ("input", 128, -1.0, 1.0),
    # sparse (DENSIFY) fp16 weights, DEPTH_TO_SPACE, RESIZE_BILINEAR
    "face_detection_full_range_sparse.tflite": ("input_1", 192, -1.0, 1.0),
}


def _inputs(name, size, low, high, kind):
    if kind == "astronaut":
        return {name: astronaut(size, low, high)}
    rng = np.random.default_rng(7)
    return {name: rng.uniform(low, high, (1, size, size, 3)).astype(np.float32)}


@pytest.mark.parametrize("kind", ["astronaut", "random"])
@pytest.mark.parametrize("model_name", sorted(CASES))
def test_matches_litert(models_dir, model_name, kind):
    data = (models_dir / model_name).read_bytes()
    inputs = _inputs(*CASES[model_name], kind)
    reference = litert_run(data, inputs)
    ours = webnn_run(data, inputs)
    assert sorted(ours) == sorted(reference)
    for name, expected in reference.items():
        assert ours[name].shape == expected.shape and ours[name].dtype == expected.dtype
        error = relative_error(ours[name], expected)
        assert error <= TOLERANCE, f"{model_name} output {name}: relative error {error:.3g}"


def test_selfie_mask_is_not_trivial(models_dir):
    """Guards the comparison above against a degenerate input: on the photo the
    reference mask is neither all person nor all background."""
    data = (models_dir / "selfie_segmentation.tflite").read_bytes()
    mask = litert_run(data, {"input_1": astronaut(256, 0.0, 1.0)})["activation_10"]
    assert 0.2 < float(mask.mean()) < 0.8
