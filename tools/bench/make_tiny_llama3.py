#!/usr/bin/env python3
"""A small random-weight Llama-3-shaped model for serving comparisons against other engines.

transformers builds it (LlamaForCausalLM, seeded random init, BF16) with the real Llama-3
tokenizer from ../shared/tokenizers, so llama.cpp's own convert_hf_to_gguf.py recognises the
tokenizer and both servers see the same weights and the same vocabulary.

Usage: make_tiny_llama3.py TOKENIZER_DIR OUT_DIR
"""
import json
import shutil
import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def main() -> None:
    tok_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=128256, hidden_size=256, intermediate_size=768, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=8192,
                      rope_theta=500000.0, rms_norm_eps=1e-5, bos_token_id=128000, eos_token_id=128009,
                      tie_word_embeddings=False, torch_dtype="bfloat16")
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tok_dir / name, out / name)
    print(json.dumps({"out": str(out), "parameters": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    main()
