#!/usr/bin/env python3
"""A gpt-fast-style PyTorch decoder: the baseline `inferdesk-cli bench --backend cuda` is compared
with in the same run (docs/PERF.md).

Random BF16 weights of a published shape (resources/shapes/<name>.json), static KV cache, fused
QKV and gate/up weights, torch.compile(mode="reduce-overhead") so the decode step is replayed as a
CUDA graph; attention by torch's scaled_dot_product_attention (enable_gqa) over the static cache.
(The first version computed grouped attention with plain matmuls and a float softmax over the whole
cache: 909 tok/s at batch 64, not representative.) Prints one JSON line: decode tokens/s at the given batch (batch * steps / time of the
decode steps, prefill excluded) and the roofline it implies.

    python3 tools/bench/torch_decoder_baseline.py --shape llama-3.1-8b --batch 1 --steps 256
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rope_inv_freq(cfg, dim):
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        smooth = (old / wavelen - lo) / (hi - lo)
        scaled = torch.where(wavelen > old / lo, inv / factor, inv)
        mid = (1 - smooth) * inv / factor + smooth * inv
        is_mid = (wavelen <= old / lo) & (wavelen >= old / hi)
        inv = torch.where(is_mid, mid, scaled)
    return inv


class Decoder(torch.nn.Module):
    def __init__(self, cfg, batch, max_len):
        super().__init__()
        H = cfg["hidden_size"]
        self.nh = cfg["num_attention_heads"]
        self.nkv = cfg["num_key_value_heads"]
        self.D = cfg.get("head_dim") or H // self.nh
        I = cfg["intermediate_size"]
        L = cfg["num_hidden_layers"]
        V = cfg["vocab_size"]
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        dev, dt = "cuda", torch.bfloat16

        def w(*shape):
            return (torch.rand(*shape, device=dev, dtype=dt) * 2 - 1) * math.sqrt(3.0 / shape[-1])

        self.embed = w(V, H)
        self.layers = []
        for _ in range(L):
            self.layers.append(dict(
                n1=torch.ones(H, device=dev, dtype=dt), n2=torch.ones(H, device=dev, dtype=dt),
                wqkv=w((self.nh + 2 * self.nkv) * self.D, H), wo=w(H, self.nh * self.D),
                w13=w(2 * I, H), w2=w(H, I)))
        self.norm = torch.ones(H, device=dev, dtype=dt)
        self.head = self.embed if cfg.get("tie_word_embeddings") else w(V, H)
        self.k = torch.zeros(L, batch, self.nkv, max_len, self.D, device=dev, dtype=dt)
        self.v = torch.zeros_like(self.k)
        inv = rope_inv_freq(cfg, self.D).to(dev)
        t = torch.arange(max_len, device=dev, dtype=torch.float32)
        f = torch.outer(t, inv)
        self.cos = torch.cat([f.cos(), f.cos()], -1).to(dt)
        self.sin = torch.cat([f.sin(), f.sin()], -1).to(dt)
        self.max_len = max_len

    def rope(self, x, pos):  # x [B, h, T, D]
        c, s = self.cos[pos][None, None], self.sin[pos][None, None]
        x1, x2 = x.chunk(2, -1)
        return x * c + torch.cat([-x2, x1], -1) * s

    def forward(self, tokens, pos):  # tokens [B, T], pos [T]
        B, T = tokens.shape
        x = self.embed[tokens]
        mask = torch.arange(self.max_len, device=x.device)[None, :] <= pos[:, None]  # [T, max]
        for li, l in enumerate(self.layers):
            h = F.rms_norm(x, (x.shape[-1],), l["n1"], self.eps)
            qkv = h @ l["wqkv"].t()
            q, k, v = qkv.split([self.nh * self.D, self.nkv * self.D, self.nkv * self.D], -1)
            q = q.view(B, T, self.nh, self.D).transpose(1, 2)
            k = k.view(B, T, self.nkv, self.D).transpose(1, 2)
            v = v.view(B, T, self.nkv, self.D).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            self.k[li].index_copy_(2, pos, k)
            self.v[li].index_copy_(2, pos, v)
            # Attention over the static cache with PyTorch's fused SDPA (GQA without copying K/V).
            o = F.scaled_dot_product_attention(q, self.k[li], self.v[li], attn_mask=mask[None, None],
                                               enable_gqa=True)
            x = x + o.transpose(1, 2).reshape(B, T, -1) @ l["wo"].t()
            h = F.rms_norm(x, (x.shape[-1],), l["n2"], self.eps)
            g, u = (h @ l["w13"].t()).chunk(2, -1)
            x = x + (F.silu(g) * u) @ l["w2"].t()
        x = F.rms_norm(x[:, -1], (x.shape[-1],), self.norm, self.eps)
        return (x @ self.head.t()).float()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="llama-3.1-8b")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--bandwidth-gbs", type=float, default=4250.0)
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(ROOT, "resources", "shapes", a.shape + ".json")))
    torch.manual_seed(0)
    max_len = a.prompt + a.steps + 8
    with torch.no_grad():
        m = Decoder(cfg, a.batch, max_len)
        weight_bytes = sum(t.numel() * 2 for l in m.layers for t in l.values()) + m.embed.numel() * 2
        if m.head is not m.embed:
            weight_bytes += m.head.numel() * 2
        step = torch.compile(m.forward, mode="reduce-overhead", fullgraph=True)
        tokens = torch.randint(10, cfg["vocab_size"] - 10, (a.batch, a.prompt), device="cuda")
        logits = m.forward(tokens, torch.arange(a.prompt, device="cuda"))  # eager prefill
        nxt = logits.argmax(-1)[:, None]
        t0 = time.time()
        for i in range(3):  # compile + warm-up (graph capture)
            p = torch.tensor([a.prompt + i], device="cuda")
            nxt = step(nxt, p).argmax(-1)[:, None]
        torch.cuda.synchronize()
        compile_s = time.time() - t0
        start = a.prompt + 3
        n = a.steps - 3
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(n):
            p = torch.tensor([start + i], device="cuda")
            nxt = step(nxt, p).argmax(-1)[:, None]
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    tps = a.batch * n / dt
    roof = a.bandwidth_gbs * 1e9 / weight_bytes
    print(json.dumps({"baseline": "torch.compile reduce-overhead (gpt-fast style)", "shape": a.shape,
                      "batch": a.batch, "decode_tokens_per_s": tps, "step_ms": dt / n * 1e3,
                      "weight_bytes": weight_bytes, "roofline_tokens_per_s_batch1": roof,
                      "compile_s": compile_s, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
