#!/usr/bin/env python3
"""Build random-weight checkpoints of every supported architecture in Hugging Face hub layout and
record transformers' float32 greedy continuations with top-5 log-probabilities per step.

Run where torch + transformers are installed (the GPU test machine has them):
    python3 tools/golden/make_golden.py --out tests/golden/models

For each architecture it writes <out>/<name>/ with config.json, generation_config.json,
model.safetensors (or shards + model.safetensors.index.json), and expected.json:
    {"model": name, "max_new_tokens": N,
     "cases": [{"prompt_ids": [...], "tokens": [...], "top5": [[[id, logprob] x5] per step]}]}
The checkpoint tensors are written by this script under the hub names real checkpoints use
(MoE experts one by one), then loaded back with from_pretrained, which must report no missing or
unexpected keys -- so the fixture is exactly what transformers reads from a real checkpoint.
"""
import argparse
import json
import math
import os
import shutil

import torch
from safetensors.torch import save_file

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}

BASE = dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
            rms_norm_eps=1e-5, hidden_act="silu", bos_token_id=1, eos_token_id=2,
            tie_word_embeddings=False)

# name -> (model_type, architecture, extra config, storage dtype, shards)
MODELS = {
    "llama": ("llama", "LlamaForCausalLM",
              dict(rope_theta=500000.0, tie_word_embeddings=True,
                   rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                     high_freq_factor=4.0, original_max_position_embeddings=64)),
              "bf16", 1),
    "mistral": ("mistral", "MistralForCausalLM",
                dict(rope_theta=10000.0, sliding_window=32, head_dim=32), "f16", 2),
    "qwen2": ("qwen2", "Qwen2ForCausalLM",
              dict(rope_theta=1000000.0, use_sliding_window=False, sliding_window=None,
                   max_window_layers=2), "f32", 1),
    "qwen3": ("qwen3", "Qwen3ForCausalLM",
              dict(rope_theta=1000000.0, head_dim=64, attention_bias=False), "bf16", 1),
    "mixtral": ("mixtral", "MixtralForCausalLM",
                dict(rope_theta=1000000.0, num_local_experts=4, num_experts_per_tok=2,
                     intermediate_size=128, sliding_window=None), "bf16", 1),
    "qwen2_moe": ("qwen2_moe", "Qwen2MoeForCausalLM",
                  dict(rope_theta=1000000.0, num_hidden_layers=3, num_experts=8,
                       num_experts_per_tok=2, moe_intermediate_size=64,
                       shared_expert_intermediate_size=128, norm_topk_prob=False,
                       decoder_sparse_step=1, mlp_only_layers=[1], use_sliding_window=False,
                       sliding_window=None, max_window_layers=3), "bf16", 1),
    "qwen3_moe": ("qwen3_moe", "Qwen3MoeForCausalLM",
                  dict(rope_theta=1000000.0, head_dim=32, num_experts=8, num_experts_per_tok=2,
                       moe_intermediate_size=64, norm_topk_prob=True, decoder_sparse_step=1,
                       mlp_only_layers=[], use_sliding_window=False, sliding_window=None,
                       max_window_layers=2), "bf16", 1),
}

PROMPT_LENGTHS = [1, 5, 17, 64, 150, 320]
MAX_NEW_TOKENS = 16


def rand(gen, shape, std):
    return torch.randn(*shape, generator=gen, dtype=torch.float32) * std


def norm_weight(gen, n):
    return 1.0 + 0.2 * torch.randn(n, generator=gen, dtype=torch.float32)


def linear(gen, out_f, in_f):
    # Larger than HF's 0.02 init so the output distributions are peaked: near-uniform logits
    # would make greedy tokens hinge on rounding noise.
    return rand(gen, (out_f, in_f), 1.0 / math.sqrt(in_f))


def ffn(gen, sd, prefix, hidden, inter, names=("gate_proj", "up_proj", "down_proj")):
    g, u, d = names
    sd[f"{prefix}.{g}.weight"] = linear(gen, inter, hidden)
    sd[f"{prefix}.{u}.weight"] = linear(gen, inter, hidden)
    sd[f"{prefix}.{d}.weight"] = linear(gen, hidden, inter)


def is_moe_layer(cfg, i):
    n = cfg.get("num_experts", cfg.get("num_local_experts", 0)) or 0
    if n == 0 or i in cfg.get("mlp_only_layers", []):
        return False
    return (i + 1) % cfg.get("decoder_sparse_step", 1) == 0


def build_state_dict(mtype, cfg, seed):
    gen = torch.Generator().manual_seed(seed)
    H, V = cfg["hidden_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or H // nh
    # Logit scale ~2: peaked enough that greedy tokens are robust, flat enough to be informative.
    tied = cfg.get("tie_word_embeddings")
    sd = {"model.embed_tokens.weight": rand(gen, (V, H), 2.0 / math.sqrt(H) if tied else 1.0)}
    bias = mtype in ("qwen2", "qwen2_moe")
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}"
        sd[f"{p}.input_layernorm.weight"] = norm_weight(gen, H)
        sd[f"{p}.post_attention_layernorm.weight"] = norm_weight(gen, H)
        for name, rows in (("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
            sd[f"{p}.self_attn.{name}.weight"] = linear(gen, rows, H)
            if bias:
                sd[f"{p}.self_attn.{name}.bias"] = rand(gen, (rows,), 0.5)
        sd[f"{p}.self_attn.o_proj.weight"] = linear(gen, H, nh * hd)
        if mtype in ("qwen3", "qwen3_moe"):
            sd[f"{p}.self_attn.q_norm.weight"] = norm_weight(gen, hd)
            sd[f"{p}.self_attn.k_norm.weight"] = norm_weight(gen, hd)
        if mtype == "mixtral":
            E = cfg["num_local_experts"]
            sd[f"{p}.block_sparse_moe.gate.weight"] = linear(gen, E, H)
            for e in range(E):
                ffn(gen, sd, f"{p}.block_sparse_moe.experts.{e}", H, cfg["intermediate_size"],
                    ("w1", "w3", "w2"))
        elif is_moe_layer(cfg, i):
            E = cfg["num_experts"]
            sd[f"{p}.mlp.gate.weight"] = linear(gen, E, H)
            for e in range(E):
                ffn(gen, sd, f"{p}.mlp.experts.{e}", H, cfg["moe_intermediate_size"])
            if cfg.get("shared_expert_intermediate_size"):
                ffn(gen, sd, f"{p}.mlp.shared_expert", H, cfg["shared_expert_intermediate_size"])
                sd[f"{p}.mlp.shared_expert_gate.weight"] = linear(gen, 1, H)
        else:
            ffn(gen, sd, f"{p}.mlp", H, cfg["intermediate_size"])
    sd["model.norm.weight"] = norm_weight(gen, H)
    if not cfg.get("tie_word_embeddings"):
        sd["lm_head.weight"] = rand(gen, (V, H), 2.0 / math.sqrt(H))
    return sd


def save_checkpoint(folder, sd, dtype, shards):
    sd = {k: v.to(dtype).contiguous() for k, v in sd.items()}
    meta = {"format": "pt"}
    if shards == 1:
        save_file(sd, os.path.join(folder, "model.safetensors"), metadata=meta)
        return
    names = list(sd.keys())
    per = math.ceil(len(names) / shards)
    weight_map, total = {}, 0
    for s in range(shards):
        part = names[s * per:(s + 1) * per]
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        save_file({k: sd[k] for k in part}, os.path.join(folder, fname), metadata=meta)
        for k in part:
            weight_map[k] = fname
            total += sd[k].numel() * sd[k].element_size()
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


@torch.no_grad()
def greedy_reference(model, prompt, n):
    ids = list(prompt)
    tokens, top5 = [], []
    for _ in range(n):
        logits = model(input_ids=torch.tensor([ids])).logits[0, -1].float()
        lp = torch.log_softmax(logits, dim=-1)
        vals, idx = torch.topk(lp, 5)
        tok = int(torch.argmax(logits))
        tokens.append(tok)
        top5.append([[int(i), float(v)] for i, v in zip(idx, vals)])
        ids.append(tok)
    return tokens, top5


def make_model(name, out_dir, seed):
    from transformers import AutoModelForCausalLM
    mtype, arch, extra, dtype, shards = MODELS[name]
    cfg = dict(BASE)
    cfg.update(extra)
    cfg.update(model_type=mtype, architectures=[arch], torch_dtype={"bf16": "bfloat16",
               "f16": "float16", "f32": "float32"}[dtype])
    folder = os.path.join(out_dir, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2, "do_sample": False}, f, indent=2)
    save_checkpoint(folder, build_state_dict(mtype, cfg, seed), DTYPES[dtype], shards)

    model, info = AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        raise SystemExit(f"{name}: transformers did not load the hub layout cleanly: {bad}")
    model.eval()
    gen = torch.Generator().manual_seed(seed + 1)
    cases = []
    for L in PROMPT_LENGTHS:
        prompt = torch.randint(3, cfg["vocab_size"], (L,), generator=gen).tolist()
        tokens, top5 = greedy_reference(model, prompt, MAX_NEW_TOKENS)
        cases.append({"prompt_ids": prompt, "tokens": tokens, "top5": top5})
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump({"model": name, "model_type": mtype, "max_new_tokens": MAX_NEW_TOKENS,
                   "transformers": __import__("transformers").__version__,
                   "torch": torch.__version__, "cases": cases}, f)
    print(f"{name}: ok ({sum(p.numel() for p in model.parameters())} params)", flush=True)


CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}")

TRAIN_TEXT = """InferDesk runs open language models on your own computer. It loads a model folder,
tokenizes the prompt, applies the chat template and streams the reply token by token.
The quick brown fox jumps over the lazy dog. Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 1234.
def main():\n    print("hello, world")\n    return 0\n
Paged attention stores keys and values in blocks of sixteen tokens; continuous batching mixes
prefill chunks with decode steps. Hello! How are you today? I am fine, thank you.
"""


def make_tiny_chat(out_dir, seed):
    """A small qwen2 model with a real byte-level BPE tokenizer (trained by HF tokenizers) and a
    ChatML template: the fixture for end-to-end text tests (CLI --chat, GUI)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    folder = os.path.join(out_dir, "tiny-chat")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=480, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([TRAIN_TEXT] * 20, trainer)
    tok.save(os.path.join(folder, "tokenizer.json"))
    vocab = tok.get_vocab_size()
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None,
                   "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                   "chat_template": CHATML, "model_max_length": 4096}, f, indent=2)
    cfg = dict(BASE)
    cfg.update(model_type="qwen2", architectures=["Qwen2ForCausalLM"], torch_dtype="bfloat16",
               vocab_size=vocab, bos_token_id=None, eos_token_id=tok.token_to_id("<|im_end|>"),
               rope_theta=1000000.0, use_sliding_window=False, sliding_window=None,
               max_window_layers=2)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": [cfg["eos_token_id"], 0], "do_sample": False}, f, indent=2)
    save_checkpoint(folder, build_state_dict("qwen2", cfg, seed), torch.bfloat16, 1)
    print(f"tiny-chat: ok (vocab {vocab})", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    for i, name in enumerate(MODELS):
        if args.only and name not in args.only:
            continue
        make_model(name, args.out, 1000 + i)
    if not args.only or "tiny-chat" in args.only:
        make_tiny_chat(args.out, 2000)


if __name__ == "__main__":
    main()
