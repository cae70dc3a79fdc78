#!/usr/bin/env bash
# Fuzzes kvscope's input boundaries with libFuzzer + AddressSanitizer:
#   gguf_fuzzer            the GGUF reader
#   model_loader_fuzzer    GGUF -> weights checked against the architecture
#   bpe_tokenizer_fuzzer   byte-level BPE: bytes -> encode/decode
#   spm_tokenizer_fuzzer   SentencePiece: bytes -> encode/decode
#   request_parser_fuzzer  the server's request bodies -> a request or a 4xx
#   chat_template_fuzzer   a model file's chat template -> a prompt or an error
#   json_schema_fuzzer     a request's JSON schema -> a grammar or an error
#
#   scripts/run_fuzz.sh [SECONDS]      (default 60, shared equally by the seven)
#
# Configures a clang build in build-fuzz (-DKVSCOPE_FUZZ=ON, -Werror), builds
# the fuzzers and the seed writer, and runs each for its share of SECONDS.
# Seeds: GgufWriter-made files and tiny models (gguf_fuzz_seeds), the fetched
# tokenizer fixtures (scripts/fetch_test_data.py: their .gguf files for the
# reader, their .inp texts for the tokenizers). The tokenizer fuzzers run on
# real vocabularies when present: the default model's byte-level BPE (whose
# byte symbols have gaps) and the fixtures' Llama SentencePiece; else on small
# built-in ones. Exits non-zero if any fuzzer finds a crash, a leak, a hang or
# an unbounded allocation; reproducers are left in build-fuzz/fuzz-artifacts/
# (replay one with: build-fuzz/tests/NAME_fuzzer FILE).
# Environment: FUZZ_MAX_LEN (default 65536) caps GGUF input size; the fixture
# seeds are megabytes, and their first 64 KiB holds all the structure worth
# mutating. KVSCOPE_MODEL_DIR as for the tests.
set -euo pipefail

seconds="${1:-60}"
max_len="${FUZZ_MAX_LEN:-65536}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"

if ! command -v clang++ >/dev/null; then
  echo "run_fuzz.sh: clang++ not found (libFuzzer needs clang; KVSCOPE_FUZZ=1 scripts/bootstrap.sh installs it)" >&2
  exit 2
fi

# Where the fetched tokenizer fixtures are (none is fine: fewer seeds).
fixtures="${KVSCOPE_FIXTURES_DIR:-}"
if [[ -f "$root/scripts/fetch_test_data.py" ]]; then
  fixtures="$(python3 "$root/scripts/fetch_test_data.py" --print-dir)"
fi
model_dir="${KVSCOPE_MODEL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/kvscope/models}"

cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVSCOPE_FUZZ=ON -DKVSCOPE_WERROR=ON -DKVSCOPE_CUDA=OFF >/dev/null
fuzzers=(gguf_fuzzer model_loader_fuzzer bpe_tokenizer_fuzzer spm_tokenizer_fuzzer request_parser_fuzzer
  chat_template_fuzzer json_schema_fuzzer)
ninja -C "$build" -j"$(nproc)" "${fuzzers[@]}" gguf_fuzz_seeds

# Seed folders are rewritten each run and only read by the fuzzers; new
# inputs go to fuzz-corpus/NAME, kept between runs.
seeds="$build/fuzz-seeds"
rm -rf "$seeds"
mkdir -p "$seeds/gguf" "$seeds/model" "$seeds/text" "$seeds/request" "$seeds/template" "$seeds/schema" "$build/fuzz-artifacts"
"$build/tests/gguf_fuzz_seeds" "$seeds/gguf" "$seeds/model"
if [[ -n "$fixtures" ]] && compgen -G "$fixtures/*.gguf" >/dev/null; then
  cp -f "$fixtures"/*.gguf "$seeds/gguf/"
  for inp in "$fixtures"/*.inp; do cp -f "$inp" "$seeds/text/$(basename "$inp")"; done
else
  echo "run_fuzz.sh: no tokenizer fixtures (python3 scripts/fetch_test_data.py); fewer seeds"
fi
printf 'Hello, world! 12345\n' >"$seeds/text/ascii"
printf 'ça marche, 日本語 \xf0\x9f\x98\x80 \xff\xfe\x04\x1d <|im_start|> <s>\n' >"$seeds/text/mixed"
# Request bodies of the server's two generation endpoints.
printf '{"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "stream": true, "stream_options": {"include_usage": true}, "n": 2, "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "stop": ["\\n", "END"], "seed": 42, "logprobs": true, "top_logprobs": 3}' >"$seeds/request/chat"
printf '{"model": "m", "prompt": ["Once", [1, 2, 3]], "max_completion_tokens": 8, "logprobs": 2, "echo": true, "stop": "x", "presence_penalty": -1.5, "top_k": 5}' >"$seeds/request/completion"
# Chat templates: ChatML, and one with a namespace, a macro, filters and raise_exception.
printf '%s' "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}" >"$seeds/template/chatml"
printf '%s' "{{ bos_token }}{% set ns = namespace(sys='') %}{% macro turn(r, c) %}[{{ r|upper }}] {{ c|trim }}{% endmacro %}{% for m in messages %}{% if m['role'] == 'system' %}{% set ns.sys = m['content'] %}{% elif loop.index0 % 2 == 0 and m['role'] != 'user' %}{{ raise_exception('roles must alternate') }}{% else %}{{ turn(m['role'], m['content']) }}{{ eos_token if m['role'] == 'assistant' }}{% endif %}{% endfor %}{{ ns.sys|tojson }}{{ messages|map(attribute='role')|join(',') }}{% if add_generation_prompt %}[ASSISTANT]{% endif %}" >"$seeds/template/features"

# JSON schemas as response_format carries them.
printf '%s' '{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "b", 3, null]}, "minItems": 1, "maxItems": 4}}, "required": ["name"], "additionalProperties": false}' >"$seeds/schema/object"
printf '%s' '{"anyOf": [{"type": ["number", "null"]}, {"const": {"k": [true, false]}}, {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "boolean"}]}}]}' >"$seeds/schema/any_of"
printf '%s' '{"$defs": {"Node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}, "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}, "required": ["v"], "additionalProperties": false}}, "$ref": "#/$defs/Node"}' >"$seeds/schema/refs"

# The vocabularies the tokenizer fuzzers load (fuzz_vocab.h); unset: built-in.
export KVSCOPE_FUZZ_BPE_VOCAB="" KVSCOPE_FUZZ_SPM_VOCAB=""
if [[ -f "$model_dir/SmolLM2-135M-Instruct.Q4_1.gguf" ]]; then
  KVSCOPE_FUZZ_BPE_VOCAB="$model_dir/SmolLM2-135M-Instruct.Q4_1.gguf"
fi
if [[ -n "$fixtures" && -f "$fixtures/ggml-vocab-llama-spm.gguf" ]]; then
  KVSCOPE_FUZZ_SPM_VOCAB="$fixtures/ggml-vocab-llama-spm.gguf"
fi

share=$((seconds / ${#fuzzers[@]}))
((share > 0)) || share=1
echo "run_fuzz.sh: ${#fuzzers[@]} fuzzers, ${share}s each"
failed=()
for name in "${fuzzers[@]}"; do
  case "$name" in
    gguf_fuzzer) seed_dir="$seeds/gguf" len="$max_len" ;;
    model_loader_fuzzer) seed_dir="$seeds/model" len="$max_len" ;;
    request_parser_fuzzer) seed_dir="$seeds/request" len=8192 ;;
    chat_template_fuzzer) seed_dir="$seeds/template" len=4096 ;;
    json_schema_fuzzer) seed_dir="$seeds/schema" len=4096 ;;
    *) seed_dir="$seeds/text" len=4096 ;;
  esac
  corpus="$build/fuzz-corpus/${name%_fuzzer}"
  artifacts="$build/fuzz-artifacts/${name%_fuzzer}-"
  log="$build/fuzz-${name%_fuzzer}.log"
  mkdir -p "$corpus"
  extra=()
  [[ -f "$root/tests/fuzz/${name%_fuzzer}.dict" ]] && extra=(-dict="$root/tests/fuzz/${name%_fuzzer}.dict")
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb also caps
  # any single allocation (malloc_limit_mb defaults to it).
  if "$build/tests/$name" "$corpus" "$seed_dir" \
      -max_total_time="$share" -max_len="$len" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts" "${extra[@]}" >"$log" 2>&1; then
    runs="$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)"
    echo "run_fuzz.sh: $name: no crash, leak or hang; ${runs:-?} inputs in ${share}s"
  else
    status=$?
    tail -n 40 "$log" >&2
    echo "run_fuzz.sh: $name failed (exit $status); log $log, reproducer ${artifacts}*" >&2
    failed+=("$name")
  fi
done
if ((${#failed[@]})); then
  echo "run_fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
