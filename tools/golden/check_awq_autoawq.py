#!/usr/bin/python3
"""AutoAWQ's own dequantizer over an AWQ folder InferDesk wrote (issue 28: "our AWQ output loads in
the reference packer's own dequantizer to the same weights, bit for bit").

Reads every `<module>.qweight` / `.qzeros` / `.scales` of FOLDER/model.safetensors, runs AutoAWQ's
`dequantize_gemm` (awq/utils/packing_utils.py at the commit make_int_fixtures.py names, executed
from the git directory as that script does) and writes OUT.safetensors with `<module>.dequantized`,
the reference's weights as F32 [out, in] (AutoAWQ returns [in, out] in the scales' F16; widening
F16 to F32 is exact). tests/golden/awq compares them with what InferDesk's AWQ reader makes of
the same folder, exactly.

Runs on Debian's python3-torch 1.13 + python3-numpy.
Usage: tools/golden/check_awq_autoawq.py AUTOAWQ_GIT FOLDER OUT.safetensors
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_int_fixtures import load_awq, save  # noqa: E402  (the same loading of AutoAWQ's source)

DTYPES = {"I32": (np.int32, torch.int32), "F16": (np.float16, torch.float16)}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__" or h["dtype"] not in DTYPES:
            continue
        a, b = h["data_offsets"]
        arr = np.frombuffer(data[a:b], dtype=DTYPES[h["dtype"]][0]).reshape(h["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def main():
    repo, folder, out = sys.argv[1:4]
    cfg = json.load(open(os.path.join(folder, "config.json")))["quantization_config"]
    assert cfg["quant_method"] == "awq" and cfg["version"] == "gemm", cfg
    _, dequantize_gemm = load_awq(repo)
    t = read_safetensors(os.path.join(folder, "model.safetensors"))
    result = {}
    for name in sorted(t):
        if not name.endswith(".qweight"):
            continue
        m = name[: -len(".qweight")]
        w = dequantize_gemm(t[name], t[m + ".qzeros"], t[m + ".scales"], cfg["bits"], cfg["group_size"])
        result[m + ".dequantized"] = w.t().contiguous().float()
    save(out, result)
    print(f"{out}: {len(result)} modules dequantized by AutoAWQ's dequantize_gemm")


if __name__ == "__main__":
    main()
