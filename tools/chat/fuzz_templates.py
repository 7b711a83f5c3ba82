#!/usr/bin/env python3
"""Real chat templates x random conversations: jinja2 (transformers' configuration) vs inferdesk-cli.

A development tool beside the committed golden test: for every template of the shared test data it
renders random conversations (roles in odd orders, content as str / None / list of parts / unicode,
tool calls with dict or string arguments, reasoning_content, tools or none, random add_generation_prompt
and enable_thinking) and reports every case where InferDesk's output differs from jinja2's, or only one
of them raises.

  python3 tools/chat/fuzz_templates.py --shared ../shared --cli build/apps/cli/inferdesk-cli --per-template 30
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
from make_reference import collect_templates  # noqa: E402

TEXTS = ["Hello!", "", "  padded  ", "line1\nline2", "你好 🌍 e\u0301", "<think>\nhm\n</think>\n\nok", "a {{ b }} %}",
         "tab\there \"q\" 'a' \\", "</s><|im_end|>", "x" * 50]
TOOLS = [{"type": "function", "function": {"name": "get_time", "description": "Current time",
                                           "parameters": {"type": "object", "properties": {
                                               "tz": {"type": "string", "enum": ["UTC", "CET"]},
                                               "precise": {"type": "boolean", "default": False}},
                                               "required": ["tz"]}}},
         {"type": "function", "function": {"name": "add", "description": "Add numbers",
                                           "parameters": {"type": "object", "properties": {
                                               "a": {"type": "number"}, "b": {"type": "integer", "minimum": 0}}}}}]


def content(r):
    k = r.random()
    if k < 0.7:
        return r.choice(TEXTS)
    if k < 0.8:
        return None
    return [{"type": "text", "text": r.choice(TEXTS)}] + ([{"type": "image"}] if r.random() < 0.3 else [])


def tool_call(r, i):
    args = {"tz": r.choice(["UTC", "CET"]), "precise": r.random() < 0.5} if r.random() < 0.5 else {"a": 1.5, "b": 2}
    name = "get_time" if "tz" in args else "add"
    return {"id": f"call_{i}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args) if r.random() < 0.3 else args}}


def conversation(r):
    msgs = []
    if r.random() < 0.5:
        msgs.append({"role": "system", "content": content(r) if r.random() < 0.3 else r.choice(TEXTS)})
    for i in range(r.randint(1, 5)):
        role = r.choice(["user", "user", "assistant", "tool"]) if r.random() < 0.3 else ("user" if i % 2 == 0 else "assistant")
        m = {"role": role, "content": content(r) if r.random() < 0.4 else r.choice(TEXTS)}
        if role == "assistant" and r.random() < 0.3:
            m["tool_calls"] = [tool_call(r, j) for j in range(r.randint(1, 2))]
        if role == "assistant" and r.random() < 0.2:
            m["reasoning_content"] = r.choice(TEXTS)
        if role == "tool":
            m["tool_call_id"] = "call_0"
            m["name"] = "get_time"
        msgs.append(m)
    kwargs = {}
    if r.random() < 0.4:
        kwargs["enable_thinking"] = r.random() < 0.5
    return msgs, (TOOLS if r.random() < 0.4 else None), r.random() < 0.6, kwargs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--per-template", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    env = _make_env()
    r = random.Random(args.seed)
    total = bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        tpath, cpath = os.path.join(tmp, "t.jinja"), os.path.join(tmp, "c.json")
        for tpl in collect_templates(args.shared):
            if "strftime_now" in tpl["text"]:
                continue  # the CLI uses the real clock
            with open(tpath, "w", encoding="utf-8", newline="") as f:
                f.write(tpl["text"])
            try:
                compiled = env.from_string(tpl["text"])
            except Exception as e:  # noqa: BLE001
                compiled, compile_error = None, e
            for _ in range(args.per_template):
                msgs, tools, agp, kwargs = conversation(r)
                ctx = {"messages": msgs, "tools": tools, "documents": None, "add_generation_prompt": agp}
                ctx.update({k: tpl[k] for k in ("bos_token", "eos_token") if tpl[k] is not None})
                ctx.update(kwargs)
                try:
                    if compiled is None:
                        raise compile_error
                    want, err = compiled.render(**copy.deepcopy(ctx)), None
                except Exception as e:  # noqa: BLE001
                    want, err = None, f"{type(e).__name__}: {e}"
                with open(cpath, "w", encoding="utf-8") as f:
                    json.dump(ctx, f, ensure_ascii=False)
                p = subprocess.run([args.cli, "render-template", "--template", tpath, "--context", cpath],
                                   capture_output=True)
                total += 1
                got = p.stdout.decode("utf-8", "replace")
                internal = b"internal error" in p.stderr  # a bug of ours even when jinja2 raised too
                if (err is not None) == (p.returncode != 0) and (err is not None or got == want) and not internal:
                    continue
                bad += 1
                print(f"--- {tpl['id']}\n  context: {json.dumps(ctx, ensure_ascii=False)[:600]}")
                print(f"  jinja2: {err or repr(want)[:600]}\n  ours:   "
                      f"{repr(got)[:600] if p.returncode == 0 else p.stderr.decode().strip()[:600]}")
    print(f"{total - bad} of {total} renders agree")


if __name__ == "__main__":
    main()
