#!/usr/bin/python3
"""The PyTorch peer for bench/e2e.sh (run with Debian's /usr/bin/python3).

Builds the same network as scripts/export_models.py (so the same weights as
the ONNX file temper runs), writes every parameter as
OUT/NAME.npy under the names temper's text models use
(examples/resnet*.relay, from scripts/gen_resnet.py), a fixed input and
PyTorch's softmaxed output, then times PyTorch eager and TorchScript frozen
with optimize_for_inference at the given thread count.

usage: scripts/torch_peer.py resnet18|resnet50 OUT_DIR [--threads T] [--repeat R]
"""
import argparse
import os
import statistics
import time

import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import make_input, make_net  # noqa: E402  the very same weights as the ONNX files


def temper_name(name):
    # layer1.0.downsample.0.weight -> layer1_0_downsample_weight, bn: weight/bias/running_* -> gamma/beta/moving_*
    parts = name.split(".")
    leaf = parts[-1]
    mod = parts[:-1]
    is_bn = False
    if "downsample" in mod:
        i = mod.index("downsample")
        is_bn = mod[i + 1] == "1"
        mod = mod[:i] + (["downsample_bn"] if is_bn else ["downsample"])
    elif mod and mod[-1].startswith("bn"):
        is_bn = True
    base = "_".join(mod)
    if is_bn:
        leaf = {"weight": "gamma", "bias": "beta", "running_mean": "moving_mean", "running_var": "moving_var"}.get(leaf, leaf)
    return base + "_" + leaf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=30)
    a = ap.parse_args()
    net = make_net(a.model)
    os.makedirs(a.out, exist_ok=True)
    for name, t in list(net.state_dict().items()):
        if name.endswith("num_batches_tracked"):
            continue
        np.save(os.path.join(a.out, temper_name(name) + ".npy"), t.detach().numpy().astype(np.float32))
    x = make_input()
    np.save(os.path.join(a.out, "input.npy"), x.numpy())
    torch.set_num_threads(a.threads)
    with torch.no_grad():
        y = torch.softmax(net(x), dim=1)
        np.save(os.path.join(a.out, "torch_output.npy"), y.numpy())
        frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(net, x).eval()))
        results = {}
        for label, f in (("eager", net), ("torchscript", frozen)):
            for _ in range(3):
                f(x)
            ts = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                f(x)
                ts.append(time.perf_counter() - t0)
            results[label] = statistics.median(ts) * 1e3
    for label, ms in results.items():
        print("pytorch %s %d thread%s: median %.3f ms" % (label, a.threads, "s" if a.threads > 1 else "", ms))


if __name__ == "__main__":
    main()
