#!/usr/bin/env python3
"""PyTorch's float8_e4m3fn / float8_e5m2 conversions as a fixture for the C++ ones:
every code's value, and the code torch's cast gives for a set of floats in range (ties at every
exponent, subnormals, random values).

    python3 tools/golden/make_fp8_conversions.py tests/golden/fp8/conversions.json
"""
import json
import sys

import torch


def main():
    out = {"torch": torch.__version__}
    for name, dt, mx in (("e4m3", torch.float8_e4m3fn, 448.0), ("e5m2", torch.float8_e5m2, 57344.0)):
        codes = torch.arange(256, dtype=torch.uint8).view(dt).float()
        out[name + "_values"] = [None if v != v or abs(v) == float("inf") else v for v in codes.tolist()]
        finite = sorted({abs(v) for v in out[name + "_values"] if v is not None})
        mids = [(a + b) / 2 for a, b in zip(finite, finite[1:])]  # exact ties between neighbours
        g = torch.Generator().manual_seed(5)
        rnd = ((torch.rand(2000, generator=g) * 2 - 1) * mx).tolist()
        small = ((torch.rand(500, generator=g) * 2 - 1) * finite[9]).tolist()
        xs = [x for x in mids + [-m for m in mids] + rnd + small if abs(x) <= mx]
        xs_t = torch.tensor(xs, dtype=torch.float32)
        out[name + "_inputs"] = xs_t.tolist()
        out[name + "_codes"] = xs_t.to(dt).view(torch.uint8).tolist()
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
