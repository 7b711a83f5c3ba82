#!/usr/bin/env python3
"""Build tests/golden/models/tiny-chat-padded from tiny-chat: the same tokenizer (480 tokens) and
chat template over a model whose config vocab_size is 512, as in real checkpoints that pad their
vocabulary (the embedding and lm_head get 32 extra random rows nothing can decode), and a longer
max_position_embeddings (16384) for long-reply tests. Standard library only, deterministic.

    python3 tools/golden/make_padded_vocab.py --src tests/golden/models/tiny-chat \
        --out tests/golden/models/tiny-chat-padded
"""
import argparse
import json
import math
import os
import random
import shutil
import struct

PADDED_VOCAB = 512
MAX_POSITIONS = 16384
PADDED_TENSORS = ("lm_head.weight", "model.embed_tokens.weight")


def bf16_to_float(two_bytes):
    return struct.unpack("<f", b"\x00\x00" + two_bytes)[0]


def float_to_bf16(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
    return struct.pack("<H", (bits >> 16) & 0xFFFF)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], data[start:end])
    return header.get("__metadata__", {}), tensors


def write_safetensors(path, metadata, tensors):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        dtype, shape, blob = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def padded(dtype, shape, blob, rows, rng):
    """`rows` rows, the extra ones drawn from N(0, std of the existing rows)."""
    assert dtype == "BF16" and len(shape) == 2
    values = [bf16_to_float(blob[i:i + 2]) for i in range(0, len(blob), 2)]
    std = math.sqrt(sum(v * v for v in values) / len(values))
    extra = b"".join(float_to_bf16(rng.gauss(0.0, std)) for _ in range((rows - shape[0]) * shape[1]))
    return dtype, [rows, shape[1]], blob + extra


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    for name in ("tokenizer.json", "generation_config.json"):
        shutil.copy(os.path.join(args.src, name), os.path.join(args.out, name))
    with open(os.path.join(args.src, "tokenizer_config.json")) as f:
        tok_cfg = json.load(f)
    tok_cfg["model_max_length"] = MAX_POSITIONS
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump(tok_cfg, f, indent=2)
    with open(os.path.join(args.src, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["vocab_size"] < PADDED_VOCAB
    cfg["vocab_size"] = PADDED_VOCAB
    cfg["max_position_embeddings"] = MAX_POSITIONS
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    metadata, tensors = read_safetensors(os.path.join(args.src, "model.safetensors"))
    rng = random.Random(2024)
    for name in PADDED_TENSORS:
        tensors[name] = padded(*tensors[name], PADDED_VOCAB, rng)
    write_safetensors(os.path.join(args.out, "model.safetensors"), metadata, tensors)
    print(f"{args.out}: vocab_size {PADDED_VOCAB}, the tokenizer of {args.src}")


if __name__ == "__main__":
    main()
