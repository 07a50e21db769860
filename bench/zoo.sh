#!/usr/bin/env bash
# zoo.sh [MODEL...]: every torchvision classification network (or the ones
# named) exported to ONNX (scripts/export_models.py: random weights, opset
# 13), run by temper, compared with PyTorch: one line per model — refused
# (and why), or the largest difference relative to the largest logit and
# whether the top five classes agree.
set -uo pipefail
cd "$(dirname "$0")/.."
models=${*:-alexnet vgg11 vgg16_bn squeezenet1_0 squeezenet1_1 densenet121 densenet169 googlenet inception_v3 shufflenet_v2_x0_5
  shufflenet_v2_x1_0 mobilenet_v2 mobilenet_v3_small mobilenet_v3_large mnasnet0_5 mnasnet1_0 efficientnet_b0 efficientnet_b3
  efficientnet_v2_s regnet_x_400mf regnet_y_400mf regnet_y_1_6gf convnext_tiny resnet18 resnet50 resnext50_32x4d wide_resnet50_2}
out=${ZOO_DIR:-/tmp/temper-zoo}
mkdir -p "$out"
for m in $models; do
  [ -f "$out/$m.onnx" ] || /usr/bin/python3 scripts/export_models.py "$out" "$m" >/dev/null 2>&1 || { echo "$m: export failed"; continue; }
  rm -rf "$out/out_$m"
  msg=$(build/temper run "$out/$m.onnx" --input data="$out/$m.input.npy" --save-output "$out/out_$m" --repeat 1 2>&1)
  if [ ! -f "$out/out_$m/output_0.npy" ]; then
    echo "$m: refused: $(echo "$msg" | grep -m1 -i 'unsupported\|error\|not supported' | sed 's/^.*unsupported/unsupported/' | cut -c1-150)"
    continue
  fi
  /usr/bin/python3 -c "
import numpy as np
a = np.load('$out/out_$m/output_0.npy').ravel(); b = np.load('$out/$m.output.npy').ravel()
rel = abs(a - b).max() / abs(b).max()
same = list(np.argsort(-a)[:5]) == list(np.argsort(-b)[:5])
print('$m: runs; max difference %.2g of the largest logit; top five %s' % (rel, 'the same' if same else 'DIFFER'))"
done
