#!/usr/bin/python3
"""ONNX's own node conformance tests, for every op temper claims.

usage: run.py TEMPER_BINARY WORKDIR [--one-variant]

The tests come from Debian's python3-onnx (backend-test-tools generate-data,
with numpy's removed aliases restored), into WORKDIR once. Each test whose
nodes are all ops temper claims runs twice through `temper run`: as it is,
and with every input but the first made an initializer (the non-data inputs
— axes, shapes, slopes, scales — as exporters usually write them). Either
temper's outputs equal the expected ones (normwise relative error within
1e-4, the schedules' tolerance), or temper refuses the model with exit 1 and
a message; a wrong answer, a crash or a hang fails the suite. With
--one-variant (the sanitized build) each test runs once: a model with one
input as it is, one with more with the initializers (as exporters write
it). Prints one line per op (passed / refused) and the refusals' reasons.
"""
import collections
import os
import subprocess
import sys
import tempfile

import numpy as np

for alias, t in (("float", float), ("int", int), ("bool", bool), ("object", object)):
    if alias not in np.__dict__:
        setattr(np, alias, t)
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

CLAIMED = {
    "Conv", "BatchNormalization", "Relu", "Clip", "Add", "Sub", "Mul", "Div", "Sigmoid", "MaxPool", "AveragePool",
    "GlobalAveragePool", "GlobalMaxPool", "Flatten", "Reshape", "Gemm", "MatMul", "Concat", "Softmax", "Dropout",
    "Identity", "Pad", "HardSigmoid", "HardSwish", "LeakyRelu", "PRelu", "Tanh", "Erf", "Exp", "Sqrt", "Pow",
    "ReduceMean", "ReduceSum", "ReduceMax", "Transpose", "Slice", "Split", "Squeeze", "Unsqueeze", "LayerNormalization",
}
# must pass, as they are or with initializers: one plain case of every claimed op
MUST_PASS = {
    "test_relu", "test_sigmoid", "test_tanh", "test_erf", "test_exp", "test_sqrt", "test_hardsigmoid", "test_hardswish",
    "test_leakyrelu", "test_prelu_broadcast", "test_add", "test_sub", "test_mul", "test_div", "test_clip",
    "test_transpose_default", "test_transpose_all_permutations_3", "test_reduce_mean_default_axes_keepdims_example",
    "test_reduce_sum_keepdims_example", "test_reduce_max_keepdims_example", "test_globalaveragepool", "test_globalmaxpool",
    "test_maxpool_2d_default", "test_averagepool_2d_default", "test_conv_with_strides_padding", "test_concat_2d_axis_0",
    "test_softmax_axis_1", "test_flatten_axis1", "test_reshape_reordered_all_dims", "test_gemm_default_no_bias",
    "test_matmul_2d", "test_slice", "test_split_equal_parts_1d", "test_squeeze", "test_unsqueeze_axis_0",
    "test_pow_bcast_scalar", "test_layer_normalization_4d_axis1", "test_batchnorm_example", "test_identity",
}


def generate(work):
    root = os.path.join(work, "node")
    if os.path.isdir(root) and len(os.listdir(root)) > 100:
        return root
    script = ("import numpy as np\n"
              "for a, t in (('float', float), ('int', int), ('bool', bool), ('object', object)):\n"
              "    np.__dict__.get(a) or setattr(np, a, t)\n"
              "import sys\nsys.argv = ['backend-test-tools', 'generate-data', '-o', %r]\n"
              "from onnx.backend.test.cmd_tools import main\nmain()\n" % work)
    subprocess.run([sys.executable, "-c", script], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return root


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def run_case(temper, model, inputs, expected, tmp):
    """0 pass, 1 refused (with its message), 2 wrong, 3 crash or hang"""
    args = [temper, "run", model, "--repeat", "1", "--save-output", os.path.join(tmp, "out")]
    for name, arr in inputs:
        if arr.dtype != np.float32:
            return 1, "input %s is %s (temper reads float32 inputs)" % (name, arr.dtype)
        p = os.path.join(tmp, "in_%s.npy" % len(args))
        np.save(p, arr)
        args += ["--input", "%s=%s" % (name, p)]
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return 3, "hang"
    if r.returncode == 1:
        msg = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
        return 1, msg
    if r.returncode != 0:
        return 3, "exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
    for i, want in enumerate(expected):
        p = os.path.join(tmp, "out", "output_%d.npy" % i)
        if not os.path.exists(p):
            return 2, "output %d missing" % i
        got = np.load(p).astype(np.float64).ravel()
        w = want.astype(np.float64).ravel()
        if got.size != w.size:
            return 2, "output %d has %d values, expected %d" % (i, got.size, w.size)
        scale = max(np.abs(w).max() if w.size else 0, 1e-30)
        err = np.abs(got - w).max() / scale if w.size else 0
        if not np.isfinite(got).all() and not np.array_equal(np.isnan(got), np.isnan(w)):
            return 2, "output %d: non-finite values" % i
        if err > 1e-4 and np.linalg.norm(got - w) > 1e-4 * np.linalg.norm(w):
            return 2, "output %d: relative error %.3g" % (i, err)
    return 0, ""


def with_initializers(model, inputs, path):
    """the model with every input but the first as an initializer"""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = [m.graph.input[0]]
    for vi, (name, arr) in zip(list(m.graph.input)[1:], inputs[1:]):
        m.graph.initializer.append(numpy_helper.from_array(arr, name))
    del m.graph.input[:]
    m.graph.input.extend(keep)
    onnx.save(m, path)


def main():
    temper, work = sys.argv[1], sys.argv[2]
    one_variant = "--one-variant" in sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    root = generate(work)
    per_op = collections.defaultdict(lambda: [0, 0])   # passed, refused (cases)
    reasons = collections.Counter()
    failures, passed_tests = [], set()
    for test in sorted(os.listdir(root)):
        d = os.path.join(root, test)
        mpath = os.path.join(d, "model.onnx")
        sets = sorted(x for x in os.listdir(d) if x.startswith("test_data_set_")) if os.path.isdir(d) else []
        if not os.path.exists(mpath) or not sets:
            continue
        model = onnx.load(mpath)
        ops = {n.op_type for n in model.graph.node}
        if not ops or not ops <= CLAIMED:
            continue
        op = model.graph.node[0].op_type if len(model.graph.node) == 1 else "+".join(sorted(ops))
        ds = os.path.join(d, sets[0])
        init_names = {t.name for t in model.graph.initializer}
        graph_inputs = [vi for vi in model.graph.input if vi.name not in init_names]
        if not all(vi.type.HasField("tensor_type") for vi in list(graph_inputs) + list(model.graph.output)):
            continue   # sequences and optionals: not tensors, not for a CNN compiler
        names = [vi.name for vi in graph_inputs]
        inputs = [(n, numpy_helper.to_array(load_pb(os.path.join(ds, "input_%d.pb" % i)))) for i, n in enumerate(names)]
        expected = [numpy_helper.to_array(load_pb(os.path.join(ds, "output_%d.pb" % i))) for i in range(len(model.graph.output))]
        with tempfile.TemporaryDirectory() as tmp:
            variants = [("as-is", mpath, inputs)]
            if len(inputs) > 1:
                p = os.path.join(tmp, "init.onnx")
                with_initializers(model, inputs, p)
                variants.append(("initializers", p, inputs[:1]))
                if one_variant:
                    variants.pop(0)
            for vname, path, ins in variants:
                code, msg = run_case(temper, path, ins, expected, tmp)
                if code == 0:
                    per_op[op][0] += 1
                    passed_tests.add(test)
                elif code == 1:
                    per_op[op][1] += 1
                    reasons[msg.split(": ", 2)[-1][:90]] += 1
                else:
                    failures.append("%s (%s): %s" % (test, vname, msg))
    for op in sorted(per_op):
        print("%-30s %3d passed, %3d refused" % (op, per_op[op][0], per_op[op][1]))
    total = [sum(v[0] for v in per_op.values()), sum(v[1] for v in per_op.values())]
    print("all: %d cases passed, %d refused cleanly, %d wrong or crashed" % (total[0], total[1], len(failures)))
    print("most common reasons for refusing:")
    for r, c in reasons.most_common(12):
        print("  %4d  %s" % (c, r))
    missing = sorted(MUST_PASS - passed_tests)
    for f in failures:
        print("FAILED:", f)
    if missing:
        print("expected to pass, did not:", ", ".join(missing))
    return 1 if failures or missing else 0


if __name__ == "__main__":
    sys.exit(main())
