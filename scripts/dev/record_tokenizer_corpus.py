#!/usr/bin/env python3
"""Record llama.cpp's token ids for the differential tokenizer corpus.

  /opt/llamaenv/bin/python scripts/dev/record_tokenizer_corpus.py

Tokenises every text of tests/data/tokenizer_corpus.txt with every vocabulary
scripts/fetch_test_data.py fetches, and with the vocabularies of the two
models scripts/fetch_model.py fetches (SmolLM2, and Gemma 3 with --gemma),
through llama.cpp (the llama-cpp-python package, vocabulary only), and writes
tests/data/tokenizer_corpus_ids.json,
which tests/engine/tokenizer/tokenizer_corpus_test.cpp reproduces. Run it
after editing the corpus or bumping the pinned llama-cpp-python version.

llama-cpp-python is not a project dependency: install it in a virtual
environment outside the repository, at the version fetch_test_data.py pins
(building it from source takes a few minutes):

  python3 -m venv /opt/llamaenv && /opt/llamaenv/bin/pip install llama-cpp-python==0.3.36

Each text is tokenised twice, as kvscope's encode(text, parse_special) does:
without special-token parsing ("plain", every text) and with it ("special",
stored only where the ids differ from the plain ones, to keep the file
small). Neither adds BOS. Ids are stored as space-separated strings.
"""
import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import fetch_model  # noqa: E402  (where the models are)
import fetch_test_data  # noqa: E402  (the vocabulary list and where the files are)

# Vocabularies of the models kvscope runs, by the names the test uses.
MODELS = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3": "gemma-3-270m-q4_k_m.gguf"}

CORPUS = ROOT / "tests" / "data" / "tokenizer_corpus.txt"
OUTPUT = ROOT / "tests" / "data" / "tokenizer_corpus_ids.json"


def read_corpus(path: Path) -> list:
    """One JSON string per line; '#' comments and blank lines skipped. Lines
    are split on '\\n' only (a text may hold U+2028, written escaped)."""
    texts = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        text = json.loads(line)
        if not isinstance(text, str):
            sys.exit(f"{path}:{number}: not a JSON string")
        texts.append(text)
    return texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", type=Path, default=OUTPUT)
    args = ap.parse_args()
    try:
        import llama_cpp
    except ImportError:
        sys.exit("llama_cpp is not importable: run this with the Python of a venv that has "
                 f"llama-cpp-python=={fetch_test_data.VERSION} (see the top of this file)")
    if llama_cpp.__version__ != fetch_test_data.VERSION:
        sys.exit(f"llama-cpp-python {llama_cpp.__version__} is installed; the fixtures are "
                 f"{fetch_test_data.VERSION}'s, so record with that version")

    texts = read_corpus(CORPUS)
    vocab_dir = fetch_test_data.tokenizer_dir()
    result = {
        "about": "llama.cpp's ids for tests/data/tokenizer_corpus.txt; written by "
                 "scripts/dev/record_tokenizer_corpus.py",
        "llama_cpp_python": llama_cpp.__version__,
        "corpus_sha256": hashlib.sha256(CORPUS.read_bytes()).hexdigest(),
        "num_texts": len(texts),
        "vocabularies": {},
    }
    paths = {name: vocab_dir / f"ggml-vocab-{name}.gguf" for name in fetch_test_data.VOCABULARIES}
    paths.update({name: fetch_model.model_dir() / file for name, file in MODELS.items()})
    for name, path in paths.items():
        if not path.is_file():
            sys.exit(f"{path} is missing: run scripts/fetch_test_data.py and scripts/fetch_model.py [--gemma] first")
        llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
        plain, special = [], {}
        for i, text in enumerate(texts):
            raw = text.encode("utf-8")
            ids = llm.tokenize(raw, add_bos=False, special=False)
            ids_special = llm.tokenize(raw, add_bos=False, special=True)
            plain.append(" ".join(map(str, ids)))
            if ids_special != ids:
                special[str(i)] = " ".join(map(str, ids_special))
        result["vocabularies"][name] = {"plain": plain, "special": special}
        print(f"{name}: {len(texts)} texts, {len(special)} differ with special parsing", flush=True)
        del llm

    args.output.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output} ({args.output.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
