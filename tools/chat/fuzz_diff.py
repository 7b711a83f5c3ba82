#!/usr/bin/env python3
"""Differential fuzzing of InferDesk's chat-template renderer against jinja2 (a development tool).

Generates random expressions and small templates, renders each with jinja2 configured as transformers
configures it and with `inferdesk-cli render-template`, and prints the cases where the outputs differ
(or only one side raises). Needs jinja2 where it runs; no network, no transformers.

  python3 tools/chat/fuzz_diff.py --cli build/apps/cli/inferdesk-cli --cases 2000 --seed 1
"""
import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_feature_cases import _make_env  # noqa: E402

CONTEXT = {
    "s": "Hello World", "w": "  a,b  ", "n": 3, "f": 2.5, "neg": -4, "l": [3, 1, 2], "sl": ["b", "A", "c"],
    "d": {"b": 1, "a": "x", "n": None}, "e": [], "t": True, "z": 0, "nn": None, "u8": "héllo wörld ß",
    "msgs": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
             {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}],
}
VARS = list(CONTEXT) + ["undef"]
ATOMS = ["0", "1", "2", "-3", "10", "0.5", "1.0", "2.25", "1e-7", "1e20", "'a'", "'Ab c'", "''", "' x '", "'é'", "'1'",
         "'a,b'", "none", "true", "false", "[]", "[1, 2]", "['x', 'y']", "{}", "{'k': 1, 'j': [2]}", "(1, 'a')"]
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "~", "and", "or", "==", "!=", "<", "<=", ">", ">=", "in", "not in"]
ATTRS = ["role", "content", "a", "b", "items", "keys", "get", "upper", "strip", "0", "tool_calls", "function"]
FILTERS = ["trim", "length", "upper", "lower", "title", "capitalize", "list", "string", "int", "float", "first", "last",
           "tojson", "abs", "sort", "unique", "reverse", "join", "join(', ')", "default('D')", "default('D', true)",
           "items", "dictsort", "safe", "escape", "wordcount", "round", "round(1)", "sum", "max", "min", "count",
           "replace('a', 'b')", "indent(2)", "center(9)", "select", "reject", "map('string')", "map(attribute='role')",
           "selectattr('role')", "rejectattr('content', 'equalto', 'hi')", "batch(2)", "tojson(indent=1)",
           "format(1)", "int(7)", "truncate(9)", "attr('role')", "slice(2)"]
TESTS = ["defined", "undefined", "none", "string", "number", "mapping", "iterable", "sequence", "integer", "float",
         "boolean", "true", "false", "odd", "even", "lower", "upper", "callable", "in [1, 'a']", "equalto 1",
         "divisibleby 2", "sameas none", "escaped"]
METHODS = ["strip()", "split()", "split(',')", "upper()", "lower()", "title()", "startswith('H')", "endswith('d')",
           "replace('l', 'L')", "get('a')", "get('zz', 0)", "items()", "keys()", "values()", "count(1)", "index(1)",
           "format(1, 2)", "lstrip('H')", "rstrip()", "find('o')", "isdigit()", "capitalize()", "join(['1', '2'])"]


def expr(r, depth):
    if depth <= 0 or r.random() < 0.25:
        return r.choice(ATOMS) if r.random() < 0.5 else r.choice(VARS)
    k = r.random()
    if k < 0.25:
        return f"({expr(r, depth - 1)} {r.choice(BINOPS)} {expr(r, depth - 1)})"
    if k < 0.4:
        return f"{expr(r, depth - 1)} | {r.choice(FILTERS)}"
    if k < 0.5:
        return f"({expr(r, depth - 1)} is {'not ' if r.random() < 0.3 else ''}{r.choice(TESTS)})"
    if k < 0.6:
        return f"{r.choice(VARS)}.{r.choice(METHODS)}"
    if k < 0.68:
        return f"{r.choice(VARS)}.{r.choice(ATTRS)}"
    if k < 0.76:
        idx = r.choice(["0", "-1", "1:", ":-1", "::-1", "::2", "'role'", "'a'", "5", "1:2"])
        return f"{r.choice(VARS)}[{idx}]"
    if k < 0.84:
        return f"({expr(r, depth - 1)} if {expr(r, depth - 1)} else {expr(r, depth - 1)})"
    if k < 0.9:
        return f"(not {expr(r, depth - 1)})"
    if k < 0.95:
        return f"[{expr(r, depth - 1)}, {expr(r, depth - 1)}]"
    return f"{{'k': {expr(r, depth - 1)}}}"


STATEMENTS = [
    "{% macro m(a, b=E1) %}[{{ a }}|{{ b }}|{{ varargs }}]{% endmacro %}{{ m(E2) }}{{ m(E1, b=E2) }}",
    "{% macro w() %}<{{ caller(E1) }}>{% endmacro %}{% call(x) w() %}{{ x }}{{ E2 }}{% endcall %}",
    "{% for x in l if E1 %}{{ loop.index }}{{ loop.length }}{{ x }}{% else %}none{% endfor %}",
    "{% for x in msgs %}{% if E1 %}{% continue %}{% endif %}{{ x.role }}{% if loop.index > 1 %}{% break %}{% endif %}{% endfor %}",
    "{% set b %}{{ E1 }}-{{ E2 }}{% endset %}{{ b | length }}{{ b }}",
    "{% with a = E1 %}{{ a }}{% set c = E2 %}{{ c }}{% endwith %}{{ a is defined }}",
    "{% filter upper %}{{ E1 }}{% endfilter %}",
    "{% for a in [1, 2] %}{% for b in l %}{{ loop.previtem }}{{ E1 }}{% endfor %}{{ loop.nextitem }}{% endfor %}",
    "{% set ns = namespace(x=[]) %}{% for i in range(3) %}{% set ns.x = ns.x + [E1] %}{% endfor %}{{ ns.x }}",
    "{% for k, v in d.items() %}{{ k }}={{ v }}{{ E1 }};{% endfor %}",
    "{% if E1 %}A{% elif E2 %}B{% else %}C{% endif %}",
    "{{ E1 }}{# {{ E2 }} #}{% raw %}{{ E1 }}{% endraw %}",
]


def statement(r):
    src = r.choice(STATEMENTS)
    for slot in ("E1", "E2"):
        while slot in src:
            src = src.replace(slot, expr(r, 2), 1)
    return src


def template(r):
    k = r.random()
    if k < 0.3:
        return statement(r)
    k = r.random()
    if k < 0.6:
        return "{{ " + expr(r, 3) + " }}"
    if k < 0.75:
        return ("{% for x in " + expr(r, 2) + " %}{{ loop.index }}:{{ x }}{% if loop.last %}!{% endif %},"
                "{% else %}empty{% endfor %}")
    if k < 0.85:
        return "{% set v = " + expr(r, 2) + " %}{% if v %}T{{ v }}{% else %}F{% endif %}"
    if k < 0.93:
        return "{%- for m in msgs %}\n  {%- if " + expr(r, 2) + " %}\n[{{ m.role }}]\n  {% endif %}\n{% endfor %}"
    return "{% set ns = namespace(a=" + expr(r, 1) + ") %}{% for i in l %}{% set ns.a = " + expr(r, 1) + " %}{% endfor %}{{ ns.a }}"


WS_TEXT = ["", " ", "  ", "\n", "\n  ", "  \n", "\t", "x", " y ", "\n\n", "z\n  ", "\u00a0", "\r\n"]


def ws_template(r):
    """Random text and tags with whitespace-control markers, properly nested."""
    out, stack = [], []
    for _ in range(r.randint(2, 12)):
        out.append(r.choice(WS_TEXT))
        lm, rm = r.choice(["", "", "-", "+"]), r.choice(["", "", "-", "+"])
        k = r.random()
        if k < 0.25:
            out.append("{%" + lm + " if t " + rm + "%}")
            stack.append("endif")
        elif k < 0.4:
            out.append("{%" + lm + " for i in [1, 2] " + rm + "%}")
            stack.append("endfor")
        elif k < 0.6 and stack:
            out.append("{%" + lm + " " + stack.pop() + " " + rm + "%}")
        elif k < 0.75:
            out.append("{{" + r.choice(["", "-"]) + " n " + r.choice(["", "-"]) + "}}")
        elif k < 0.85:
            out.append("{#" + lm + " c " + rm + "#}")
        elif k < 0.92:
            out.append("{%" + lm + " set q = 1 " + rm + "%}")
        else:
            out.append("{%" + lm + " raw " + r.choice(["", "-"]) + "%}" + r.choice(WS_TEXT) + "{{ x }}" +
                       r.choice(WS_TEXT) + "{%" + r.choice(["", "-", "+"]) + " endraw " + rm + "%}")
    while stack:
        out.append(r.choice(WS_TEXT) + "{% " + stack.pop() + " %}")
    out.append(r.choice(WS_TEXT))
    return "".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--whitespace", action="store_true", help="fuzz whitespace control instead of expressions")
    args = ap.parse_args()
    env = _make_env()
    r = random.Random(args.seed)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        cpath = os.path.join(tmp, "c.json")
        with open(cpath, "w", encoding="utf-8") as f:
            json.dump(CONTEXT, f)
        tpath = os.path.join(tmp, "t.jinja")
        for _ in range(args.cases):
            src = ws_template(r) if args.whitespace else template(r)
            try:
                want, err = env.from_string(src).render(**copy.deepcopy(CONTEXT)), None
            except Exception as e:  # noqa: BLE001
                want, err = None, f"{type(e).__name__}: {e}"
            with open(tpath, "w", encoding="utf-8", newline="") as f:
                f.write(src)
            p = subprocess.run([args.cli, "render-template", "--template", tpath, "--context", cpath],
                               capture_output=True)
            got = p.stdout.decode("utf-8", "replace")
            internal = b"internal error" in p.stderr  # a bug of ours even when jinja2 raised too
            if err is not None and p.returncode != 0 and not internal:
                continue
            if err is None and p.returncode == 0 and got == want:
                continue
            if err is None and (" at 0x" in want or " AT 0X" in want):
                continue  # Python object addresses cannot match
            bad += 1
            print(f"--- {src}\n    jinja2: {err or repr(want)}\n    ours:   {repr(got) if p.returncode == 0 else p.stderr.decode().strip()}")
    print(f"{args.cases - bad} of {args.cases} agree")


if __name__ == "__main__":
    main()
