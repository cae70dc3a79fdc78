#!/usr/bin/env python3
"""The real `openai` Python client against `kvscope-cli serve` on the default
model (ctest label `model`; run by run_openai_client_test.sh in the venv that
scripts/test_python_env.sh makes):

    python openai_client_test.py --cli build/app/kvscope-cli

Chat and completions, streamed and not, n > 1, stop strings, seed
reproducibility, logprobs, log-likelihoods as evaluation harnesses ask
for them (echo + logprobs), usage numbers, the same text as `kvscope-cli
generate`, concurrent clients, response_format json_object and json_schema
(replies parse and validate; a bad schema is a 400), parse() with nested Pydantic
models ($defs and $ref), and errors (bad model, bad JSON, missing
fields, oversize body, wrong API key) as the client's exception classes.
Ends by stopping the server with SIGINT and checking it exits cleanly.

A missing default model fails the test when KVSCOPE_REQUIRE_TEST_DATA=1 or CI
is set (as tests/support/require_data.h does) and skips it (exit 77) otherwise.
"""

import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import threading
import typing
import unittest
import urllib.error
import urllib.request

import openai
import pydantic  # the openai client's own dependency

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
API_KEY = "kvscope-test-key"
THREADS = "2"
SKIP = 77


def model_path():
    """Where the programs look for the default model (common_options.h)."""
    base = os.environ.get("KVSCOPE_MODEL_DIR")
    if not base:
        data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        base = os.path.join(data, "kvscope", "models")
    return os.path.join(base, MODEL_FILE)


def test_data_required():
    flag = os.environ.get("KVSCOPE_REQUIRE_TEST_DATA", "")
    return flag != "0" if flag else bool(os.environ.get("CI"))


class Server:
    """kvscope-cli serve on a free loopback port, for the whole test run."""

    def __init__(self, cli):
        self.cli = cli
        self.proc = subprocess.Popen(
            [cli, "serve", "--port", "0", "--api-key", API_KEY, "--max-body-size", "1", "--threads", THREADS,
             "--max-connections", "32"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.log = []
        self.port = None
        for line in self.proc.stderr:
            self.log.append(line)
            match = re.search(r"at http://127\.0\.0\.1:(\d+)/v1 as model \"([^\"]+)\"", line)
            if match:
                self.port, self.model = int(match.group(1)), match.group(2)
                break
        if self.port is None:
            self.proc.wait(timeout=30)
            raise RuntimeError("kvscope-cli serve did not start:\n" + "".join(self.log))
        # Keep draining stderr so that the server never blocks on a full pipe.
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()
        self.base = f"http://127.0.0.1:{self.port}"

    def client(self, key=API_KEY):
        return openai.OpenAI(base_url=self.base + "/v1", api_key=key, max_retries=0, timeout=300)

    def raw(self, path, body=None, key=API_KEY):
        """(status, parsed JSON or text) of a plain HTTP request."""
        request = urllib.request.Request(self.base + path, data=body, method="POST" if body is not None else "GET")
        request.add_header("Authorization", f"Bearer {key}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=300) as reply:
                status, text = reply.status, reply.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def stop(self):
        """SIGINT, as Ctrl-C; the exit code (None if it did not stop in time)."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


SERVER = None
GREEDY = {"temperature": 0, "extra_body": {"repetition_penalty": 1.0}}

PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "likes_cats": {"type": "boolean"},
        "city": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "colour": {"enum": ["red", "green", "blue"]},
        "hobbies": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["name", "age", "likes_cats", "colour", "hobbies"],
    "additionalProperties": False,
}


def schema_errors(value, schema, where="$"):
    """What `value` breaks of `schema`, for the subset kvscope compiles (docs/json-schema.md).
    By hand, so the Python tests need no package beyond `openai`."""
    if "anyOf" in schema:
        if all(schema_errors(value, alt, where) for alt in schema["anyOf"]):
            return [f"{where}: matches no alternative of anyOf"]
        return []
    if "const" in schema:
        return [] if value == schema["const"] else [f"{where}: not {schema['const']!r}"]
    if "enum" in schema:
        return [] if value in schema["enum"] else [f"{where}: {value!r} not in {schema['enum']}"]
    kind = schema.get("type")
    checks = {"string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "null": lambda v: v is None, "array": lambda v: isinstance(v, list),
              "object": lambda v: isinstance(v, dict)}
    if kind is not None and not checks[kind](value):
        return [f"{where}: {value!r} is not a {kind}"]
    errors = []
    if kind == "object":
        properties = schema.get("properties", {})
        errors += [f"{where}: {k!r} missing" for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            errors += [f"{where}: {k!r} not allowed" for k in value if k not in properties]
        for k, v in value.items():
            if k in properties:
                errors += schema_errors(v, properties[k], f"{where}.{k}")
    if kind == "array":
        if len(value) > schema.get("maxItems", len(value)) or len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: {len(value)} items")
        for i, v in enumerate(value):
            errors += schema_errors(v, schema.get("items", {}), f"{where}[{i}]")
    return errors


class OpenAiClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = SERVER.client()
        cls.model = SERVER.model

    def chat(self, content, **kwargs):
        return self.client.chat.completions.create(
            model=self.model, messages=[{"role": "user", "content": content}], **kwargs)

    def complete(self, prompt, **kwargs):
        return self.client.completions.create(model=self.model, prompt=prompt, **kwargs)

    def test_models_lists_the_served_model(self):
        ids = [m.id for m in self.client.models.list()]
        self.assertEqual(ids, [self.model])

    def test_chat_not_streamed(self):
        reply = self.chat("What is the capital of France?", max_tokens=24, **GREEDY)
        choice = reply.choices[0]
        self.assertEqual(reply.object, "chat.completion")
        self.assertEqual(choice.message.role, "assistant")
        self.assertIsInstance(choice.message.content, str)
        self.assertTrue(choice.message.content.strip())
        self.assertIn(choice.finish_reason, ("stop", "length"))
        self.assertGreater(reply.usage.prompt_tokens, 0)
        self.assertLessEqual(reply.usage.completion_tokens, 24)
        self.assertEqual(reply.usage.total_tokens, reply.usage.prompt_tokens + reply.usage.completion_tokens)

    def test_chat_streamed_equals_the_whole_reply(self):
        whole = self.chat("Name three colours.", max_tokens=20, **GREEDY)
        chunks = list(self.chat("Name three colours.", max_tokens=20, stream=True,
                                stream_options={"include_usage": True}, **GREEDY))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        self.assertEqual(text, whole.choices[0].message.content)
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        self.assertEqual(finishes, [whole.choices[0].finish_reason])
        usage = chunks[-1].usage
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(usage.prompt_tokens, whole.usage.prompt_tokens)
        self.assertEqual(usage.completion_tokens, whole.usage.completion_tokens)
        # The same prompt again: its blocks came from the prefix cache.
        self.assertGreater(usage.prompt_tokens_details.cached_tokens, 0)

    def test_completions_streamed_and_not_with_n_and_seed(self):
        args = dict(max_tokens=12, n=2, seed=1234, temperature=0.9)
        first = self.complete("Once upon a time", **args)
        second = self.complete("Once upon a time", **args)
        self.assertEqual(len(first.choices), 2)
        self.assertEqual([c.text for c in first.choices], [c.text for c in second.choices])
        streamed = ["", ""]
        for chunk in self.complete("Once upon a time", stream=True, **args):
            for c in chunk.choices:
                streamed[c.index] += c.text
        self.assertEqual(streamed, [c.text for c in first.choices])
        other = self.complete("Once upon a time", **dict(args, seed=4321))
        self.assertNotEqual([c.text for c in other.choices], [c.text for c in first.choices])

    def test_stop_string_ends_the_text_before_it(self):
        full = self.complete("The capital of France is", max_tokens=24, **GREEDY).choices[0].text
        words = [w for w in re.findall(r"[A-Za-z]{3,}", full) if full.find(w) > 0]
        self.assertTrue(words, f"no word to stop at in {full!r}")
        stop = words[0]
        reply = self.complete("The capital of France is", max_tokens=24, stop=[stop, "\u2603"], **GREEDY)
        self.assertEqual(reply.choices[0].text, full[:full.find(stop)])
        self.assertEqual(reply.choices[0].finish_reason, "stop")

    def test_usage_counts_the_tokens_logprobs_list(self):
        reply = self.complete("Hello", max_tokens=10, logprobs=2,
                              extra_body={"ignore_eos": True}, temperature=0)
        logprobs = reply.choices[0].logprobs
        self.assertEqual(reply.usage.completion_tokens, 10)
        self.assertEqual(len(logprobs.tokens), 10)
        self.assertEqual("".join(logprobs.tokens), reply.choices[0].text)
        self.assertTrue(all(lp <= 0 for lp in logprobs.token_logprobs))
        chat = self.chat("Hi", max_tokens=5, logprobs=True, top_logprobs=2, **GREEDY)
        content = chat.choices[0].logprobs.content
        self.assertEqual(len(content), chat.usage.completion_tokens - (chat.choices[0].finish_reason == "stop"))
        self.assertEqual(len(content[0].top_logprobs), 2)

    def loglikelihood(self, context, continuation):
        """What lm-evaluation-harness's local-completions asks for a
        log-likelihood: token ids, echo, logprobs 1, max_tokens 1, and the sum
        of token_logprobs over the continuation; greedy when each of its
        tokens is the most likely one."""
        ids = self.tokenize(context)
        ctxlen = len(ids)
        ids += self.tokenize(continuation)
        reply = self.complete(ids, echo=True, logprobs=1, max_tokens=1, temperature=0, seed=1234)
        lps = reply.choices[0].logprobs
        self.assertEqual(len(lps.token_logprobs), len(ids) + 1)
        self.assertIsNone(lps.token_logprobs[0])
        scored = lps.token_logprobs[ctxlen:-1]
        greedy = all(lp == max(top.values()) for lp, top in zip(scored, lps.top_logprobs[ctxlen:-1]))
        return sum(scored), greedy

    def tokenize(self, text):
        out = subprocess.run([SERVER.cli, "tokenize", "--text", text], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        return [int(t) for t in out.split()]

    def test_echo_logprobs_give_loglikelihoods_as_evaluation_harnesses_ask(self):
        paris, paris_greedy = self.loglikelihood("The capital of France is", " Paris")
        banana, _ = self.loglikelihood("The capital of France is", " a banana")
        self.assertLess(paris, 0)
        self.assertGreater(paris, banana)
        self.assertTrue(paris_greedy)
        # max_tokens 0: the prompt alone, scored; the text is the prompt's.
        reply = self.complete("The capital of France is", echo=True, logprobs=0, max_tokens=0)
        choice = reply.choices[0]
        self.assertEqual(choice.text, "The capital of France is")
        self.assertEqual(choice.finish_reason, "length")
        self.assertEqual(reply.usage.completion_tokens, 0)
        self.assertEqual(len(choice.logprobs.tokens), reply.usage.prompt_tokens)
        self.assertEqual("".join(choice.logprobs.tokens), choice.text)
        self.assertTrue(all(lp <= 0 for lp in choice.logprobs.token_logprobs[1:]))

    def test_same_text_as_kvscope_cli_generate(self):
        prompt, n = "The three primary colours are", 16
        cli = subprocess.run(
            [SERVER.cli, "generate", "--prompt", prompt, "-n", str(n), "--temp", "0", "--repeat-penalty", "1",
             "--threads", THREADS, "--json"], capture_output=True, text=True, timeout=300, check=True)
        expected = json.loads(cli.stdout)["text"]
        self.assertEqual(self.complete(prompt, max_tokens=n, **GREEDY).choices[0].text, expected)

    def test_concurrent_streaming_clients_match_one_at_a_time(self):
        system = "You are a helpful assistant who answers in one sentence."
        questions = [f"Give me a fact about the number {i}." for i in range(8)]

        def ask(q, stream):
            messages = [{"role": "system", "content": system}, {"role": "user", "content": q}]
            if not stream:
                return self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=16,
                                                           **GREEDY).choices[0].message.content
            return "".join(c.choices[0].delta.content or "" for c in self.client.chat.completions.create(
                model=self.model, messages=messages, max_tokens=16, stream=True, **GREEDY) if c.choices)

        alone = [ask(q, False) for q in questions]
        with concurrent.futures.ThreadPoolExecutor(len(questions)) as pool:
            together = list(pool.map(lambda q: ask(q, True), questions))
        self.assertEqual(together, alone)
        status, metrics = SERVER.raw("/metrics")
        self.assertEqual(status, 200)
        hits = float(re.search(r"^kvscope_prefix_cache_hit_tokens_total (\S+)$", metrics, re.M).group(1))
        self.assertGreater(hits, 0)
        used = float(re.search(r"^kvscope_kv_blocks_used (\S+)$", metrics, re.M).group(1))
        self.assertEqual(used, 0)

    def test_response_format_json_schema(self):
        response_format = {"type": "json_schema",
                           "json_schema": {"name": "person", "schema": PERSON_SCHEMA, "strict": True}}
        reply = self.chat("Make up a person and describe them as JSON.", max_tokens=300,
                          response_format=response_format, **GREEDY)
        text = reply.choices[0].message.content
        self.assertEqual(reply.choices[0].finish_reason, "stop", text)
        person = json.loads(text)
        self.assertEqual(schema_errors(person, PERSON_SCHEMA), [], text)
        # Properties come in the schema's order.
        self.assertEqual(list(person), [k for k in PERSON_SCHEMA["properties"] if k in person])
        # /v1/completions too, sampled this time.
        completion = self.complete("A person described as JSON:", max_tokens=300, temperature=0.7, seed=5,
                                   extra_body={"response_format": response_format})
        text = completion.choices[0].text
        if completion.choices[0].finish_reason == "stop":
            self.assertEqual(schema_errors(json.loads(text), PERSON_SCHEMA), [], text)
        else:  # out of tokens inside a string: still a prefix of an object of the schema
            self.assertTrue(text.lstrip().startswith("{"), text)

    def test_parse_with_nested_pydantic_models(self):
        # The SDK's parse() sends Pydantic's schema: nested models as $defs and
        # $ref, an optional one as anyOf with null (docs/json-schema.md).
        class Address(pydantic.BaseModel):
            city: str
            country: str

        class Person(pydantic.BaseModel):
            name: str
            home: Address
            work: typing.Optional[Address]

        reply = self.client.chat.completions.parse(
            model=self.model, messages=[{"role": "user", "content": "Describe a person who lives in Oslo as JSON."}],
            response_format=Person, max_tokens=300, temperature=0)
        choice = reply.choices[0]
        self.assertEqual(choice.finish_reason, "stop", choice.message.content)
        self.assertIsInstance(choice.message.parsed, Person)
        self.assertIsInstance(choice.message.parsed.home, Address)

    def test_response_format_json_object(self):
        reply = self.chat("Reply with a JSON object that has one key, \"colour\", and your favourite colour as "
                          "its value.", max_tokens=200,
                          response_format={"type": "json_object"}, **GREEDY)
        text = reply.choices[0].message.content
        self.assertEqual(reply.choices[0].finish_reason, "stop", text)
        self.assertIsInstance(json.loads(text), dict)

    def test_response_format_bad_schema_is_400(self):
        bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "^a+$"}}}
        with self.assertRaises(openai.BadRequestError) as e:
            self.chat("Hi", max_tokens=4, response_format=bad)
        self.assertEqual(e.exception.body["param"], "response_format")
        self.assertIn("'pattern' is not supported", e.exception.body["message"])

    def test_errors(self):
        with self.assertRaises(openai.NotFoundError) as e:
            self.client.completions.create(model="gpt-4o", prompt="Hi", max_tokens=2)
        self.assertEqual(e.exception.body["code"], "model_not_found")
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(model=self.model, messages=[])
        self.assertEqual(e.exception.body["param"], "messages")
        with self.assertRaises(openai.BadRequestError):
            self.client.chat.completions.create(model=self.model, messages=[{"role": "user"}])
        with self.assertRaises(openai.BadRequestError):
            self.chat("Hi", max_tokens="lots")
        with self.assertRaises(openai.AuthenticationError):
            SERVER.client(key="wrong").models.list()
        with self.assertRaises(openai.APIStatusError) as e:
            self.complete("a" * (2 << 20), max_tokens=1)  # over --max-body-size 1 (MiB)
        self.assertEqual(e.exception.status_code, 413)
        status, body = SERVER.raw("/v1/chat/completions", b'{"model": "x", "messages": [')
        self.assertEqual(status, 400)
        self.assertEqual(body["error"]["type"], "invalid_request_error")
        status, body = SERVER.raw("/v1/chat/completions", b'{"model": "x", "messages": "\xff"}')
        self.assertEqual(status, 400)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True, help="path to kvscope-cli")
    args, rest = parser.parse_known_args()
    if not os.path.isfile(model_path()):
        message = (f"default model ({MODEL_FILE}) not found at {model_path()}; "
                   "fetch it with: python3 scripts/fetch_model.py")
        if test_data_required():
            print(message + " [a failure, not a skip, because KVSCOPE_REQUIRE_TEST_DATA=1 or CI is set]",
                  file=sys.stderr)
            return 1
        print("SKIPPED: " + message, file=sys.stderr)
        return SKIP
    global SERVER
    SERVER = Server(args.cli)
    print(f"openai {openai.__version__} against {SERVER.base} ({SERVER.model})", file=sys.stderr)
    try:
        result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    finally:
        code = SERVER.stop()
    if code != 0:
        print(f"kvscope-cli serve did not exit cleanly on SIGINT (exit {code}):\n" + "".join(SERVER.log),
              file=sys.stderr)
        return 1
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
