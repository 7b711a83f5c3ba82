#!/usr/bin/python3
"""Integer-weight fixtures packed by the reference libraries' own code (issue 28).

Runs on Debian's python3-torch 1.13 + python3-numpy (no transformers, no PyPI). The packers are the
real source files of the repositories below, read with `git show COMMIT:PATH` from local clones and
executed with stub modules standing in for their heavy imports; nothing here packs bits itself.

  AWQ:   github.com/casper-hansen/AutoAWQ @ 88e4c76b20755db275574e6a03c83c84ba3bece5
         awq/modules/linear/gemm.py  WQLinear_GEMM.from_linear     (packs qweight / qzeros)
         awq/utils/packing_utils.py  dequantize_gemm               (the reference dequantizer)
  GPTQ:  github.com/AutoGPTQ/AutoGPTQ @ 9f7d37072917ab3a7545835f23e808294a542153
         auto_gptq/nn_modules/qlinear/qlinear_cuda.py  QuantLinear.pack (qweight / qzeros with
         the zero-minus-one convention / scales / g_idx); QuantLinear.forward's torch path (the
         reference dequantizer: run on an identity matrix in float32, it returns the weights)
  GPTQ v2: github.com/ModelCloud/GPTQModel @ f4c327a17eb3e24524d5a97a3d682e3696ae6a28
         gptqmodel/utils/model.py  convert_gptq_v1_to_v2_format_module (AutoGPTQ's v1 qzeros into
         the gptq_v2 checkpoint format; the weights it defines are the v1 module's)
  compressed-tensors: github.com/neuralmagic/compressed-tensors @ 52792be02ec09e59f3517104e755a02d0e003fbb
         src/compressed_tensors/compressors/quantized_compressors/pack_quantized.py
           pack_to_int32 (weight_packed), unpack_from_int32
         src/compressed_tensors/quantization/lifecycle/forward.py  _quantize (int-quantized W8A8:
           what NaiveQuantizationCompressor.compress_weight stores), _dequantize (the formula)
         src/compressed_tensors/quantization/quant_args.py  round_to_quantized_type

The weights are defined by random codes, zero points and (fp16-exact) scales: the float weight
handed to each packer is (q - z) * s, so its rounding recovers q exactly. Each case's expected
weights are what the reference's own dequantizer returns, in float32.

Writes tests/golden/int/<case>.safetensors (one linear module "m", the tensors as the format
names them, and "reference.dequantized", the reference's F32 [N, K] weights),
tests/golden/int/cases.json (each case's quantization_config and shape), and
tests/golden/int/llama-awq/ + llama-awq-ref/ (a 1-layer llama packed by AutoAWQ, and the same
model with every projection replaced by AutoAWQ's dequantized float32 weights), and
tests/golden/int/llama-w8a8/ (that float model's projections quantized to int8 per channel by
compressed-tensors' _quantize, in the int-quantized W8A8 format) and tests/golden/int/llama-gptq/
(llama-awq-ref's weights packed again by AutoGPTQ, so it must generate exactly like it).

Usage: tools/golden/make_int_fixtures.py AUTOAWQ_GIT AUTOGPTQ_GIT COMPRESSED_TENSORS_GIT GPTQMODEL_GIT
(each a clone or bare git directory holding the commit above).
"""
import ast
import json
import os
import subprocess
import sys
import types

import numpy as np
import torch

AWQ_COMMIT = "88e4c76b20755db275574e6a03c83c84ba3bece5"
GPTQ_COMMIT = "9f7d37072917ab3a7545835f23e808294a542153"
CT_COMMIT = "52792be02ec09e59f3517104e755a02d0e003fbb"
GPTQMODEL_COMMIT = "f4c327a17eb3e24524d5a97a3d682e3696ae6a28"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "int")


def git_show(repo, commit, path):
    return subprocess.check_output(["git", "-C", repo, "show", f"{commit}:{path}"]).decode()


def module_from_source(name, source, filename):
    m = types.ModuleType(name)
    m.__file__ = filename
    sys.modules[name] = m
    exec(compile(source, filename, "exec"), m.__dict__)
    return m


def stub(name, **attrs):
    m = types.ModuleType(name)
    m.__path__ = []
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def load_awq(repo):
    for p in ["awq", "awq.modules", "awq.modules.linear", "awq.utils"]:
        stub(p)
    stub("awq.utils.utils", get_best_device=lambda: "cpu")
    module_from_source("awq.utils.module", git_show(repo, AWQ_COMMIT, "awq/utils/module.py"), "awq/utils/module.py")
    pu = module_from_source("awq.utils.packing_utils", git_show(repo, AWQ_COMMIT, "awq/utils/packing_utils.py"),
                            "awq/utils/packing_utils.py")
    # reverse_awq_order indexes with an int32 arange, which torch >= 2 accepts and Debian's 1.13
    # does not: the module sees a torch whose int32 aranges are int64 (the same indices).
    class Torch13(types.ModuleType):
        def __getattr__(self, name):
            return getattr(torch, name)

        @staticmethod
        def arange(*args, dtype=None, **kw):
            return torch.arange(*args, dtype=torch.int64 if dtype == torch.int32 else dtype, **kw)

    pu.torch = Torch13("torch")
    gemm = module_from_source("awq.modules.linear.gemm", git_show(repo, AWQ_COMMIT, "awq/modules/linear/gemm.py"),
                              "awq/modules/linear/gemm.py")
    return gemm.WQLinear_GEMM, pu.dequantize_gemm


def load_gptq(repo):
    class Conv1D(torch.nn.Module):  # transformers' GPT-2 Conv1D, only used in an isinstance test
        pass

    stub("transformers", pytorch_utils=stub("transformers.pytorch_utils", Conv1D=Conv1D))
    path = "auto_gptq/nn_modules/qlinear/qlinear_cuda.py"
    return module_from_source("qlinear_cuda", git_show(repo, GPTQ_COMMIT, path), path).QuantLinear


def load_gptq_v2(repo):
    """GPTQModel's v1 -> v2 qzeros conversion, applied to a holder of one packed qzeros tensor."""
    log = types.SimpleNamespace(info=types.SimpleNamespace(once=lambda *a: None))
    env = {"torch": torch, "nn": torch.nn, "BaseQuantLinear": object, "log": log}
    path = "gptqmodel/utils/model.py"
    (convert,) = functions_from(git_show(repo, GPTQMODEL_COMMIT, path), ["convert_gptq_v1_to_v2_format_module"],
                                path, env)

    def to_v2(qzeros, bits):
        holder = types.SimpleNamespace(qzeros=qzeros.clone(), qzero_format=lambda format: None)
        convert(holder, bits, torch.int32)
        return holder.qzeros

    return to_v2


def functions_from(source, names, filename, env):
    """Executes only the top-level functions `names` of a source file (their imports are heavy)."""
    tree = ast.parse(source)
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    for n in keep:
        n.decorator_list = []
    exec(compile(ast.Module(body=keep, type_ignores=[]), filename, "exec"), env)
    return [env[n] for n in names]


def load_ct(repo):
    import math
    from typing import Literal, Optional, Union

    env = {"torch": torch, "math": math, "Literal": Literal, "Optional": Optional, "Union": Union}
    p1 = "src/compressed_tensors/compressors/quantized_compressors/pack_quantized.py"
    pack, unpack = functions_from(git_show(repo, CT_COMMIT, p1), ["pack_to_int32", "unpack_from_int32"], p1, env)
    class QuantizationType:  # the enum's two members round_to_quantized_type compares with
        INT, FLOAT = "int", "float"

    env.update({"QuantizationType": QuantizationType, "QuantizationArgs": object})
    p3 = "src/compressed_tensors/quantization/quant_args.py"
    functions_from(git_show(repo, CT_COMMIT, p3), ["round_to_quantized_type"], p3, env)
    p2 = "src/compressed_tensors/quantization/lifecycle/forward.py"
    quant, deq = functions_from(git_show(repo, CT_COMMIT, p2), ["_quantize", "_dequantize"], p2, env)
    int8_args = types.SimpleNamespace(type="int", num_bits=8)

    def quantize_int8(w, scale):
        return quant(w, scale, None, torch.tensor(-128.0), torch.tensor(127.0), int8_args, dtype=torch.int8)

    return pack, unpack, deq, quantize_int8


def fp16_scales(gen, shape):
    return (torch.rand(shape, generator=gen) * 0.02 + 0.005).half().float()


def awq_linear(WQLinear, deq, gen, n, k, group, min_zero=0):
    """Returns (tensors, expected [n, k]) for one AWQ module."""
    g = k // group
    q = torch.randint(0, 16, (n, k), generator=gen)
    z = torch.randint(min_zero, 16, (g, n), generator=gen)  # AutoAWQ passes scales / zeros as [groups, out]
    s = fp16_scales(gen, (g, n))
    cols = torch.arange(k) // group
    w = (q - z[cols].t()).float() * s[cols].t()
    lin = torch.nn.Linear(k, n, bias=False)
    lin.weight.data = w
    m = WQLinear.from_linear(lin, 4, group, scales=s, zeros=z)
    expected = deq(m.qweight, m.qzeros, m.scales.float(), 4, group).t().contiguous()
    return {"qweight": m.qweight, "qzeros": m.qzeros, "scales": m.scales}, expected


def gptq_linear(QuantLinear, gen, n, k, bits, group, desc_act, sym):
    gs = k if group == -1 else group
    g = (k + gs - 1) // gs
    maxq = 2**bits - 1
    q = torch.randint(0, maxq + 1, (n, k), generator=gen)
    # Zero points of 0 do not survive the format's zero-minus-one packing (-1 sets every bit of
    # its word in QuantLinear.pack): real asymmetric checkpoints avoid them, so do these.
    z = torch.full((n, g), 2 ** (bits - 1)) if sym else torch.randint(1, maxq + 1, (n, g), generator=gen)
    s = fp16_scales(gen, (n, g))
    if desc_act:
        perm = torch.randperm(k, generator=gen)
        g_idx = (torch.argsort(perm) // gs).to(torch.int32)
    else:
        g_idx = (torch.arange(k) // gs).to(torch.int32)
    gl = g_idx.long()
    w = (q - z[:, gl]).float() * s[:, gl]
    lin = torch.nn.Linear(k, n, bias=False)
    lin.weight.data = w
    m = QuantLinear(bits, group, k, n, False, weight_dtype=torch.float32)
    m.pack(lin, s, z, g_idx)
    tensors = {"qweight": m.qweight, "qzeros": m.qzeros, "scales": m.scales.half(), "g_idx": m.g_idx}
    # The reference dequantizer: forward's torch path, in float32, on the identity.
    m.scales = m.scales.float()
    expected = m(torch.eye(k)).t().contiguous()
    return tensors, expected


def ct_int8(ct, w):
    """compressed-tensors int-quantized (W8A8) tensors of float weight w: per-channel bf16 scales."""
    _, _, deq, quantize_int8 = ct
    scale = (w.abs().amax(dim=1, keepdim=True) / 127.0).to(torch.bfloat16).float()
    q = quantize_int8(w, scale)
    return {"weight": q, "weight_scale": scale.to(torch.bfloat16)}, deq(q, scale)


def ct_linear(ct, gen, n, k, bits, group):
    pack, unpack, deq, _ = ct
    gs = k if group == -1 else group
    g = k // gs
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    q = torch.randint(lo, hi + 1, (n, k), generator=gen).to(torch.int8)
    s = fp16_scales(gen, (n, g)).to(torch.bfloat16).float()
    packed = pack(q, bits)
    unpacked = unpack(packed, bits, torch.Size((n, k)))
    expected = torch.cat([deq(unpacked[:, i * gs:(i + 1) * gs], s[:, i:i + 1]) for i in range(g)], dim=1)
    tensors = {"weight_packed": packed, "weight_scale": s.to(torch.bfloat16),
               "weight_shape": torch.tensor([n, k], dtype=torch.int32)}
    return tensors, expected


def save(path, tensors):
    """A safetensors file (the format's spec: 8-byte header length, JSON header, raw data)."""
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int32: "I32",
             torch.int8: "I8", torch.int64: "I64"}
    header, blobs, pos = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [pos, pos + len(raw)]}
        blobs.append(raw)
        pos += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def main():
    awq_repo, gptq_repo, ct_repo, gptqmodel_repo = sys.argv[1:5]
    WQLinear, deq_awq = load_awq(awq_repo)
    QuantLinear = load_gptq(gptq_repo)
    to_v2 = load_gptq_v2(gptqmodel_repo)
    ct = load_ct(ct_repo)
    os.makedirs(OUT, exist_ok=True)
    gen = torch.Generator().manual_seed(28)
    cases = []

    def add(name, config, n, k, tensors, expected):
        st = {"m." + t: v for t, v in tensors.items()}
        st["reference.dequantized"] = expected.float()
        save(os.path.join(OUT, name + ".safetensors"), st)
        cases.append({"name": name, "quantization_config": config, "out_features": n, "in_features": k})

    for group in (32, 128):
        t, e = awq_linear(WQLinear, deq_awq, gen, 32, 128, group)
        add(f"awq-g{group}", {"quant_method": "awq", "version": "gemm", "bits": 4, "group_size": group,
                              "zero_point": True, "modules_to_not_convert": None}, 32, 128, t, e)
    for bits, group, desc_act, sym in [(4, 128, False, True), (4, 32, True, False), (4, 64, False, False),
                                       (4, -1, False, True), (8, 32, False, False), (8, 64, True, True),
                                       (8, -1, False, False)]:
        t, e = gptq_linear(QuantLinear, gen, 32, 128, bits, group, desc_act, sym)
        name = f"gptq-{bits}bit-g{group if group > 0 else 'channel'}-{'desc' if desc_act else 'nodesc'}-" \
               f"{'sym' if sym else 'asym'}"
        config = {"quant_method": "gptq", "bits": bits, "group_size": group, "desc_act": desc_act, "sym": sym,
                  "checkpoint_format": "gptq", "damp_percent": 0.01, "static_groups": False,
                  "true_sequential": True}
        add(name, config, 32, 128, t, e)
        if not sym and not desc_act and group != -1:
            add(name.replace("gptq-", "gptqv2-"), dict(config, checkpoint_format="gptq_v2"), 32, 128,
                dict(t, qzeros=to_v2(t["qzeros"], bits)), e)
    for bits, group in [(4, 128), (4, 32), (4, -1), (8, 64), (8, -1)]:
        t, e = ct_linear(ct, gen, 32, 128, bits, group)
        strategy = "channel" if group == -1 else "group"
        weights = {"num_bits": bits, "type": "int", "symmetric": True, "strategy": strategy, "dynamic": False,
                   "group_size": None if group == -1 else group, "actorder": None, "block_structure": None,
                   "observer": "minmax", "observer_kwargs": {}}
        add(f"ct-w{bits}a16-{strategy}{'' if group == -1 else group}",
            {"quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": None,
                                           "output_activations": None}},
             "ignore": ["lm_head"], "kv_cache_scheme": None}, 32, 128, t, e)
    w8a8 = {"quant_method": "compressed-tensors", "format": "int-quantized", "quantization_status": "compressed",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                "num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False,
                "group_size": None, "actorder": None, "observer": "minmax"},
                "input_activations": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token",
                                      "dynamic": True, "observer": None}}},
            "ignore": ["lm_head"], "kv_cache_scheme": None}
    t, e = ct_int8(ct, torch.randn(32, 128, generator=gen) * 0.05)
    add("ct-w8a8-channel", w8a8, 32, 128, t, e)
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump({"generated_by": "tools/golden/make_int_fixtures.py",
                   "references": {"awq": f"casper-hansen/AutoAWQ@{AWQ_COMMIT}",
                                  "gptq": f"AutoGPTQ/AutoGPTQ@{GPTQ_COMMIT}",
                                  "gptq_v2": f"ModelCloud/GPTQModel@{GPTQMODEL_COMMIT}",
                                  "compressed-tensors": f"neuralmagic/compressed-tensors@{CT_COMMIT}"},
                   "cases": cases}, f, separators=(",", ":"))
    make_llama(WQLinear, deq_awq, QuantLinear, ct, w8a8, gen)


def gptq_from_awq(QuantLinear, awq, w, n, k, group):
    """The same weights packed by AutoGPTQ (v1, asymmetric, desc_act false): AWQ's [groups, out]
    scales and zeros are GPTQ's [out, groups] ones, so its rounding recovers AWQ's codes."""
    s = awq["scales"].float().t().contiguous()
    shifts = torch.arange(0, 32, 4)
    order = [0, 4, 1, 5, 2, 6, 3, 7]  # AutoAWQ's AWQ_REVERSE_ORDER, to read its qzeros back
    z = ((awq["qzeros"][:, :, None] >> shifts) & 0xF).reshape(awq["qzeros"].shape[0], -1, 8)[:, :, order]
    z = z.reshape(z.shape[0], -1).t().contiguous()
    cols = torch.arange(k) // group
    lin = torch.nn.Linear(k, n, bias=False)
    lin.weight.data = w
    m = QuantLinear(4, group, k, n, False, weight_dtype=torch.float32)
    m.pack(lin, s, z, cols.to(torch.int32))
    return {"qweight": m.qweight, "qzeros": m.qzeros, "scales": m.scales.half(), "g_idx": m.g_idx}


def make_llama(WQLinear, deq, QuantLinear, ct, w8a8, gen):
    """A 1-layer llama, its projections packed by AutoAWQ (group 32), and the same model with
    AutoAWQ's dequantized projections in float32 (the reference the CPU test generates against)."""
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 16, "vocab_size": 128, "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float16", "bos_token_id": 1,
           "eos_token_id": 2, "hidden_act": "silu"}
    H, I, KV = 64, 128, 32
    plain = {"model.embed_tokens.weight": torch.randn(128, H, generator=gen) * 0.5,
             "lm_head.weight": torch.randn(128, H, generator=gen) * 0.2,
             "model.norm.weight": 1 + 0.1 * torch.randn(H, generator=gen),
             "model.layers.0.input_layernorm.weight": 1 + 0.1 * torch.randn(H, generator=gen),
             "model.layers.0.post_attention_layernorm.weight": 1 + 0.1 * torch.randn(H, generator=gen)}
    plain = {k: v.half() for k, v in plain.items()}
    shapes = {"self_attn.q_proj": (H, H), "self_attn.k_proj": (KV, H), "self_attn.v_proj": (KV, H),
              "self_attn.o_proj": (H, H), "mlp.gate_proj": (I, H), "mlp.up_proj": (I, H), "mlp.down_proj": (H, I)}
    packed, ref, int8, gptq = dict(plain), dict(plain), dict(plain), dict(plain)
    for name, (n, k) in shapes.items():
        # Zero points from 1: the GPTQ copy's zero-minus-one packing cannot hold 0.
        t, e = awq_linear(WQLinear, deq, gen, n, k, 32, min_zero=1)
        for suffix, v in t.items():
            packed[f"model.layers.0.{name}.{suffix}"] = v
        for suffix, v in gptq_from_awq(QuantLinear, t, e.float(), n, k, 32).items():
            gptq[f"model.layers.0.{name}.{suffix}"] = v
        ref[f"model.layers.0.{name}.weight"] = e.float()
        t8, _ = ct_int8(ct, e.float())
        for suffix, v in t8.items():
            int8[f"model.layers.0.{name}.{suffix}"] = v
    for folder, tensors, qc in [("llama-awq", packed, {"quant_method": "awq", "version": "gemm", "bits": 4,
                                                       "group_size": 32, "zero_point": True}),
                                ("llama-awq-ref", ref, None), ("llama-w8a8", int8, w8a8),
                                ("llama-gptq", gptq, {"quant_method": "gptq", "bits": 4, "group_size": 32,
                                                      "desc_act": False, "sym": False,
                                                      "checkpoint_format": "gptq"})]:
        d = os.path.join(OUT, folder)
        os.makedirs(d, exist_ok=True)
        c = dict(cfg)
        if qc:
            c["quantization_config"] = qc
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f, indent=1)
        save(os.path.join(d, "model.safetensors"), tensors)


if __name__ == "__main__":
    main()
