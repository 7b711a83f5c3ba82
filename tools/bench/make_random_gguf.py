#!/usr/bin/env python3
"""A random-weight GGUF of the Llama-3.1-8B shape for llama.cpp's server, made without a checkpoint.

Writing a 16 GB Hugging Face folder and converting it would cost minutes of GPU-machine time; the
weights' values do not change the speed. So the tokenizer and every other key come from a small
GGUF that llama.cpp's own convert_hf_to_gguf.py made of tools/bench/make_tiny_llama3.py's model
(the Llama-3 vocabulary, recognised as llama-bpe); only the shape keys and the tensors are new:
BF16 weights drawn from N(0, 0.02) (one draw per tensor shape, on the GPU when there is one) and
F32 norms of ones, in llama.cpp's tensor names. The llama3 RoPE-scaling factors tensor is left out
(llama.cpp treats it as optional; it does not change the work per token).

Usage: PYTHONPATH=<llama.cpp>/gguf-py make_random_gguf.py SMALL.gguf OUT.gguf [--layers N ...]
"""
import argparse
import json

import numpy as np

import gguf

try:
    import torch
except ImportError:  # a machine without PyTorch draws with NumPy (slower, same distribution)
    torch = None

SHAPE = {"layers": 32, "hidden": 4096, "ffn": 14336, "heads": 32, "kv_heads": 8, "head_dim": 128,
         "context": 131072, "rope_theta": 500000.0, "rms_eps": 1e-5}


def field_value(field):
    """A reader field as the Python value GGUFWriter.add_key_value takes."""
    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        if field.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        return [v for i in field.data for v in field.parts[i].tolist()]
    if kind == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    return field.parts[field.data[0]].tolist()[0]


def shape_keys(arch, vocab):
    s, k, t = SHAPE, f"{arch}.", gguf.GGUFValueType
    return {k + "block_count": (s["layers"], t.UINT32), k + "embedding_length": (s["hidden"], t.UINT32),
            k + "feed_forward_length": (s["ffn"], t.UINT32), k + "attention.head_count": (s["heads"], t.UINT32),
            k + "attention.head_count_kv": (s["kv_heads"], t.UINT32),
            k + "rope.dimension_count": (s["head_dim"], t.UINT32), k + "context_length": (s["context"], t.UINT32),
            # llama.cpp checks the RoPE dimension against these (the converter writes them).
            k + "attention.key_length": (s["head_dim"], t.UINT32), k + "attention.value_length": (s["head_dim"], t.UINT32),
            k + "rope.freq_base": (s["rope_theta"], t.FLOAT32),
            k + "attention.layer_norm_rms_epsilon": (s["rms_eps"], t.FLOAT32), k + "vocab_size": (vocab, t.UINT32),
            "general.file_type": (int(gguf.LlamaFileType.MOSTLY_BF16), t.UINT32),
            "general.name": ("random Llama-3.1-8B shape", t.STRING)}


def tensor_plan(vocab):
    s = SHAPE
    h, q, kv = s["hidden"], s["heads"] * s["head_dim"], s["kv_heads"] * s["head_dim"]
    plan = [("token_embd.weight", (vocab, h)), ("output_norm.weight", (h,)), ("output.weight", (vocab, h))]
    for i in range(s["layers"]):
        b = f"blk.{i}."
        plan += [(b + "attn_norm.weight", (h,)), (b + "attn_q.weight", (q, h)), (b + "attn_k.weight", (kv, h)),
                 (b + "attn_v.weight", (kv, h)), (b + "attn_output.weight", (h, q)), (b + "ffn_norm.weight", (h,)),
                 (b + "ffn_gate.weight", (s["ffn"], h)), (b + "ffn_up.weight", (s["ffn"], h)),
                 (b + "ffn_down.weight", (h, s["ffn"]))]
    return plan


def make_data(shape, cache, device):
    if len(shape) == 1:  # norms
        return np.ones(shape, dtype=np.float32)
    if shape not in cache:
        if torch is not None:
            w = torch.randn(shape, device=device, dtype=torch.bfloat16) * 0.02
            cache[shape] = w.view(torch.int16).cpu().numpy().view(np.uint16)
        else:  # BF16 by truncating float32 (the distribution is all that matters here)
            w = (np.random.default_rng(0).standard_normal(shape, dtype=np.float32) * 0.02)
            cache[shape] = (w.view(np.uint32) >> 16).astype(np.uint16)
    return cache[shape]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("small")
    ap.add_argument("out")
    for key, value in SHAPE.items():  # a smaller shape for trying the script out
        ap.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    args = ap.parse_args()
    SHAPE.update({k: getattr(args, k) for k in SHAPE})
    reader = gguf.GGUFReader(args.small)
    arch = field_value(reader.fields["general.architecture"])
    vocab = len(field_value(reader.fields["tokenizer.ggml.tokens"]))
    writer = gguf.GGUFWriter(args.out, arch)
    keys = shape_keys(arch, vocab)
    for field in reader.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF.") or field.name in keys:
            continue
        writer.add_key_value(field.name, field_value(field), field.types[0])
    for name, (value, kind) in keys.items():
        writer.add_key_value(name, value, kind)
    device = "cpu"
    if torch is not None:
        torch.manual_seed(0)
        device = "cuda" if torch.cuda.is_available() else "cpu"
    cache, plan = {}, tensor_plan(vocab)
    for name, shape in plan:
        if len(shape) == 1:
            writer.add_tensor_info(name, shape, np.dtype(np.float32), int(np.prod(shape)) * 4)
        else:
            writer.add_tensor_info(name, shape, np.dtype(np.uint16), int(np.prod(shape)) * 2,
                                   raw_dtype=gguf.GGMLQuantizationType.BF16)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    total = 0
    for name, shape in plan:
        data = make_data(shape, cache, device)
        writer.write_tensor_data(data)
        total += data.nbytes
    writer.close()
    print(json.dumps({"out": args.out, "arch": arch, "vocab": vocab, "tensors": len(plan), "bytes": total}))


if __name__ == "__main__":
    main()
