#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<target>/ (committed; rerun after editing this file).

Every seed is written here by hand or derived from the repository's own test data
(tests/data/chat): nothing is copied from ../shared. Seeds stay small (a few hundred bytes) so
that libFuzzer mutates them quickly.
"""
import json
import shutil
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CORPUS = ROOT / "corpus"
TEST_DATA = ROOT.parent / "tests" / "data" / "chat"


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def openai_request():
    # The first character picks the parser: 0 completions, 1 chat, 2 tokenize, 3 detokenize.
    seeds = {
        "completion": '0{"model":"m","prompt":"Once upon a time","max_tokens":16}',
        "completion_list": '0{"prompt":["a","b"],"n":2,"echo":true,"logprobs":2,"stop":["\\n"]}',
        "completion_ids": '0{"prompt":[[1,2,3],[4]],"temperature":0,"seed":7,"top_k":5}',
        "completion_stream": '0{"prompt":"x","stream":true,"stream_options":{"include_usage":true,'
        '"continuous_usage_stats":true},"logit_bias":{"5":-100},"min_tokens":2}',
        "completion_sampling": '0{"prompt":"x","top_p":0.9,"min_p":0.1,"presence_penalty":1,'
        '"frequency_penalty":-1,"repetition_penalty":1.2,"stop_token_ids":[2],"ignore_eos":true,'
        '"include_stop_str_in_output":true,"truncate_prompt_tokens":3,"priority":1}',
        "completion_unsupported": '0{"prompt":"x","best_of":2,"suffix":"s"}',
        "completion_nulls": '0{"prompt":"x","max_tokens":null,"n":null,"user":null}',
        "chat": '1{"model":"m","messages":[{"role":"system","content":"Be brief."},'
        '{"role":"user","content":"Hi"}],"max_tokens":8}',
        "chat_parts": '1{"messages":[{"role":"user","content":[{"type":"text","text":"a"},'
        '{"type":"text","text":"b"}]}],"logprobs":true,"top_logprobs":3,"stream":true}',
        "chat_tools": '1{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function",'
        '"function":{"name":"f","parameters":{}}}],"tool_choice":"auto",'
        '"chat_template_kwargs":{"enable_thinking":false},"add_generation_prompt":false}',
        "chat_format": '1{"messages":[{"role":"user","content":"x"}],'
        '"response_format":{"type":"json_object"}}',
        "tokenize_prompt": '2{"model":"m","prompt":"Hello","add_special_tokens":false}',
        "tokenize_messages": '2{"messages":[{"role":"user","content":"Hi"}],'
        '"add_generation_prompt":true}',
        "detokenize": '3{"tokens":[1,2,3,4000000000,-1,2.0]}',
        "not_json": "0{\"prompt\": \"x\",",
        "deep": "0" + "[" * 70 + "]" * 70,
    }
    for name, body in seeds.items():
        write("openai_request", name, body)


def tokenizer_encode():
    seeds = {
        "story": "Once upon a time, there was a little girl named Lily.",
        "spaces": "  two  spaces\tand\ttabs\n\nnewlines  ",
        "digits": "1234567890 3.14159 -42",
        "unicode": "héllo wörld — ünïcödé 日本語 😀",
        "special": "<s>Hello</s><unk>",
        "bytes": b"\xff\xfe\xc3\x28\xe2\x82\xa1\xf0\x9f\x98",
        "empty": "",
    }
    for name, text in seeds.items():
        write("tokenizer_encode", name, text)


def tokenizer_load():
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "\u2581": 3, "a": 4, "b": 5, "\u2581a": 6,
             "ab": 7, "<0x0A>": 8}
    spm = {
        "version": "1.0",
        "added_tokens": [
            {"id": 0, "content": "<unk>", "special": True, "single_word": False,
             "lstrip": False, "rstrip": False, "normalized": False},
            {"id": 1, "content": "<s>", "special": True, "single_word": False,
             "lstrip": False, "rstrip": False, "normalized": False},
            {"id": 2, "content": "</s>", "special": True, "single_word": False,
             "lstrip": False, "rstrip": False, "normalized": False},
        ],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {
                               "<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
                  "merges": ["\u2581 a", "a b"]},
    }
    write("tokenizer_load", "sentencepiece_bpe.json", json.dumps(spm, ensure_ascii=False))

    byte_vocab = {"!": 0, "a": 1, "b": 2, "\u0120": 3, "\u0120a": 4, "ab": 5, "<|end|>": 6}
    bytelevel = {
        "version": "1.0",
        "added_tokens": [{"id": 6, "content": "<|end|>", "special": True, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False}],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re)|\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+|\\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
             "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": byte_vocab, "merges": [["\u0120", "a"], ["a", "b"]]},
    }
    write("tokenizer_load", "byte_level_bpe.json", json.dumps(bytelevel, ensure_ascii=False))
    write("tokenizer_load", "empty_object.json", "{}")
    write("tokenizer_load", "not_bpe.json", '{"model": {"type": "WordPiece", "vocab": {}}}')


def jinja():
    features = json.loads((TEST_DATA / "features.json").read_text())
    for name, case in sorted(features.items()):
        write("jinja", "feature_" + name,
              case["source"] + "\n---vars---\n" + json.dumps(case["variables"]))
    conversations = json.loads((TEST_DATA / "conversations.json").read_text())
    # "@" and a digit: the reference template of that number with these variables.
    for i, (name, variables) in enumerate(sorted(conversations.items())):
        variables = dict(variables, add_generation_prompt=True)
        write("jinja", f"reference_{i % 6}_{name}", f"@{i % 6}" + json.dumps(variables))
    write("jinja", "reference_text_content", "@3Tell me about {{ jinja }} and {% raw %}")
    write("jinja", "chatml",
          "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] | trim }}"
          "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
          "{% endif %}")
    write("jinja", "macro_and_filters",
          "{% macro say(x, y='!') %}{{ x | upper }}{{ y }}{% endmacro %}"
          "{{ say('hi') }}{{ say(messages | length, y=bos_token) }}"
          "{{ messages | map(attribute='role') | join(',') }}"
          "{{ (messages | selectattr('role', 'equalto', 'user') | list)[-1].content[:3] }}"
          "{{ '%s-%d' % ('a', 3) }}{{ {'k': [1, 2.5, none, true]} | tojson }}")
    write("jinja", "raise",
          "{% if messages[0]['role'] != 'user' %}{{ raise_exception('bad role') }}{% endif %}")


def safetensors_file(header, data=b""):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def safetensors():
    write("safetensors", "f32_pair", safetensors_file({
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
        "b": {"dtype": "F32", "shape": [1], "data_offsets": [16, 20]}},
        struct.pack("<5f", 1.0, -2.0, 0.5, 3.0, 7.0)))
    write("safetensors", "f16_bf16", safetensors_file({
        "h": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]},
        "g": {"dtype": "BF16", "shape": [2, 1], "data_offsets": [6, 10]},
        "empty": {"dtype": "F32", "shape": [0, 4], "data_offsets": [10, 10]}},
        bytes([0x00, 0x3c, 0x01, 0x00, 0xff, 0x7c, 0x80, 0x3f, 0xc0, 0x7f])))
    write("safetensors", "scalar", safetensors_file({
        "s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}, b"\x00\x00\x80\x3f"))
    write("safetensors", "overlap", safetensors_file({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)))
    write("safetensors", "header_too_long", struct.pack("<Q", 1 << 40) + b"{}")


def model_config():
    base = {
        "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 172,
        "num_hidden_layers": 5, "num_attention_heads": 8, "num_key_value_heads": 4,
        "vocab_size": 512, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "tie_word_embeddings": True, "hidden_act": "silu",
        "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32",
    }
    write("model_config", "llama", json.dumps(base))
    write("model_config", "qwen2", json.dumps(dict(
        base, architectures=["Qwen2ForCausalLM"], head_dim=16, attention_bias=True,
        eos_token_id=[2, 3], bos_token_id=None)))
    write("model_config", "llama3_scaling", json.dumps(dict(
        base, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 256})))
    write("model_config", "mistral_linear", json.dumps(dict(
        base, architectures=["MistralForCausalLM"], rope_scaling={"type": "linear",
                                                                  "factor": 2})))
    write("model_config", "mistyped", json.dumps(dict(base, hidden_size="64",
                                                      num_attention_heads=0)))


HTTP_POST = ("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             "Content-Length: {n}\r\n{extra}\r\n{body}")


def post(path, body, extra=""):
    return HTTP_POST.format(path=path, n=len(body.encode()), extra=extra, body=body)


def http_session():
    completion = '{"model":"fake-model","prompt":"Once","max_tokens":3}'
    stream = '{"prompt":"Once","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}'
    chat = '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"n":2,"logprobs":true,"top_logprobs":2}'
    seeds = {
        "get_health": "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "get_models_10": "GET /v1/models HTTP/1.0\r\n\r\n",
        "head_version": "HEAD /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        "options_cors": "OPTIONS /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://a\r\n"
                        "Access-Control-Request-Headers: content-type\r\n\r\n",
        "completion": post("/v1/completions", completion),
        "stream": post("/v1/completions", stream),
        "chat": post("/v1/chat/completions", chat, "X-Request-Id: abc\r\n"),
        "tokenize": post("/tokenize", '{"prompt":"hello"}'),
        "detokenize": post("/detokenize", '{"tokens":[104,105]}'),
        "pipelined": "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n\r\n"
                     + post("/v1/completions", completion) + "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "bytes_during_stream": post("/v1/completions", stream)
                               + "<<<pause>>>GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "split_body": post("/v1/completions", completion)[:-20] + "<<<pause>>>"
                      + completion[-20:],
        "expect_continue": post("/v1/completions", completion, "Expect: 100-continue\r\n")
                           .replace(completion, "<<<pause>>>" + completion),
        "chunked": "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                   "Content-Type: application/json\r\n\r\n5\r\n" + completion[:5] + "\r\n"
                   + f"{len(completion) - 5:x}\r\n" + completion[5:] + "\r\n0\r\n\r\n",
        "keep_open": "<<<keep-open>>>GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "too_large": post("/v1/completions", '{"prompt":"' + "x" * 17000 + '"}'),
        "bad_content_type": post("/v1/completions", completion).replace(
            "application/json", "text/plain"),
        "no_host": "GET /health HTTP/1.1\r\n\r\n",
        "malformed": "GET / HTTP/9.9\r\nBad Header\r\n\r\n",
        "websocket": "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n"
                     "<<<pause>>>\x81\x85\x00\x00\x00\x00{\"a\"}",
    }
    for name, data in seeds.items():
        write("http_session", name, data.encode("latin-1"))


def websocket():
    seeds = {
        "completion": '{"id":"a","prompt":"Once upon","max_tokens":4}',
        "chat": '{"id":"b","messages":[{"role":"user","content":"Hi"}],"max_tokens":2,'
                '"stream_options":{"include_usage":true}}',
        "typed": '{"id":7,"type":"chat","messages":[{"role":"user","content":"x"}],"n":2}',
        "two_and_cancel": '{"id":"a","prompt":"x","max_tokens":1000}\n'
                          '{"id":"b","prompt":"y","max_tokens":2}\n{"type":"cancel","id":"a"}',
        "duplicate_id": '{"id":"a","prompt":"x"}\n{"id":"a","prompt":"y"}',
        "errors": '{"prompt":"no id"}\n[1,2]\nnot json\n{"id":"c","prompt":"too long"}\n'
                  '{"id":"d","prompt":"throw"}\n{"id":"e","model":"other","prompt":"x"}',
        "logprobs": '{"id":"l","prompt":"x","max_tokens":2,"logprobs":3,"echo":true}',
    }
    for name, data in seeds.items():
        write("websocket", name, data)


def grammar():
    # Byte 0: 0 GBNF, 1 regex, 2 JSON Schema strict, 3 JSON Schema; byte 1 seeds the walk.
    seeds = {
        "gbnf_list": (0, 'root ::= "(" item ("," item)* ")"\nitem ::= [0-9]+ | "x"'),
        "gbnf_recursive": (0, 'root ::= expr\nexpr ::= term ("+" term)*\n'
                              'term ::= [a-z] | "(" expr ")"'),
        "gbnf_repeat": (0, 'root ::= [^"\\\\]{2,5} ("a" | "b"){0,3}'),
        "regex_email": (1, "[a-z]+@[a-z]+\\.(com|org)"),
        "regex_classes": (1, "(\\d{2,4}|[A-F]+)-\\w*\\s?"),
        "schema_object": (2, json.dumps({
            "type": "object", "required": ["a"], "additionalProperties": False,
            "properties": {"a": {"type": "integer", "minimum": -3, "maximum": 12},
                           "b": {"type": "array", "items": {"enum": ["x", 1, None]},
                                 "maxItems": 2}}})),
        "schema_refs": (3, json.dumps({
            "$defs": {"n": {"type": "object", "properties": {
                "v": {"type": "string", "maxLength": 3},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}},
            "$ref": "#/$defs/n"})),
        "schema_any_of": (3, json.dumps({"anyOf": [{"type": "string", "format": "date"},
                                                   {"type": ["number", "boolean"]},
                                                   {"const": {"k": [1, 2]}}]})),
        "schema_pattern": (2, json.dumps({"type": "string", "pattern": "^[a-c]{1,4}$"})),
    }
    for name, (kind, text) in seeds.items():
        write("grammar", name, bytes([kind, len(name)]) + text.encode())


def image_decode():
    """A tiny image in each format the decoder reads (PIL writes them; /usr/bin/python3 has it),
    and a PNG header that declares more pixels than any limit."""
    import io
    import zlib
    from PIL import Image
    pixels = Image.frombytes("RGB", (4, 3), bytes(range(36)))
    rgba = Image.frombytes("RGBA", (3, 2), bytes(range(0, 240, 10)))
    for name, image, kind, options in [("rgb.png", pixels, "PNG", {}), ("rgba.png", rgba, "PNG", {}),
                                       ("gray.png", pixels.convert("L"), "PNG", {}),
                                       ("palette.png", pixels.convert("P"), "PNG", {}),
                                       ("baseline.jpg", pixels, "JPEG", {"quality": 80}),
                                       ("progressive.jpg", pixels, "JPEG", {"progressive": True}),
                                       ("lossy.webp", pixels, "WEBP", {"quality": 50}),
                                       ("lossless.webp", rgba, "WEBP", {"lossless": True}),
                                       ("frame.gif", pixels.convert("P"), "GIF", {})]:
        out = io.BytesIO()
        image.save(out, kind, **options)
        write("image_decode", name, out.getvalue())

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 30000, 30000, 8, 2, 0, 0, 0)
    write("image_decode", "bomb.png", b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b""))


def main():
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    openai_request()
    tokenizer_encode()
    tokenizer_load()
    jinja()
    safetensors()
    model_config()
    http_session()
    websocket()
    grammar()
    image_decode()


if __name__ == "__main__":
    main()
