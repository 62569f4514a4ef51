"""The main job: background segmentation of a sample photo in a headless browser
(Chromium by default; --browser firefox|webkit|all runs it in the others).

The page (demo/index.html) loads MediaPipe's selfie_segmentation.tflite with
the Model Loader API on navigator.ml (webnn-py on Pyodide), segments
scikit-image's astronaut photo, and draws the mask beside the photo with its
background blurred. This script prepares the page's files, drives the page,
writes the PNG and the raw mask, checks that the mask covers the person, and
prints OK or FAIL.

    python demo/run.py [--out build/demo] [--browser chromium|firefox|webkit|all]
                                                  (./dev demo runs it after setup)

The same page works interactively: `./dev serve --root demo`, then open
http://127.0.0.1:8000/index.html (after one run of this script, which puts the
model and the photo under demo/models and demo/images).
"""
from __future__ import annotations

import argparse
import base64
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tools.fetch_models import fetch  # noqa: E402
from webnn_py.serve import PolyfillServer  # noqa: E402
import browsers  # noqa: E402

DEMO_DIR = Path(__file__).resolve().parent
MODEL = "selfie_segmentation.tflite"

# Hand-marked regions of the 512×512 astronaut photo, as (x0, y0, x1, y1) in
# pixels: the face and the torso of the person; the top corners are background
# (the flag, the wall and the shuttle model).
PERSON_BOXES = [(175, 60, 280, 165), (80, 300, 300, 480)]
BACKGROUND_BOXES = [(0, 0, 110, 120), (340, 0, 512, 130)]


def prepare() -> None:
    """The page's files: the model out of the mediapipe wheel, the photo out of scikit-image."""
    models = DEMO_DIR / "models"
    models.mkdir(exist_ok=True)
    source = fetch() / MODEL
    target = models / MODEL
    if not target.is_file() or target.read_bytes() != source.read_bytes():
        target.write_bytes(source.read_bytes())
    images = DEMO_DIR / "images"
    images.mkdir(exist_ok=True)
    photo = images / "astronaut.png"
    if not photo.is_file():
        import imageio.v3 as iio
        from skimage import data
        iio.imwrite(photo, data.astronaut())


def mask_check(mask: np.ndarray, image_size: int = 512) -> tuple[bool, str]:
    """Mean mask value in the person boxes versus the background boxes."""
    h, w = mask.shape
    sy, sx = h / image_size, w / image_size

    def mean(boxes):
        return float(np.mean(np.concatenate([
            mask[int(y0 * sy):int(y1 * sy), int(x0 * sx):int(x1 * sx)].reshape(-1) for x0, y0, x1, y1 in boxes])))

    person, background = mean(PERSON_BOXES), mean(BACKGROUND_BOXES)
    ok = person > 0.9 and background < 0.1
    return ok, f"mask mean {person:.3f} on the person, {background:.3f} on the background corners"


def run_in(engine: str, out: Path) -> bool:
    """Drive the page in `engine`, write `out`/segmentation.png and mask.npy, check the mask."""
    with PolyfillServer(root=DEMO_DIR) as server, browsers.launch(engine) as browser, browser.new_page() as page:
        print(f"[{engine} {browser.version}]")
        started = time.perf_counter()
        page.goto(f"{server.url}/index.html")
        try:
            outcome = page.evaluate("window.demoResult")
        except browsers.EvaluationError as exc:
            print(page.text("#log"))
            print(f"demo FAIL in {engine}: {str(exc).splitlines()[0]}")
            return False
        finally:
            for message in page.errors + [m.text for m in page.console if m.level == "error"]:
                print(f"[page] {message}", file=sys.stderr)
        elapsed = time.perf_counter() - started
        print(page.text("#log"))
    out.mkdir(parents=True, exist_ok=True)
    png = out / "segmentation.png"
    png.write_bytes(base64.b64decode(outcome["png"].split(",", 1)[1]))
    mask = np.asarray(outcome["mask"], np.float32).reshape(outcome["maskDimensions"])[0, :, :, 0]
    np.save(out / "mask.npy", mask)
    print(f"model load: {outcome['loadMs'] / 1000:.2f} s; inference: {outcome['firstMs'] / 1000:.2f} s (first), "
          f"{outcome['secondMs'] / 1000:.2f} s (second); page open to result: {elapsed:.2f} s")
    print(f"wrote {png} (left: mask, right: blurred background) and {out / 'mask.npy'}")
    ok, detail = mask_check(mask)
    print(f"demo {'OK' if ok else 'FAIL'} in {engine}: {detail}")
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="webnn-py demo: background segmentation in a headless browser")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "demo", help="where the PNG and mask go")
    parser.add_argument("--browser", choices=[*browsers.ENGINES, "all"], default="chromium",
                        help="the engine to run the page in (all: each in turn, output in OUT/ENGINE/)")
    args = parser.parse_args(argv)
    prepare()
    engines = list(browsers.ENGINES) if args.browser == "all" else [args.browser]
    results = {engine: run_in(engine, args.out / engine if len(engines) > 1 else args.out) for engine in engines}
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
