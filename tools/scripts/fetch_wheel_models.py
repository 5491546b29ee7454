#!/usr/bin/env python3
"""Fetches real ONNX models that ship inside PyPI wheels and puts them in a models folder.

    fetch_wheel_models.py [OUT_DIR] [--force]          (OUT_DIR defaults to build/models)

Models (wheel versions are pinned, and every extracted file is checked against a pinned SHA-256):

    ppocr_det.onnx   PaddleOCR v4 text detector        rapidocr-onnxruntime 1.4.4
    ppocr_rec.onnx   PaddleOCR v4 text recogniser      rapidocr-onnxruntime 1.4.4
    ppocr_cls.onnx   PaddleOCR mobile v2 angle classifier  rapidocr-onnxruntime 1.4.4
    silero_vad.onnx  Silero VAD (opset 16, If + LSTM)  silero-vad 6.2.3
    magika.onnx      Magika file-type model (standard_v3_3)  magika 1.0.3
    ddddocr_common.onnx  ddddocr captcha recogniser (CNN + 512-hidden biLSTM)  ddddocr 1.6.1
    ppocrv6_det.onnx PP-OCRv6 small text detector (rapidocr 3's default)  rapidocr 3.10.0
    ppocrv6_rec.onnx PP-OCRv6 small text recogniser (written-out GELUs)   rapidocr 3.10.0
    nudenet_320n.onnx  NudeNet's YOLOv8-nano detector at 320 x 320       nudenet 3.4.2
    oww_melspectrogram.onnx  openWakeWord's audio front end (STFT as convolutions)  openwakeword 0.5.1
    oww_embedding.onnx       openWakeWord's speech embedding (a small CNN)          openwakeword 0.5.1

Each wheel is downloaded with `python -m pip download --no-deps NAME==VERSION` into a temporary
folder (the interpreter running this script provides pip; use one that has it, e.g. the pyenv
`python3` on PATH) and deleted afterwards. A wheel is not downloaded at all when every model taken
from it already exists in OUT_DIR, so a second run is quick and needs no network.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass


@dataclass(frozen=True)
class WheelModel:
    """One .onnx member of a wheel and the name it gets in the models folder."""
    member: str   # path inside the wheel (zip)
    out_name: str  # file name in OUT_DIR
    sha256: str    # expected digest of the extracted file


@dataclass(frozen=True)
class Wheel:
    """A pinned PyPI distribution and the models taken from it."""
    project: str
    version: str
    models: tuple


def pinned_wheels():
    """Returns the wheels this script knows about, with their pinned versions and digests."""
    return (
        Wheel("rapidocr-onnxruntime", "1.4.4", (
            WheelModel("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", "ppocr_det.onnx",
                       "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9"),
            WheelModel("rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", "ppocr_rec.onnx",
                       "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b"),
            WheelModel("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                       "ppocr_cls.onnx",
                       "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c"),
        )),
        # The wheel holds several variants; silero_vad.onnx is the main one, at opset 16
        # (an If on the sample rate around two LSTM-based branches).
        Wheel("silero-vad", "6.2.3", (
            WheelModel("silero_vad/data/silero_vad.onnx", "silero_vad.onnx",
                       "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"),
        )),
        # Google's file-type detector: a [5, 1] convolution over 2048 byte embeddings is most
        # of its work (a manylinux wheel: pip picks it for this machine's platform).
        Wheel("magika", "1.0.3", (
            WheelModel("magika/models/standard_v3_3/model.onnx", "magika.onnx",
                       "fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c"),
        )),
        # A captcha recogniser; the wheel's other models are a detector and common_old.onnx,
        # which needs onnxruntime's com.microsoft DynamicQuantizeLSTM.
        Wheel("ddddocr", "1.6.1", (
            WheelModel("ddddocr/common.onnx", "ddddocr_common.onnx",
                       "33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8"),
        )),
        # rapidocr 3's default OCR models: PaddlePaddle exports with many Identities, written-out
        # GELUs (rec) and nearest-upsampling + transposed convolutions (det).
        Wheel("rapidocr", "3.10.0", (
            WheelModel("rapidocr/models/PP-OCRv6_det_small.onnx", "ppocrv6_det.onnx",
                       "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f"),
            WheelModel("rapidocr/models/PP-OCRv6_rec_small.onnx", "ppocrv6_rec.onnx",
                       "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884"),
        )),
        # The most used detector family (Ultralytics YOLOv8n: C2f blocks, SPPF, DFL head).
        Wheel("nudenet", "3.4.2", (
            WheelModel("nudenet/320n.onnx", "nudenet_320n.onnx",
                       "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f"),
        )),
        # A wake-word pipeline's two shared stages; the wake words themselves are tiny MLPs.
        Wheel("openwakeword", "0.5.1", (
            WheelModel("openwakeword/resources/models/melspectrogram.onnx",
                       "oww_melspectrogram.onnx",
                       "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f"),
            WheelModel("openwakeword/resources/models/embedding_model.onnx", "oww_embedding.onnx",
                       "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f"),
        )),
    )


def sha256_of(path):
    """Hex SHA-256 digest of a file's contents."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheel(wheel, dest_dir):
    """Downloads one pinned wheel (no dependencies) into dest_dir and returns its path."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", "-d", dest_dir,
           f"{wheel.project}=={wheel.version}"]
    print("  $", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    wheels = [f for f in os.listdir(dest_dir) if f.endswith(".whl")]
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel in {dest_dir}, found {wheels}")
    return os.path.join(dest_dir, wheels[0])


def extract_model(wheel_path, model, out_dir):
    """Extracts one model from a wheel into out_dir, checking its digest; atomic rename."""
    final_path = os.path.join(out_dir, model.out_name)
    tmp_path = final_path + ".part"
    with zipfile.ZipFile(wheel_path) as zf, zf.open(model.member) as src, \
            open(tmp_path, "wb") as dst:
        while True:
            block = src.read(1 << 20)
            if not block:
                break
            dst.write(block)
    digest = sha256_of(tmp_path)
    if digest != model.sha256:
        os.remove(tmp_path)
        raise RuntimeError(f"{model.member}: SHA-256 {digest} does not match pinned {model.sha256}")
    os.replace(tmp_path, final_path)
    print(f"  wrote {final_path} ({os.path.getsize(final_path) / 1e6:.1f} MB)", flush=True)


def fetch_wheel(wheel, out_dir, force):
    """Makes sure every model of one wheel exists in out_dir; downloads only when needed."""
    missing = [m for m in wheel.models
               if force or not os.path.exists(os.path.join(out_dir, m.out_name))]
    for m in wheel.models:
        if m not in missing:
            print(f"  exists: {os.path.join(out_dir, m.out_name)} (use --force to refetch)")
    if not missing:
        return
    print(f"{wheel.project}=={wheel.version}: fetching {[m.out_name for m in missing]}", flush=True)
    with tempfile.TemporaryDirectory(prefix="nxrt-wheel-") as tmp:
        wheel_path = download_wheel(wheel, tmp)
        for model in missing:
            extract_model(wheel_path, model, out_dir)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?", default=os.path.join("build", "models"),
                        help="folder to put the .onnx files in (default: build/models)")
    parser.add_argument("--force", action="store_true",
                        help="download and extract again even if the files exist")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    for wheel in pinned_wheels():
        try:
            fetch_wheel(wheel, args.out_dir, args.force)
        except (subprocess.CalledProcessError, RuntimeError, KeyError) as exc:
            print(f"ERROR: {wheel.project}=={wheel.version}: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
