#!/usr/bin/env python3
"""Writes ResNet models (v1.5, torchvision's layout) in temper's text format,
the way TVM's astext() prints them: batch_norm as a tuple projected with .0.

usage: scripts/gen_resnet.py {18,34,50,block} > examples/resnet18.relay
Plain Python 3, no packages needed."""
import sys


class Model:
    def __init__(self):
        self.params = []   # (name, shape)
        self.lines = []
        self.n = 0

    def param(self, name, shape):
        self.params.append((name, shape))
        return "%" + name

    def bind(self, expr):
        self.lines.append("  %%%d = %s;" % (self.n, expr))
        self.n += 1
        return "%%%d" % (self.n - 1)

    def conv(self, x, name, cin, cout, k, stride=1, pad=0):
        w = self.param(name + "_weight", (cout, cin, k, k))
        attrs = []
        if stride != 1:
            attrs.append("strides=[%d, %d]" % (stride, stride))
        if pad:
            attrs.append("padding=[%d, %d, %d, %d]" % (pad, pad, pad, pad))
        attrs.append("channels=%d" % cout)
        attrs.append("kernel_size=[%d, %d]" % (k, k))
        return self.bind("nn.conv2d(%s, %s, %s)" % (x, w, ", ".join(attrs)))

    def bn(self, x, name, c):
        ps = [self.param("%s_%s" % (name, s), (c,)) for s in ("gamma", "beta", "moving_mean", "moving_var")]
        t = self.bind("nn.batch_norm(%s, %s)" % (x, ", ".join(ps)))
        return self.bind("%s.0" % t)

    def relu(self, x):
        return self.bind("nn.relu(%s)" % x)

    def text(self, result, input_shape):
        head = ["%%data: Tensor[(%s), float32]" % ", ".join(map(str, input_shape))]
        head += ["%%%s: Tensor[(%s), float32]" % (n, ", ".join(map(str, s)) + ("," if len(s) == 1 else ""))
                 for n, s in self.params]
        body = self.lines[:-1] + ["  " + self.lines[-1].split(" = ", 1)[1].rstrip(";")]
        return ('#[version = "0.0.5"]\ndef @main(' + ",\n          ".join(head) + ") {\n" +
                "\n".join(body) + "\n}\n")


def basic_block(m, x, name, cin, cout, stride):
    y = m.relu(m.bn(m.conv(x, name + "_conv1", cin, cout, 3, stride, 1), name + "_bn1", cout))
    y = m.bn(m.conv(y, name + "_conv2", cout, cout, 3, 1, 1), name + "_bn2", cout)
    if stride != 1 or cin != cout:
        x = m.bn(m.conv(x, name + "_downsample", cin, cout, 1, stride, 0), name + "_downsample_bn", cout)
    return m.relu(m.bind("add(%s, %s)" % (y, x)))


def bottleneck(m, x, name, cin, width, stride):
    cout = width * 4
    y = m.relu(m.bn(m.conv(x, name + "_conv1", cin, width, 1), name + "_bn1", width))
    y = m.relu(m.bn(m.conv(y, name + "_conv2", width, width, 3, stride, 1), name + "_bn2", width))
    y = m.bn(m.conv(y, name + "_conv3", width, cout, 1), name + "_bn3", cout)
    if stride != 1 or cin != cout:
        x = m.bn(m.conv(x, name + "_downsample", cin, cout, 1, stride, 0), name + "_downsample_bn", cout)
    return m.relu(m.bind("add(%s, %s)" % (y, x)))


def resnet(depth):
    m = Model()
    x = m.relu(m.bn(m.conv("%data", "conv1", 3, 64, 7, 2, 3), "bn1", 64))
    x = m.bind("nn.max_pool2d(%s, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])" % x)
    blocks = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3]}[depth]
    cin = 64
    for stage, n in enumerate(blocks):
        width = 64 << stage
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            name = "layer%d_%d" % (stage + 1, i)
            if depth >= 50:
                x = bottleneck(m, x, name, cin, width, stride)
                cin = width * 4
            else:
                x = basic_block(m, x, name, cin, width, stride)
                cin = width
    x = m.bind("nn.global_avg_pool2d(%s)" % x)
    x = m.bind("nn.batch_flatten(%s)" % x)
    w = m.param("fc_weight", (1000, cin))
    b = m.param("fc_bias", (1000,))
    x = m.bind("nn.dense(%s, %s, units=1000)" % (x, w))
    x = m.bind("nn.bias_add(%s, %s)" % (x, b))
    m.bind("nn.softmax(%s)" % x)
    return m.text(None, (1, 3, 224, 224))


def block():
    m = Model()
    x = basic_block(m, "%data", "block", 64, 64, 1)
    return m.text(None, (1, 64, 56, 56))


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "18"
    sys.stdout.write(block() if which == "block" else resnet(int(which)))
