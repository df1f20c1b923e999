#!/usr/bin/python3
"""Renders chat templates with Debian's python3-jinja2 exactly as Hugging Face's
apply_chat_template does, and writes the expected outputs to tests/data/chat/.

Run with /usr/bin/python3 (it has jinja2):  scripts/render_chat_reference.py [SHARED_DIR]

Outputs:
  tests/data/chat/conversations.json   the conversations rendered
  tests/data/chat/expected.json        per template: source path, bos/eos, and for every
                                       conversation and add_generation_prompt the text or
                                       the error raised
  tests/data/chat/features.json        small templates exercising single Jinja features,
                                       with their expected outputs
"""
import json
import os
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared")
OUT = os.path.join(ROOT, "tests", "data", "chat")


def make_env():
    """The environment of transformers' _compile_jinja_template."""

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Zürich"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

CONVERSATIONS = {
    "user_only": {"messages": [{"role": "user", "content": "Hello!"}]},
    "system_user": {"messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is 2 + 2?"}]},
    "multi_round": {"messages": [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Name a color."},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Another one?"},
        {"role": "assistant", "content": "Green."},
        {"role": "user", "content": "And a third?"}]},
    "no_system_rounds": {"messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."}]},
    "whitespace_unicode": {"messages": [
        {"role": "user", "content": "  Grüße aus Zürich! 你好 🦙\n\nline two\t \n"},
        {"role": "assistant", "content": "\n Hallo — \"quoted\" and 'single' \\ backslash \n"},
        {"role": "user", "content": "<b>tags</b> & {{ braces }} {% not jinja %}"}]},
    "thinking": {"messages": [
        {"role": "user", "content": "Think first: 3 * 7?"},
        {"role": "assistant", "content": "<think>\n3 * 7 = 21\n</think>\n\n21"},
        {"role": "user", "content": "And 6 * 7?"}]},
    "ends_with_assistant": {"messages": [
        {"role": "user", "content": "Say yes."},
        {"role": "assistant", "content": "Yes."}]},
    "tools": {
        "messages": [
            {"role": "system", "content": "You can call tools."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call12345", "type": "function",
                 "function": {"name": "get_weather",
                              "arguments": {"city": "Paris", "unit": "celsius"}}}]},
            {"role": "tool", "tool_call_id": "call12345", "content": "{\"temp\": 21}"},
            {"role": "user", "content": "Thanks!"}],
        "tools": [WEATHER_TOOL]},
    "tools_no_calls": {
        "messages": [{"role": "user", "content": "What can you do?"}],
        "tools": [WEATHER_TOOL]},
}

# Small templates for single features; each renders with the variables given.
FEATURES = {
    "loop_vars": ("{% for x in items %}{{ loop.index }}/{{ loop.length }}:{{ x }}"
                  "{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}"
                  "{{ loop.revindex }}{{ loop.cycle('a','b') }}|{% endfor %}",
                  {"items": ["p", "q", "r"]}),
    "loop_else_filter": ("{% for x in items if x > 1 %}{{ x }},{% else %}none{% endfor %}"
                         "{% for x in [] %}x{% else %}empty{% endfor %}",
                         {"items": [1, 2, 3]}),
    "loop_controls": ("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
                      "{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    "namespace": ("{% set ns = namespace(n=0, s='') %}{% for x in [1,2,3] %}"
                  "{% set ns.n = ns.n + x %}{% set ns.s = ns.s ~ x %}{% endfor %}"
                  "{{ ns.n }} {{ ns.s }}", {}),
    "scoping": ("{% set a = 1 %}{% for x in [1] %}{% set a = 2 %}in={{ a }}{% endfor %}"
                " out={{ a }}{% if true %}{% set b = 3 %}{% endif %} b={{ b }}", {}),
    "filters": ("{{ '  hi  ' | trim }}|{{ 'Ab' | upper }}{{ 'Ab' | lower }}|"
                "{{ [1,2,3] | length }}|{{ 'a-b-c' | replace('-', '+') }}|"
                "{{ ['x','y'] | join(', ') }}|{{ undefined_var | default('dflt') }}|"
                "{{ '' | default('e', true) }}|{{ [3,1,2] | sort | list }}|"
                "{{ [1,2,3] | first }}{{ [1,2,3] | last }}|{{ 'abc' | reverse }}|"
                "{{ [1,1,2] | unique | list }}|{{ -3 | abs }}|{{ '7' | int + 1 }}|"
                "{{ 2.5 | round }}|{{ 'x' | string }}{{ 3 | string }}|"
                "{{ 'hello world' | title }}{{ 'hello' | capitalize }}", {}),
    "select_map": ("{{ users | selectattr('admin') | map(attribute='name') | join(',') }}|"
                   "{{ users | rejectattr('admin') | map(attribute='name') | list }}|"
                   "{{ users | selectattr('name', 'equalto', 'bo') | list | length }}|"
                   "{{ [1,2,3,4] | select('odd') | list }}|{{ [1,2,3,4] | reject('even') | list }}|"
                   "{{ ['a','b'] | map('upper') | list }}|{{ d | items | list }}|"
                   "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{{ d | dictsort }}",
                   {"users": [{"name": "al", "admin": True}, {"name": "bo", "admin": False}],
                    "d": {"z": 1, "a": [1, "two"]}}),
    "tojson": ("{{ obj | tojson }}\n{{ obj | tojson(indent=2) }}\n{{ 'é\"\\n' | tojson }}"
               "\n{{ [] | tojson }}{{ {} | tojson(indent=4) }}{{ 1.5 | tojson }}{{ none | tojson }}",
               {"obj": {"b": [1, 2.0, None, True], "a": "x", "nested": {"k": []}}}),
    "string_methods": ("{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.strip(' x') }}|"
                       "{{ s.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a b c'.split(' ', 1) }}|"
                       "{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith('bc') }}"
                       "{{ 'abc'.startswith(('x', 'a')) }}|{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}|"
                       "{{ 'a-b'.replace('-', '_') }}|{{ 'hello'.find('l') }}|{{ '-'.join(['1','2']) }}|"
                       "{{ 'x</think>y'.split('</think>')[-1] }}|{{ 'abcdef'[1:4] }}{{ 'abc'[::-1] }}",
                       {"s": "  x hello world x  "}),
    "tests": ("{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ n is none }}"
              "{{ x is string }}{{ 1 is number }}{{ 1 is integer }}{{ 1.0 is float }}"
              "{{ d is mapping }}{{ l is iterable }}{{ x is iterable }}{{ l is sequence }}"
              "{{ 4 is divisibleby 2 }}{{ 3 is odd }}{{ 3 is even }}{{ x is not none }}"
              "{{ 'ab' is lower }}{{ true is boolean }}{{ x is equalto 'str' }}{{ 1 is in [1] }}",
              {"x": "str", "n": None, "d": {}, "l": [1]}),
    "operators": ("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}"
                  " {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'a' ~ 1 ~ none }} {{ 'ab' * 2 }}"
                  " {{ 'b' in 'abc' }} {{ 'k' in d }} {{ 3 not in [1] }} {{ 1 < 2 }} {{ 'a' < 'b' }}"
                  " {{ not true }} {{ true and 'x' }} {{ false or 'y' }} {{ [1] + [2] }}"
                  " {{ 1 == 1.0 }} {{ 'x' if false }}{{ 'y' if false else 'z' }} {{ 0.1 + 0.2 }}"
                  " {{ 1e-5 }} {{ 1e20 }} {{ 10 / 4 }} {{ 3.0 }}",
                  {"d": {"k": 1}}),
    "output_repr": ("{{ [1, 'a', none, true, 1.5] }} {{ {'k': 'v', 'n': [1]} }} {{ none }} {{ true }}"
                    " {{ \"it's\" }} {{ [\"it's\"] }} {{ ['a\\nb'] }}", {}),
    "whitespace": ("<{% if true %}\n  a\n  {%- if true %} b {% endif -%}\n"
                   "    {% if true %}\n    c\n    {% endif %}\n{#- comment #}\n  {{- ' d ' -}}  \n"
                   "{%+ if true %}e{% endif %}\n   {% if true %}f{% endif %}  \n{% endif %}>", {}),
    "macro": ("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
              "{{ greet('A') }} {{ greet('B', '?') }} {{ greet(name='C') }}", {}),
    "set_block_and_dict": ("{% set block %}x{{ 1 + 1 }}y{% endset %}{{ block }}|"
                           "{% set d = {'a': 1, 'b': [2, 3]} %}{{ d.a }}{{ d['b'][1] }}"
                           "{{ d.get('c', 'none') }}{{ d.get('a') }}|{{ messages[0].content }}"
                           "{{ messages[-1]['role'] }}{{ (messages | length) - 1 }}",
                           {"messages": [{"role": "user", "content": "c0"},
                                         {"role": "assistant", "content": "c1"}]}),
    "raise": ("{% if x %}{{ raise_exception('bad x: ' ~ x) }}{% endif %}ok", {"x": 5}),
}


def render(env, source, variables):
    try:
        return {"text": env.from_string(source).render(**variables)}
    except Exception as e:  # the error text differs between engines; only its presence is compared
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    env = make_env()
    templates = {}
    tdir = os.path.join(SHARED, "chat-templates")
    for name in sorted(os.listdir(tdir)):
        if name.endswith(".jinja"):
            with open(os.path.join(tdir, name), encoding="utf-8") as f:
                templates[name] = {"path": "chat-templates/" + name, "source": f.read(),
                                   "bos_token": "<s>", "eos_token": "</s>"}
    for tok in ("llama3", "qwen3"):
        rel = f"tokenizers/{tok}/tokenizer_config.json"
        with open(os.path.join(SHARED, rel), encoding="utf-8") as f:
            config = json.load(f)
        templates[tok] = {"path": rel, "source": config["chat_template"],
                          "bos_token": config.get("bos_token"), "eos_token": config.get("eos_token")}

    expected = {}
    for name, t in templates.items():
        cases = []
        for conv_name, conv in CONVERSATIONS.items():
            for agp in (False, True):
                variables = {"messages": conv["messages"], "tools": conv.get("tools"),
                             "documents": None, "add_generation_prompt": agp}
                # Hugging Face passes only the special tokens the tokenizer has.
                for key in ("bos_token", "eos_token"):
                    if t[key] is not None:
                        variables[key] = t[key]
                case = {"conversation": conv_name, "add_generation_prompt": agp}
                case.update(render(env, t["source"], variables))
                cases.append(case)
        expected[name] = {"path": t["path"], "bos_token": t["bos_token"],
                          "eos_token": t["eos_token"], "cases": cases}

    features = {}
    for name, (source, variables) in FEATURES.items():
        features[name] = {"source": source, "variables": variables}
        features[name].update(render(env, source, variables))

    os.makedirs(OUT, exist_ok=True)
    for file, data in (("conversations.json", CONVERSATIONS), ("expected.json", expected),
                       ("features.json", features)):
        with open(os.path.join(OUT, file), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print(f"wrote {len(expected)} templates x {len(CONVERSATIONS) * 2} cases and "
          f"{len(features)} feature templates to {OUT}")


if __name__ == "__main__":
    main()
