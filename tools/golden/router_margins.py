#!/usr/bin/env python3
"""Add transformers' router margins to the mixture-of-experts golden fixtures.

For each case of <dir>/<name>/expected.json (mixtral, qwen2_moe, qwen3_moe) the model (float32,
eager, as make_golden.py records it) runs once over the prompt followed by the reference tokens,
with output_router_logits. At every position and MoE layer the routing margin is the gap between
the k-th and the (k+1)-th largest router logit (k = num_experts_per_tok): how far that token is
from choosing another expert. The fixture gets, per step, the smallest margin over the MoE layers
at the position whose logits the step compares (the last one):
    "router_margin": [float per step]
(Earlier positions route near ties too, more of them the longer the prompt: 1e-4 in a 320-token
prompt. Another choice there moves one token's hidden state, which reaches the compared position
only through attention; another choice at the compared position moves its output directly.)
The tests compare log-probabilities only on steps whose margin exceeds what BF16 rounding can move
a router logit (tests/support/golden.h); the tokens are compared on every step.

Run where torch + transformers are installed (the GPU test machine):
    python3 tools/golden/router_margins.py tests/golden/models
"""
import json
import os
import sys

import torch

MOE = ("mixtral", "qwen2_moe", "qwen3_moe")


@torch.no_grad()
def margins(model, k, prompt, tokens):
    ids = torch.tensor([list(prompt) + list(tokens)])
    out = model(input_ids=ids, output_router_logits=True)
    per_pos = None
    for layer_logits in out.router_logits:  # [seq, experts] per MoE layer
        top = torch.topk(layer_logits.float(), k + 1, dim=-1).values
        gap = top[:, k - 1] - top[:, k]
        per_pos = gap if per_pos is None else torch.minimum(per_pos, gap)
    # Step i's output is computed at position len(prompt) - 1 + i: its own routing decisions.
    p = len(prompt)
    return [float(per_pos[p - 1 + i]) for i in range(len(tokens))]


def main():
    from transformers import AutoModelForCausalLM
    root = sys.argv[1]
    for name in MOE:
        folder = os.path.join(root, name)
        path = os.path.join(folder, "expected.json")
        with open(path) as f:
            exp = json.load(f)
        with open(os.path.join(folder, "config.json")) as f:
            k = json.load(f)["num_experts_per_tok"]
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                     attn_implementation="eager")
        model.eval()
        for c in exp["cases"]:
            c["router_margin"] = margins(model, k, c["prompt_ids"], c["tokens"])
            print(name, len(c["prompt_ids"]), " ".join("%.4f" % m for m in c["router_margin"]),
                  flush=True)
        with open(path, "w") as f:
            json.dump(exp, f)


if __name__ == "__main__":
    main()
