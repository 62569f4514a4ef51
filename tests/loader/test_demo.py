"""The demo end to end (what `./dev demo --browser ENGINE` runs), in Chromium, Firefox
and WebKit: the PNG it writes is looked at.

The photo is scikit-image's 512×512 astronaut; the boxes are hand-marked on it
(demo/run.py's PERSON_BOXES and BACKGROUND_BOXES, repeated here so that the test
does not take its expectations from the code under test)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
FACE, TORSO = (175, 60, 280, 165), (80, 300, 300, 480)
CORNERS = [(0, 0, 110, 120), (340, 0, 512, 130)]


def _crop(image, box, dx=0):
    x0, y0, x1, y1 = box
    return image[y0:y1, x0 + dx:x1 + dx]


@pytest.fixture(scope="module")
def demo(engine, pyodide_runtime, models_dir, tmp_path_factory):
    from tests.browser.conftest import require

    require(engine)
    out = tmp_path_factory.mktemp(f"demo-{engine}")
    done = subprocess.run([sys.executable, str(REPO / "demo" / "run.py"), "--out", str(out), "--browser", engine],
                          capture_output=True, text=True, timeout=900)
    return done, out


def test_demo_prints_ok_and_timings(demo):
    done, _ = demo
    assert done.returncode == 0, done.stdout + done.stderr
    assert "demo OK" in done.stdout
    assert "model load:" in done.stdout and "inference:" in done.stdout


def test_png_shows_the_mask_over_the_person(demo):
    import imageio.v3 as iio
    from skimage import data
    _, out = demo
    image = iio.imread(out / "segmentation.png")
    assert image.shape[:2] == (512, 1024)
    grey = image[..., :3].astype(np.float64).mean(axis=-1)
    mask_panel = grey[:, :512]
    for box in (FACE, TORSO):
        assert _crop(mask_panel, box).mean() > 0.9 * 255, f"person box {box} is not white in the mask panel"
    for box in CORNERS:
        assert _crop(mask_panel, box).mean() < 0.1 * 255, f"background box {box} is not black in the mask panel"
    # Right panel: the person is the photo itself; the background is blurred (its
    # pixels change, its mean colour hardly does).
    photo = data.astronaut().astype(np.float64)
    composite = image[:, 512:, :3].astype(np.float64)
    assert np.abs(_crop(composite, FACE) - _crop(photo, FACE)).mean() < 8
    for box in CORNERS:
        changed = np.abs(_crop(composite, box) - _crop(photo, box)).mean()
        assert changed > 8, f"background box {box} is not blurred"


def test_raw_mask_covers_the_person(demo):
    _, out = demo
    mask = np.load(out / "mask.npy")
    assert mask.shape == (256, 256)
    scale = 256 / 512
    person = np.concatenate([_crop(mask, [int(v * scale) for v in box]).reshape(-1) for box in (FACE, TORSO)])
    background = np.concatenate([_crop(mask, [int(v * scale) for v in box]).reshape(-1) for box in CORNERS])
    assert person.mean() > 0.9 and background.mean() < 0.1
    # The mask's centre of mass lies in the person's half-width band of the photo.
    ys, xs = np.mgrid[0:256, 0:256]
    cx, cy = (xs * mask).sum() / mask.sum() * 2, (ys * mask).sum() / mask.sum() * 2
    assert 120 < cx < 330 and 200 < cy < 420, (cx, cy)
