#!/usr/bin/env python3
"""Hugging Face reference data for core/tokenizer (run on the GPU machine, which has transformers
and tokenizers; nothing here needs a GPU).

For every tokenizer folder it loads AutoTokenizer.from_pretrained(folder) (what users of the model
get) and writes <out>/<name>.jsonl:
  line 1: {"meta": ...}  transformers class, versions, special tokens, the backend pipeline as
          transformers configured it (tokenizer.json minus vocab/merges, plus their sizes/hashes)
  then one {"corpus": i, ...} per corpus line: ids (add_special_tokens=False), ids_special
          (tok(text)["input_ids"]), tokens, and decodes of ids_special with/without skipping
  then {"random": i, ...} id sequences (random ids, byte tokens, corpus slices) with their decodes
  then {"patho": name, "count", "fnv1a64", "head", "tail"} for pathological inputs (see fnv1a64)
  then {"llamacpp": file, "ids": [[...], ...]} for matching llama.cpp vocab-test inputs
With --bench FILE it also times tok.backend_tokenizer.encode(text) single-threaded (set
TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 in the environment) and writes bench.json.

Usage: make_reference.py --tokenizers DIR --corpus corpus.jsonl [--vocab-tests DIR]
                         [--bench FILE] [--bench-only] --out OUTDIR
"""
import argparse
import hashlib
import json
import os
import platform
import random
import statistics
import sys
import time
import traceback

FOLDERS = [
    "GPT-2", "Llama-2-7b-chat-hf", "Meta-Llama-3-8B-Instruct", "Mistral-7B-Instruct-v0.3",
    "Mixtral-8x7B-v0.1", "Phi-3-mini-4k-instruct", "SmolLM-135M", "Qwen2.5-Instruct",
]
# llama.cpp vocab-test inputs whose vocabulary is one of the folders above.
LLAMACPP = {
    "ggml-vocab-llama-spm.gguf": "Llama-2-7b-chat-hf",
    "ggml-vocab-llama-bpe.gguf": "Meta-Llama-3-8B-Instruct",
    "ggml-vocab-gpt-2.gguf": "GPT-2",
    "ggml-vocab-phi-3.gguf": "Phi-3-mini-4k-instruct",
    "ggml-vocab-qwen2.gguf": "Qwen2.5-Instruct",
}
PATHO = {
    "digits_100k": "1" * 100000,
    "digits_mixed_100k": "1234567890" * 10000,
    "spaces_100k_x": " " * 100000 + "x",
    "newlines_50k": "\n" * 50000,
    "emoji_20k": "\U0001F600" * 20000,
    "zwj_family_5k": "\U0001F468\u200d\U0001F469\u200d\U0001F467" * 5000,
    "word_1m": "a" * 1000000,
    "word_mixed_200k": "ab" * 100000,
}


def sha(obj):
    return hashlib.sha256(json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()).hexdigest()


def fnv1a64(ids):
    """FNV-1a (64-bit) over the ids as little-endian uint32 bytes (the golden test computes the same)."""
    h = 0xcbf29ce484222325
    for i in ids:
        for b in int(i).to_bytes(4, "little"):
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def patho_record(name, ids, seconds):
    return {"patho": name, "count": len(ids), "fnv1a64": fnv1a64(ids), "head": ids[:32], "tail": ids[-32:],
            "seconds": seconds}


def backend_dump(tok):
    j = json.loads(tok.backend_tokenizer.to_str())
    model = j.get("model", {})
    vocab = model.pop("vocab", None)
    merges = model.pop("merges", None)
    if isinstance(vocab, dict):
        model["vocab_size_"] = len(vocab)
        model["vocab_sha_"] = sha(sorted(vocab.items(), key=lambda kv: kv[1]))
    if merges is not None:
        pairs = [m.split(" ", 1) if isinstance(m, str) else list(m) for m in merges]
        model["merges_count_"] = len(pairs)
        model["merges_sha_"] = sha(pairs)
        model["merges_head_"] = pairs[:3]
    return j


def load(folder):
    from transformers import AutoTokenizer
    try:
        return AutoTokenizer.from_pretrained(folder), "AutoTokenizer"
    except Exception as e:  # e.g. no tokenizer_config.json: plain tokenizer.json loader
        from transformers import PreTrainedTokenizerFast
        print(f"  AutoTokenizer failed ({type(e).__name__}: {e}); using PreTrainedTokenizerFast")
        return PreTrainedTokenizerFast(tokenizer_file=os.path.join(folder, "tokenizer.json")), \
            "PreTrainedTokenizerFast(tokenizer_file)"


def meta(tok, loader):
    import tokenizers
    import transformers
    attrs = {}
    for a in ["bos_token", "eos_token", "unk_token", "pad_token", "bos_token_id", "eos_token_id",
              "unk_token_id", "pad_token_id", "vocab_size", "clean_up_tokenization_spaces",
              "add_bos_token", "add_eos_token", "split_special_tokens", "add_prefix_space",
              "legacy", "all_special_tokens", "all_special_ids", "model_max_length"]:
        try:
            v = getattr(tok, a)
            json.dumps(v)
            attrs[a] = v
        except Exception as e:
            attrs[a] = f"<{type(e).__name__}>"
    attrs["len"] = len(tok)
    return {"class": type(tok).__name__, "loader": loader, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "attrs": attrs, "backend": backend_dump(tok)}


def random_cases(tok, corpus_ids, rng):
    n = len(tok)
    cases = []
    for _ in range(25):
        cases.append([rng.randrange(n) for _ in range(rng.randint(1, 12))])
    byte_ids = [i for t, i in tok.get_vocab().items() if len(t) == 6 and t.startswith("<0x")]
    pool = byte_ids or list(range(min(n, 300)))
    for _ in range(15):
        seq = [rng.choice(pool) for _ in range(rng.randint(1, 8))]
        seq.insert(rng.randint(0, len(seq)), rng.randrange(n))
        cases.append(seq)
    long_lines = [ids for ids in corpus_ids if len(ids) >= 4]
    for _ in range(20):
        ids = rng.choice(long_lines)
        a = rng.randrange(len(ids))
        b = rng.randrange(a + 1, len(ids) + 1)
        cases.append(ids[a:b])
    return cases


def reference_for(name, folder, corpus, vocab_tests, out_dir):
    tok, loader = load(folder)
    rng = random.Random(1234)
    path = os.path.join(out_dir, name + ".jsonl")
    with open(path, "w", encoding="utf-8") as f:
        def w(obj):
            f.write(json.dumps(obj, ensure_ascii=True) + "\n")
        w({"meta": meta(tok, loader)})
        all_ids = []
        for i, text in enumerate(corpus):
            ids = tok.encode(text, add_special_tokens=False)
            ids_sp = tok(text)["input_ids"]
            all_ids.append(ids_sp)
            w({"corpus": i, "ids": ids, "ids_special": ids_sp,
               "tokens": tok.convert_ids_to_tokens(ids_sp),
               "decode": tok.decode(ids_sp, skip_special_tokens=False),
               "decode_skip": tok.decode(ids_sp, skip_special_tokens=True)})
        for i, ids in enumerate(random_cases(tok, all_ids, rng)):
            w({"random": i, "ids": ids, "decode": tok.decode(ids, skip_special_tokens=False),
               "decode_skip": tok.decode(ids, skip_special_tokens=True)})
        for pname, text in PATHO.items():
            t0 = time.perf_counter()
            ids = tok.encode(text, add_special_tokens=False)
            w(patho_record(pname, ids, round(time.perf_counter() - t0, 3)))
        for fname, tname in LLAMACPP.items():
            inp = os.path.join(vocab_tests or "", fname + ".inp")
            if tname != name or not vocab_tests or not os.path.exists(inp):
                continue
            with open(inp, encoding="utf-8") as g:
                texts = g.read().split("\n__ggml_vocab_test__\n")
            w({"llamacpp": fname, "texts": len(texts),
               "ids": [tok.encode(t, add_special_tokens=False) for t in texts]})
    print(f"  wrote {path}")


def bench(names, tok_dir, text_path, out_dir, runs=5):
    from transformers import AutoTokenizer  # noqa: F401 (same loader as the reference)
    with open(text_path, encoding="utf-8") as f:
        text = f.read()
    nbytes = len(text.encode("utf-8"))
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except Exception:
        pass
    result = {"file_bytes": nbytes, "cpu": cpu, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "env": {k: os.environ.get(k) for k in ["TOKENIZERS_PARALLELISM", "RAYON_NUM_THREADS"]},
              "tokenizers": {}}
    for name in names:
        tok, _ = load(os.path.join(tok_dir, name))
        backend = tok.backend_tokenizer
        n_tokens = len(backend.encode(text, add_special_tokens=False).ids)  # warm-up
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            backend.encode(text, add_special_tokens=False)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        result["tokenizers"][name] = {"tokens": n_tokens, "median_s": med, "times_s": times,
                                      "mb_per_s": nbytes / med / 1e6}
        print(f"  bench {name}: {n_tokens} tokens, median {med:.4f}s, {nbytes / med / 1e6:.2f} MB/s")
    with open(os.path.join(out_dir, "bench.json"), "w") as f:
        json.dump(result, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizers", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--vocab-tests")
    ap.add_argument("--bench")
    ap.add_argument("--bench-only", action="store_true")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(args.corpus, encoding="utf-8") as f:
        corpus = [json.loads(line) for line in f if line.strip()]
    names = [n for n in FOLDERS if os.path.isdir(os.path.join(args.tokenizers, n))]
    failed = 0
    if not args.bench_only:
        for name in names:
            print(f"{name}:")
            try:
                reference_for(name, os.path.join(args.tokenizers, name), corpus, args.vocab_tests,
                              args.out)
            except Exception:
                failed += 1
                traceback.print_exc()
    if args.bench:
        bench(names, args.tokenizers, args.bench, args.out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
