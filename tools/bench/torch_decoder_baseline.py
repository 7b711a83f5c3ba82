#!/usr/bin/env python3
"""A gpt-fast-style PyTorch decoder: the baseline `inferdesk-cli bench --backend cuda` is compared
with in the same run (docs/PERF.md).

Random BF16 weights of a published shape (resources/shapes/<name>.json), static KV cache, fused
QKV and gate/up weights, torch.compile(mode="reduce-overhead") so the decode step is replayed as a
CUDA graph. As in gpt-fast, weights are frozen Parameters and the caches registered buffers, so
torch.compile keeps CUDA graphs despite the in-place cache writes; attention is torch's
scaled_dot_product_attention (enable_gqa) over the static cache. (Earlier versions kept weights
and caches as plain tensor attributes and computed attention with matmuls: 909, then 1,602 tok/s
at batch 64, not representative.) Prints one JSON line: decode tokens/s at the given batch
(batch * steps / time of the decode steps, prefill excluded) and the roofline it implies.

    python3 tools/bench/torch_decoder_baseline.py --shape llama-3.1-8b --batch 1 --steps 256

Mixture-of-experts shapes (mixtral-8x7b, qwen3-30b-a3b): the router picks top-k experts per token
(softmax, renormalised where the model does) and the step gathers the chosen experts' gate/up and
down matrices (`w13[ids]`, `w2[ids]`) and multiplies them per token: static shapes, so it is
compiled and captured like the dense decoder; this is the compiled-PyTorch MoE baseline of the
MoE issue (its weights are read once per (token, slot), plus the gathered copies). The eager
prefill loops over the experts instead (the gathered copies of a 4,096-token prompt batch would
not fit). Qwen3 shapes apply the per-head q/k RMSNorm.
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


class Layer(torch.nn.Module):
    """One decoder layer; weights are (frozen) Parameters and the static KV cache is a pair of
    buffers, as in gpt-fast: torch.compile treats both as static inputs, so the in-place cache
    writes do not make it skip CUDA graphs and nothing is copied into the graph per step."""

    def __init__(self, H, nh, nkv, D, I, batch, max_len, w, dev, dt, experts=0, qk_norm=False):
        super().__init__()
        P = lambda t: torch.nn.Parameter(t, requires_grad=False)
        self.n1 = P(torch.ones(H, device=dev, dtype=dt))
        self.n2 = P(torch.ones(H, device=dev, dtype=dt))
        self.wqkv = P(w((nh + 2 * nkv) * D, H))
        self.wo = P(w(H, nh * D))
        self.qk_norm = qk_norm
        if qk_norm:
            self.qn = P(torch.ones(D, device=dev, dtype=dt))
            self.kn = P(torch.ones(D, device=dev, dtype=dt))
        self.experts = experts
        if experts:  # I is the expert width here
            self.router = P(w(experts, H))
            self.w13 = P(w(experts, 2 * I, H))
            self.w2 = P(w(experts, H, I))
        else:
            self.w13 = P(w(2 * I, H))
            self.w2 = P(w(H, I))
        self.register_buffer("k_cache", torch.zeros(batch, nkv, max_len, D, device=dev, dtype=dt))
        self.register_buffer("v_cache", torch.zeros(batch, nkv, max_len, D, device=dev, dtype=dt))


class Decoder(torch.nn.Module):
    def __init__(self, cfg, batch, max_len):
        super().__init__()
        H = cfg["hidden_size"]
        self.nh = cfg["num_attention_heads"]
        self.nkv = cfg["num_key_value_heads"]
        self.D = cfg.get("head_dim") or H // self.nh
        self.experts = cfg.get("num_experts") or cfg.get("num_local_experts") or 0
        I = cfg["moe_intermediate_size"] if "moe_intermediate_size" in cfg else cfg["intermediate_size"]
        self.top_k = cfg.get("num_experts_per_tok", 0)
        # Mixtral always renormalises the chosen weights; Qwen-MoE where norm_topk_prob says so.
        self.norm_topk = cfg.get("norm_topk_prob", cfg["model_type"] == "mixtral")
        qk_norm = cfg["model_type"].startswith("qwen3")
        L = cfg["num_hidden_layers"]
        V = cfg["vocab_size"]
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        dev, dt = "cuda", torch.bfloat16

        def w(*shape):
            return (torch.rand(*shape, device=dev, dtype=dt) * 2 - 1) * math.sqrt(3.0 / shape[-1])

        P = lambda t: torch.nn.Parameter(t, requires_grad=False)
        self.embed = P(w(V, H))
        self.layers = torch.nn.ModuleList(
            Layer(H, self.nh, self.nkv, self.D, I, batch, max_len, w, dev, dt, self.experts, qk_norm)
            for _ in range(L))
        self.norm = P(torch.ones(H, device=dev, dtype=dt))
        self.tied = bool(cfg.get("tie_word_embeddings"))
        if not self.tied:
            self.head = P(w(V, H))
        inv = rope_inv_freq(cfg, self.D).to(dev)
        t = torch.arange(max_len, device=dev, dtype=torch.float32)
        f = torch.outer(t, inv)
        self.register_buffer("cos", torch.cat([f.cos(), f.cos()], -1).to(dt))
        self.register_buffer("sin", torch.cat([f.sin(), f.sin()], -1).to(dt))
        self.register_buffer("positions", torch.arange(max_len, device=dev))
        self.max_len = max_len

    def weight_bytes(self):
        return sum(p.numel() * p.element_size() for p in self.parameters())

    def rope(self, x, pos):  # x [B, h, T, D]
        c, s = self.cos[pos][None, None], self.sin[pos][None, None]
        x1, x2 = x.chunk(2, -1)
        return x * c + torch.cat([-x2, x1], -1) * s

    def moe(self, l, h):  # h [B, T, H]
        hf = h.reshape(-1, h.shape[-1])
        p = (hf @ l.router.t()).float().softmax(-1)
        wts, ids = p.topk(self.top_k, -1)
        if self.norm_topk:
            wts = wts / wts.sum(-1, keepdim=True)
        if h.shape[1] > 1:
            # Prefill (eager, not timed): gathering a weight copy per (token, slot) would need
            # tokens x k x expert bytes (192 GiB for 32 x 128 tokens of Qwen3-30B-A3B); loop over
            # the experts instead.
            out = torch.zeros(hf.shape, device=hf.device, dtype=torch.float32)
            for e in range(self.experts):
                tok, slot = (ids == e).nonzero(as_tuple=True)
                if tok.numel() == 0:
                    continue
                g, u = (hf[tok] @ l.w13[e].t()).chunk(2, -1)
                y = (F.silu(g) * u) @ l.w2[e].t()
                out.index_add_(0, tok, y.float() * wts[tok, slot, None])
            return out.to(h.dtype).view_as(h)
        gu = torch.einsum("nh,nkoh->nko", hf, l.w13[ids])  # the chosen experts' gate | up
        g, u = gu.chunk(2, -1)
        y = torch.einsum("nki,nkhi->nkh", F.silu(g) * u, l.w2[ids])
        return (y * wts[..., None].to(y.dtype)).sum(1).view_as(h)

    def forward(self, tokens, pos):  # tokens [B, T], pos [T]
        B, T = tokens.shape
        x = F.embedding(tokens, self.embed)
        mask = self.positions[None, :] <= pos[:, None]  # [T, max]
        for l in self.layers:
            h = F.rms_norm(x, (x.shape[-1],), l.n1, self.eps)
            qkv = h @ l.wqkv.t()
            q, k, v = qkv.split([self.nh * self.D, self.nkv * self.D, self.nkv * self.D], -1)
            q = q.view(B, T, self.nh, self.D).transpose(1, 2)
            k = k.view(B, T, self.nkv, self.D).transpose(1, 2)
            v = v.view(B, T, self.nkv, self.D).transpose(1, 2)
            if l.qk_norm:
                q = F.rms_norm(q, (self.D,), l.qn, self.eps)
                k = F.rms_norm(k, (self.D,), l.kn, self.eps)
            q, k = self.rope(q, pos), self.rope(k, pos)
            l.k_cache.index_copy_(2, pos, k)
            l.v_cache.index_copy_(2, pos, v)
            # Attention over the static cache with PyTorch's fused SDPA (GQA without copying K/V).
            o = F.scaled_dot_product_attention(q, l.k_cache, l.v_cache, attn_mask=mask[None, None],
                                               enable_gqa=True)
            x = x + o.transpose(1, 2).reshape(B, T, -1) @ l.wo.t()
            h = F.rms_norm(x, (x.shape[-1],), l.n2, self.eps)
            if l.experts:
                x = x + self.moe(l, h)
            else:
                g, u = (h @ l.w13.t()).chunk(2, -1)
                x = x + (F.silu(g) * u) @ l.w2.t()
        x = F.rms_norm(x[:, -1], (x.shape[-1],), self.norm, self.eps)
        head = self.embed if self.tied else self.head
        return (x @ head.t()).float()


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
        weight_bytes = m.weight_bytes()
        step = torch.compile(m, mode="reduce-overhead", fullgraph=True)
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
    # Dense: every weight is read per step. MoE: the roofline is the dense one of the weights a
    # token reads (all but the unchosen experts), for batch 1.
    read = weight_bytes
    if m.experts:
        per_expert = sum(t[0].numel() * t.element_size() for l in m.layers for t in (l.w13, l.w2))
        read = weight_bytes - per_expert * (m.experts - m.top_k)
    roof = a.bandwidth_gbs * 1e9 / read
    print(json.dumps({"baseline": "torch.compile reduce-overhead (gpt-fast style)", "shape": a.shape,
                      "batch": a.batch, "decode_tokens_per_s": tps, "step_ms": dt / n * 1e3,
                      "weight_bytes": weight_bytes, "roofline_tokens_per_s_batch1": roof,
                      "compile_s": compile_s, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
