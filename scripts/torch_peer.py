#!/usr/bin/python3
"""The PyTorch peer for bench/e2e.sh (run with Debian's /usr/bin/python3).

Builds torchvision's resnet18 / resnet50 (weights=None, fixed seed, batch-norm
statistics randomised so folding mistakes show), writes every parameter as
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

import numpy as np
import torch
import torchvision


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
    torch.manual_seed(0)
    net = getattr(torchvision.models, a.model)(weights=None).eval()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    os.makedirs(a.out, exist_ok=True)
    for name, t in list(net.state_dict().items()):
        if name.endswith("num_batches_tracked"):
            continue
        np.save(os.path.join(a.out, temper_name(name) + ".npy"), t.detach().numpy().astype(np.float32))
    x = torch.from_numpy(np.random.RandomState(0).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32))
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
