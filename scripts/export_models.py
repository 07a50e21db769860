#!/usr/bin/python3
"""Exports torchvision models to ONNX for temper's tests and benchmarks (run
with Debian's /usr/bin/python3: python3-torch, python3-torchvision).

For each model: weights=None with a fixed seed, batch-norm statistics
randomised (so folding mistakes show), opset 13, static shapes; a fixed input
and PyTorch's output beside it:
    OUT/NAME.onnx  OUT/NAME.input.npy  OUT/NAME.output.npy
Models are generated, not committed.

usage: scripts/export_models.py OUT [resnet18 resnet50 mobilenet_v2 ...]
"""
import os
import sys

import numpy as np
import torch
import torchvision


def make_net(name):
    """torchvision's model with a fixed seed and randomised batch-norm statistics"""
    torch.manual_seed(0)
    net = getattr(torchvision.models, name)(weights=None).eval()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    return net


def make_input():
    return torch.from_numpy(np.random.RandomState(0).uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32))


def export(name, out):
    net = make_net(name)
    x = make_input()
    with torch.no_grad():
        y = net(x)
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(net, x, path, opset_version=13, input_names=["data"], output_names=["logits"],
                      do_constant_folding=True)
    np.save(os.path.join(out, name + ".input.npy"), x.numpy())
    np.save(os.path.join(out, name + ".output.npy"), y.numpy())
    print("wrote", path)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "out/models"
    names = sys.argv[2:] or ["resnet18", "resnet50", "mobilenet_v2"]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for n in names:
        export(n, out)


if __name__ == "__main__":
    main()
