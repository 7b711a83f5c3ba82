#!/usr/bin/env python3
"""Reference chat-template renderings from Hugging Face transformers, for tests/golden/chat.

Runs on the GPU test machine (transformers 5.x + jinja2). For every chat template of the shared test
data (plain .jinja files under chat-templates/ and chat-templates/extra/, {"chat_template": ...}
JSON files there, and the chat_template of every tokenizers/*/tokenizer_config*.json, chat_template.jinja
and chat_template.json) it renders every conversation of tests/golden/chat/conversations.json with
transformers' own renderer (transformers.utils.chat_template_utils.render_jinja_template, the function
that PreTrainedTokenizerBase.apply_chat_template calls, so the Jinja environment is the same) and writes
the exact text, or the exception it raised, to one JSON file.

strftime_now() is pinned to FIXED_NOW so that the outputs do not depend on the day they were made; the
C++ test pins its clock to the same instant.

Usage (on the GPU machine; SHARED is a copy of ../shared with chat-templates/ and tokenizers/):
  python3 tools/chat/make_reference.py --shared SHARED \
      --conversations tests/golden/chat/conversations.json --out reference.json
--mimic builds the same environment from jinja2 alone (for trying the script where transformers is
missing); its output is NOT a reference and is marked as such.
"""
import argparse
import datetime as _dt
import glob
import inspect
import json
import os
import sys

FIXED_NOW = _dt.datetime(2025, 3, 14, 9, 26, 53)


class _FixedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW if tz is None else FIXED_NOW.replace(tzinfo=tz)


def token_content(value):
    """bos_token/eos_token in tokenizer_config.json: a string, an AddedToken dict, or null."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def collect_templates(shared):
    """Every (id, template text, bos, eos) to render. ids are paths relative to SHARED (+ #name)."""
    out = []

    def add(rel, text, select=None, bos="<s>", eos="</s>"):
        out.append({"id": rel + ("#" + select if select else ""), "path": rel, "select": select,
                    "bos_token": bos, "eos_token": eos, "text": text})

    def read(rel):
        with open(os.path.join(shared, rel), encoding="utf-8") as f:
            return f.read()

    ct_dir = "chat-templates"
    for pattern in ("*.jinja", "extra/*/*.jinja", "extra/*/*.jinja2"):
        for path in sorted(glob.glob(os.path.join(shared, ct_dir, pattern))):
            rel = os.path.relpath(path, shared)
            add(rel, read(rel))
    for path in sorted(glob.glob(os.path.join(shared, ct_dir, "extra/*/*.json"))):
        rel = os.path.relpath(path, shared)
        tpl = json.loads(read(rel)).get("chat_template")
        if isinstance(tpl, str):
            add(rel, tpl)

    for folder in sorted(glob.glob(os.path.join(shared, "tokenizers", "*"))):
        if not os.path.isdir(folder):
            continue
        bos = eos = None
        main_cfg = os.path.join(folder, "tokenizer_config.json")
        if os.path.exists(main_cfg):
            with open(main_cfg, encoding="utf-8") as f:
                cfg = json.load(f)
            bos, eos = token_content(cfg.get("bos_token")), token_content(cfg.get("eos_token"))
        for cfg_path in sorted(glob.glob(os.path.join(folder, "tokenizer_config*.json"))):
            rel = os.path.relpath(cfg_path, shared)
            tpl = json.loads(read(rel)).get("chat_template")
            if isinstance(tpl, str):
                add(rel, tpl, None, bos, eos)
            elif isinstance(tpl, list):
                for entry in tpl:
                    add(rel, entry["template"], entry["name"], bos, eos)
        for name in ("chat_template.jinja", "chat_template.json"):
            rel = os.path.relpath(os.path.join(folder, name), shared)
            if not os.path.exists(os.path.join(shared, rel)):
                continue
            text = read(rel)
            if name.endswith(".json"):
                text = json.loads(text).get("chat_template")
                if not isinstance(text, str):
                    continue
            add(rel, text, None, bos, eos)
    return out


def hf_renderer():
    """transformers' renderer, with strftime_now pinned to FIXED_NOW."""
    import transformers
    from transformers.utils import chat_template_utils as ctu

    if isinstance(getattr(ctu, "datetime", None), type):
        ctu.datetime = _FixedDatetime  # `from datetime import datetime` in the module
    elif hasattr(ctu, "datetime"):  # `import datetime`: swap in a shim module
        class _Shim:
            datetime = _FixedDatetime
            def __getattr__(self, name):
                return getattr(_dt, name)
        ctu.datetime = _Shim()
    render = ctu.render_jinja_template
    sources = {}
    for name in ("render_jinja_template", "_compile_jinja_template", "_render_with_assistant_indices"):
        if hasattr(ctu, name):
            try:
                sources[name] = inspect.getsource(getattr(ctu, name))
            except (OSError, TypeError):
                pass

    def call(template, messages, tools, add_generation_prompt, context, documents=None):
        result = render(conversations=[messages], tools=tools, documents=documents, chat_template=template,
                        add_generation_prompt=add_generation_prompt, **context)
        rendered = result[0] if isinstance(result, tuple) else result
        return rendered[0] if isinstance(rendered, list) else rendered

    meta = {"transformers": transformers.__version__, "signature": str(inspect.signature(render))}
    return call, meta, sources


def make_mimic_env():
    """transformers' jinja2 environment built from jinja2 alone, with strftime_now pinned to FIXED_NOW."""
    import jinja2
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_support"), [], [], body).set_lineno(lineno)

        def _support(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    return env


def mimic_renderer():
    """The same environment built from jinja2 alone (no transformers): for trying the script only."""
    env = make_mimic_env()

    def call(template, messages, tools, add_generation_prompt, context, documents=None):
        return env.from_string(template).render(messages=messages, tools=tools, documents=documents,
                                                add_generation_prompt=add_generation_prompt, **context)

    return call, {"transformers": None, "mimic": True}, {}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--conversations", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--sources-out", help="write the renderer's Python source here (for reading only)")
    ap.add_argument("--mimic", action="store_true")
    args = ap.parse_args()

    import jinja2
    call, meta, sources = mimic_renderer() if args.mimic else hf_renderer()
    meta.update({"jinja2": jinja2.__version__, "python": sys.version.split()[0],
                 "fixed_now": FIXED_NOW.isoformat(), "generator": "tools/chat/make_reference.py"})
    if args.sources_out:
        with open(args.sources_out, "w", encoding="utf-8") as f:
            for name, src in sources.items():
                f.write(f"# ---- {name}\n{src}\n")

    with open(args.conversations, encoding="utf-8") as f:
        spec = json.load(f)
    tool_sets = spec["tool_sets"]
    templates = collect_templates(args.shared)
    probe = call("{{ strftime_now('%Y-%m-%d %H:%M:%S') }}", [], None, False, {})
    meta["strftime_probe"] = probe
    print(f"{len(templates)} templates x {len(spec['conversations'])} conversations; probe {probe!r}")

    entries = []
    for tpl in templates:
        context = {k: tpl[k] for k in ("bos_token", "eos_token") if tpl[k] is not None}
        results = {}
        for conv in spec["conversations"]:
            tools = tool_sets[conv["tools"]] if conv["tools"] else None
            try:
                text = call(tpl["text"], conv["messages"], tools, conv["add_generation_prompt"],
                            {**context, **conv["kwargs"]}, conv.get("documents"))
                results[conv["name"]] = {"text": text}
            except Exception as e:  # noqa: BLE001 - every failure is data here
                results[conv["name"]] = {"error": f"{type(e).__name__}: {e}"}
        n_err = sum("error" in r for r in results.values())
        print(f"{tpl['id']}: {len(results) - n_err} ok, {n_err} raised")
        entries.append({k: tpl[k] for k in ("id", "path", "select", "bos_token", "eos_token")} |
                       {"results": results})

    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "templates": entries}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
