#!/usr/bin/env python3
"""Hugging Face transformers `generate` on random BF16 weights of a published shape
(resources/shapes/<name>.json): the plain-transformers baseline the CUDA issues quote (their
figures: Llama-3.1-8B 12.6 tok/s at batch 1; Qwen3-30B-A3B 10 and 243 tok/s at batch 1 and 32),
measured in the same run as `inferdesk-cli bench` (tools/gpu/run_all.sh, part `baseline`).

The model is built from the shape's config directly on the GPU (no checkpoint), greedy, a
prompt of --prompt random tokens per sequence, exactly --steps new tokens (min = max, EOS
ignored). Decode tokens/s = batch * (steps - 1) / (time of generate - time of a 1-token generate
of the same prompts), i.e. prefill excluded. Prints one JSON line.

    python3 tools/bench/hf_generate_baseline.py --shape qwen3-30b-a3b --batch 1 --steps 64

First run on the H200 2026-11-30 (docs/PERF.md): Qwen3-30B-A3B 10 and 229 tok/s at batch 1 and 32.
"""
import argparse
import json
import os
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    from transformers import AutoConfig, AutoModelForCausalLM
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="qwen3-30b-a3b")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--steps", type=int, default=64)
    a = ap.parse_args()
    path = os.path.join(ROOT, "resources", "shapes", a.shape + ".json")
    cfg_dict = json.load(open(path))
    cfg = AutoConfig.for_model(**cfg_dict)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    model.eval()
    ids = torch.randint(10, cfg.vocab_size - 10, (a.batch, a.prompt), device="cuda")
    mask = torch.ones_like(ids)

    def run(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                             do_sample=False, pad_token_id=0)
        torch.cuda.synchronize()
        assert out.shape[1] == a.prompt + n, out.shape
        return time.perf_counter() - t0

    with torch.no_grad():
        run(2)  # warm-up
        t1 = run(1)
        tn = run(a.steps)
    tps = a.batch * (a.steps - 1) / max(tn - t1, 1e-9)
    print(json.dumps({"baseline": "transformers generate", "shape": a.shape, "batch": a.batch,
                      "decode_tokens_per_s": tps, "prefill_s": t1, "steps": a.steps,
                      "transformers": __import__("transformers").__version__,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
