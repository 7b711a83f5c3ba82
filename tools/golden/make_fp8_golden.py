#!/usr/bin/env python3
"""FP8 golden fixtures: every architecture's BF16 golden checkpoint (tests/golden/models/<name>)
quantized in both FP8 formats the Hub publishes, with the reference's greedy tokens and top-5
log-probabilities.

    python3 tools/golden/make_fp8_golden.py --src tests/golden/models --out tests/golden/models-fp8

<name>-channel: compressed-tensors "float-quantized", E4M3 weights with per-channel scales and
  dynamic per-token activations (the FP8_DYNAMIC scheme), packed by this script from the
  compressed-tensors definition: scale = amax(row) / 448 stored in the checkpoint's dtype,
  weight = clamp(w / scale, -448, 448) cast to float8_e4m3fn; lm_head and MoE routers kept.
<name>-block: block-wise FP8 (quant_method "fp8", 128x128 weight blocks, 1x128 dynamic activation
  groups) as transformers' FineGrainedFP8 integration quantizes and saves it (its own code packs
  the checkpoint: model.save_pretrained after quantizing on load), each weight checked against the
  definition and packed here where it differs; where it cannot run (no CUDA), all packed here.
The reference forward is float32 torch with every quantized linear computed by the format's
definition: activations quantized per token (or 128-group) to E4M3 with scale amax / 448, the
product of the dequantized values in float32, times both scales.
"""
import argparse
import json
import os
import re
import shutil

import torch
from safetensors.torch import load_file, save_file

from make_golden import greedy_reference as greedy  # the BF16 fixtures' greedy loop

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
MIN_SCALE = 1.0 / (448.0 * 512.0)
PROJ = re.compile(r".*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj|w1|w2|w3)$")
MAX_NEW_TOKENS = 16


def quant_act(x, group):
    """x [T, K] (float32, or float64 for the precision check) -> (dequantized codes [T, G, g],
    scales [T, G, 1]) per the definition, in x's dtype; a last partial group is padded with zeros
    (which change neither its amax nor its products)."""
    T, K = x.shape
    g = K if group is None else group
    pad = (-K) % g
    xs = torch.nn.functional.pad(x, (0, pad)).reshape(T, -1, g)
    amax = xs.abs().amax(dim=-1, keepdim=True)
    s = torch.clamp(amax / FP8_MAX, min=MIN_SCALE)
    q = torch.clamp(xs * (1.0 / s), -FP8_MAX, FP8_MAX).float().to(FP8).to(x.dtype)
    return q, s


class DefinitionLinear(torch.nn.Module):
    """y = sum over groups of s_x * s_w * (fp8(x) . fp8(w)), in the input's dtype (float32)."""

    def __init__(self, codes, scales, bias, block):
        super().__init__()
        self.w = codes.float()
        self.s = scales.float()
        self.bias = None if bias is None else bias.float()
        self.block = block

    def forward(self, x):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        w, sw = self.w.to(x.dtype), self.s.to(x.dtype)
        N, K = w.shape
        if self.block is None:
            q, s = quant_act(x2, None)
            y = (q[:, 0, :] @ w.T) * s[:, 0, :] * sw.reshape(1, N)
        else:
            bn, bk = self.block
            q, s = quant_act(x2, bk)  # [T, G, bk], [T, G, 1]
            G = q.shape[1]
            ws = sw.reshape(-(-N // bn), G).repeat_interleave(bn, dim=0)[:N]  # [N, G]
            wg = torch.nn.functional.pad(w, (0, G * bk - K)).reshape(N, G, bk)
            y = torch.einsum("tgk,ngk->tgn", q, wg)
            y = (y * s * ws.T.unsqueeze(0)).sum(dim=1)
        if self.bias is not None:
            y = y + self.bias.to(x.dtype)
        return y.reshape(*shape[:-1], N)


def replace_linears(model, sd, scale_suffix, block):
    """Every nn.Linear whose checkpoint weight is FP8 becomes a DefinitionLinear; returns the count."""
    n = 0
    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if isinstance(child, torch.nn.Linear) and f"{full}{scale_suffix}" in sd:
                setattr(mod, child_name, DefinitionLinear(sd[f"{full}.weight"], sd[f"{full}{scale_suffix}"],
                                                           sd.get(f"{full}.bias"), block))
                n += 1
    return n


EXPERT = re.compile(r"model\.layers\.(\d+)\.(?:mlp|block_sparse_moe)\.experts\.(\d+)\.(\w+)\.weight$")


def patch_experts(model, sd, scale_suffix, block):
    """transformers keeps a MoE layer's experts as fused 3-D parameters: its experts module's
    forward is replaced by one over the checkpoint's per-expert FP8 linears. Returns the count."""
    per, n = {}, 0
    for k in sd:
        m = EXPERT.match(k)
        if m and f"{k[:-7]}{scale_suffix}" in sd:
            lin = DefinitionLinear(sd[k], sd[f"{k[:-7]}{scale_suffix}"], None, block)
            per.setdefault(int(m[1]), {}).setdefault(int(m[2]), {})[m[3]] = lin
            n += 1
    for name, mod in model.named_modules():
        if not type(mod).__name__.endswith("Experts") or not re.search(r"layers\.(\d+)\.", name):
            continue
        experts = per[int(re.search(r"layers\.(\d+)\.", name)[1])]

        def forward(hidden_states, top_k_index, top_k_weights, experts=experts):
            out = torch.zeros_like(hidden_states)
            for e, lin in experts.items():
                tok, slot = (top_k_index == e).nonzero(as_tuple=True)
                if tok.numel() == 0:
                    continue
                g, u, d = (lin.get("gate_proj") or lin["w1"], lin.get("up_proj") or lin["w3"],
                           lin.get("down_proj") or lin["w2"])
                x = hidden_states[tok]
                y = d(torch.nn.functional.silu(g(x)) * u(x)) * top_k_weights[tok, slot, None]
                out.index_add_(0, tok, y.to(out.dtype))
            return out

        mod.forward = forward
    return n


def read_src(src):
    sd = {}
    for f in sorted(os.listdir(src)):
        if f.endswith(".safetensors"):
            sd.update(load_file(os.path.join(src, f)))
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    return sd, cfg


def ct_config(ignored):
    w = {"actorder": None, "block_structure": None, "dynamic": False, "group_size": None, "num_bits": 8,
         "observer": "minmax", "observer_kwargs": {}, "strategy": "channel", "symmetric": True, "type": "float"}
    a = {"actorder": None, "block_structure": None, "dynamic": True, "group_size": None, "num_bits": 8,
         "observer": None, "observer_kwargs": {}, "strategy": "token", "symmetric": True, "type": "float"}
    return {"config_groups": {"group_0": {"input_activations": a, "output_activations": None,
                                          "targets": ["Linear"], "weights": w}},
            "format": "float-quantized", "global_compression_ratio": None, "ignore": ignored,
            "kv_cache_scheme": None, "quant_method": "compressed-tensors", "quantization_status": "compressed"}


def pack_channel(sd, cfg):
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(cfg.get("torch_dtype"), torch.float32)
    out, ignored = {}, []
    for k, v in sd.items():
        mod = k[:-len(".weight")] if k.endswith(".weight") else None
        if mod and v.dim() == 2 and PROJ.match(mod):
            w = v.float()
            scale = (w.abs().amax(dim=1, keepdim=True) / FP8_MAX).to(dtype)
            scale = torch.where(scale == 0, torch.ones_like(scale), scale)
            out[k] = torch.clamp(w / scale.float(), -FP8_MAX, FP8_MAX).to(FP8)
            out[f"{mod}.weight_scale"] = scale
        else:
            out[k] = v
            if mod and v.dim() == 2 and not mod.endswith("embed_tokens"):
                ignored.append(mod)  # lm_head, routers: Linear modules kept unquantized
    return out, ct_config(ignored)


def block_quantize(w):
    """[N, K] float32 -> (E4M3 codes [N, K], float32 scales [ceil(N/128), ceil(K/128)])."""
    N, K = w.shape
    pn, pk = (-N) % 128, (-K) % 128
    wp = torch.nn.functional.pad(w, (0, pk, 0, pn)).reshape((N + pn) // 128, 128, (K + pk) // 128, 128)
    s = (wp.abs().amax(dim=(1, 3)) / FP8_MAX).clamp(min=1e-12)
    q = torch.clamp(wp / s[:, None, :, None], -FP8_MAX, FP8_MAX).to(FP8)
    return q.reshape(N + pn, K + pk)[:N, :K].contiguous(), s.float()


def pack_block_here(sd):
    out = {}
    for k, v in sd.items():
        mod = k[:-len(".weight")] if k.endswith(".weight") else None
        if mod and v.dim() == 2 and PROJ.match(mod):
            out[k], out[f"{mod}.weight_scale_inv"] = block_quantize(v.float())
        else:
            out[k] = v
    return out


def repair_block(qsd, src_sd):
    """transformers' packing checked tensor by tensor against the definition applied to the BF16
    weights it quantized: where its scales are not the blocks' amax / 448 or its codes not w / s
    (on these small shapes it leaves the scales of a partial 128-row block unset and stores
    other blocks' amax rounded), that weight is packed here instead. Returns the repaired state
    dict and the names repacked."""
    out, repacked = dict(qsd), []
    for k, v in src_sd.items():
        mod = k[:-len(".weight")] if k.endswith(".weight") else None
        if not (mod and v.dim() == 2 and PROJ.match(mod)) or k not in qsd:
            continue
        q, s = block_quantize(v.to(torch.bfloat16).float())
        theirs = qsd.get(f"{mod}.weight_scale_inv")
        ok = theirs is not None and theirs.shape == s.shape and torch.allclose(theirs.float(), s, rtol=1e-5, atol=0)
        ok = ok and (qsd[k].view(torch.uint8) == q.view(torch.uint8)).float().mean() > 0.99
        if not ok:
            out[k], out[f"{mod}.weight_scale_inv"] = q, s
            repacked.append(mod)
    return out, repacked


def pack_block_transformers(src, folder):
    """transformers quantizes the BF16 folder on load and saves it; returns its state dict."""
    from transformers import AutoModelForCausalLM, FineGrainedFP8Config
    qc = FineGrainedFP8Config(weight_block_size=(128, 128))
    model = AutoModelForCausalLM.from_pretrained(src, quantization_config=qc, dtype=torch.bfloat16, device_map="cuda")
    model.save_pretrained(folder)
    sd = {}
    for f in os.listdir(folder):
        if f.endswith(".safetensors"):
            sd.update(load_file(os.path.join(folder, f)))
    return sd


def write_folder(folder, sd, cfg, src):
    os.makedirs(folder, exist_ok=True)
    save_file({k: v.contiguous() for k, v in sd.items()}, os.path.join(folder, "model.safetensors"),
              metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shutil.copy(os.path.join(src, "generation_config.json"), folder)


def take_unquantized(model, sd):
    """The packed folder's own unquantized tensors (norms, embeddings, lm_head, biases) replace the
    source's: transformers saves them in the dtype it quantized from (BF16), not the source's F16
    or F32, and the engine runs what the folder holds. Returns how many were taken."""
    own = model.state_dict()
    taken = {k: v.float() for k, v in sd.items() if k in own and v.dtype != FP8 and own[k].shape == v.shape}
    model.load_state_dict(taken, strict=False)
    return len(taken)


def teacher_forced(model, prompt, tokens):
    ids = torch.tensor([list(prompt) + list(tokens)])
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=ids).logits[0].double(), dim=-1)
    return [float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(tokens)]


def reference(src, name, sd, scale_suffix, block, src_expected):
    """The BF16 source model in float32 (transformers maps its names and fuses its experts) with
    the folder's unquantized tensors, its FP8 linears and experts then computed by the definition
    from the packed checkpoint `sd`. Also returns how far the chosen tokens' log-probabilities move
    when the same definition runs in float64: float rounding alone can put an activation on the
    other side of an E4M3 rounding boundary, and this bounds what two float32 implementations of
    the definition can be expected to agree to."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation="eager")
    taken = take_unquantized(model, sd)
    used = replace_linears(model, sd, scale_suffix, block) + patch_experts(model, sd, scale_suffix, block)
    packed = sum(1 for k in sd if k.endswith(scale_suffix))
    if used != packed:
        raise SystemExit(f"{name}: the reference uses {used} of the {packed} FP8 weights")
    model.eval()
    cases = []
    for c in src_expected["cases"]:
        tokens, top5 = greedy(model, c["prompt_ids"], MAX_NEW_TOKENS)
        cases.append({"prompt_ids": c["prompt_ids"], "tokens": tokens, "top5": top5})
    model.to(torch.float64)
    spread = max(abs(a - c["top5"][i][0][1]) for c in cases
                 for i, a in enumerate(teacher_forced(model, c["prompt_ids"], c["tokens"])))
    print(f"{name}: {taken} unquantized tensors from the folder; float64 moves log-probs by {spread:.4f}", flush=True)
    return cases, spread


def complete_block(sd):
    """Whether every projection weight is FP8 with its block scales (transformers leaves shapes
    its kernels do not take in BF16)."""
    for k, v in sd.items():
        mod = k[:-len(".weight")] if k.endswith(".weight") else None
        if mod and v.dim() == 2 and PROJ.match(mod) and (v.dtype != FP8 or f"{mod}.weight_scale_inv" not in sd):
            return False
    return True


def make(name, src_root, out_root, block_by_transformers):
    src = os.path.join(src_root, name)
    sd, cfg = read_src(src)
    with open(os.path.join(src, "expected.json")) as f:
        src_expected = json.load(f)
    report = {}
    for variant in ("channel", "block"):
        folder = os.path.join(out_root, f"{name}-{variant}")
        shutil.rmtree(folder, ignore_errors=True)
        packer = "this script (the format's definition)"
        if variant == "channel":
            qsd, qc = pack_channel(sd, cfg)
            write_folder(folder, qsd, dict(cfg, quantization_config=qc), src)
            suffix, block = ".weight_scale", None
        else:
            qsd = None
            if block_by_transformers:
                try:
                    qsd = pack_block_transformers(src, folder)
                    packer = "transformers FineGrainedFP8 " + __import__("transformers").__version__
                    if not complete_block(qsd):
                        raise ValueError("it left projections unquantized")
                    qsd, repacked = repair_block(qsd, sd)
                    if repacked:
                        packer += (f"; {len(repacked)} of its weights re-packed by this script, their codes or"
                                   " scales not the definition's: " + ", ".join(repacked))
                        for f in os.listdir(folder):
                            if f.endswith(".safetensors") or f.endswith(".safetensors.index.json"):
                                os.remove(os.path.join(folder, f))
                        save_file({k: v.contiguous() for k, v in qsd.items()},
                                  os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
                except Exception as e:  # shapes its kernels refuse: packed from the definition instead
                    print(f"{name}-block: transformers could not quantize it ({e}); packing here", flush=True)
                    shutil.rmtree(folder, ignore_errors=True)
                    qsd = None
            if qsd is None:
                qsd = pack_block_here(sd)
                qc = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                      "weight_block_size": [128, 128]}
                write_folder(folder, qsd, dict(cfg, quantization_config=qc), src)
            suffix, block = ".weight_scale_inv", (128, 128)
        cases, spread = reference(src, name, qsd, suffix, block, src_expected)
        with open(os.path.join(folder, "expected.json"), "w") as f:
            json.dump({"model": f"{name}-{variant}", "model_type": src_expected["model_type"],
                       "max_new_tokens": MAX_NEW_TOKENS, "packed_by": packer,
                       "transformers": __import__("transformers").__version__, "torch": torch.__version__,
                       "float64_logprob_spread": spread, "cases": cases}, f)
        same = sum(a["tokens"] == b["tokens"] for a, b in zip(cases, src_expected["cases"]))
        report[variant] = f"{same}/{len(cases)} cases with the BF16 tokens; packed by {packer}"
        print(f"{name}-{variant}: {report[variant]}", flush=True)
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--no-transformers-block", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = [n for n in sorted(os.listdir(args.src)) if os.path.exists(os.path.join(args.src, n, "expected.json"))
             and not n.startswith("tiny-chat")]
    for n in names:
        if args.only and n not in args.only:
            continue
        make(n, args.src, args.out, torch.cuda.is_available() and not args.no_transformers_block)


if __name__ == "__main__":
    main()
