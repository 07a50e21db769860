// ort_peer.js: the ONNX Runtime peer for bench/e2e.sh. Times an ONNX model
// with all graph optimizations at a given thread count.
// Install once (npm's onnxruntime-node ships the CPU library):
//   (mkdir -p out/ort && cd out/ort && npm install onnxruntime-node --onnxruntime-node-install=skip)
// usage: NODE_PATH=out/ort/node_modules node bench/ort_peer.js MODEL.onnx INPUT.npy THREADS REPEAT
const ort = require('onnxruntime-node');
const fs = require('fs');

function readNpy(path) {
  const b = fs.readFileSync(path);
  const hlen = b.readUInt16LE(8);
  const header = b.toString('latin1', 10, 10 + hlen);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter(s => s.trim()).map(Number);
  const off = 10 + hlen;
  const data = new Float32Array(b.buffer.slice(b.byteOffset + off, b.byteOffset + b.length));
  return { shape, data };
}

(async () => {
  const [model, input, threads, repeat] = process.argv.slice(2);
  const s = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'all', intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
  });
  const x = readNpy(input);
  const feeds = { [s.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
  for (let i = 0; i < 3; i++) await s.run(feeds);
  const ts = [];
  for (let i = 0; i < Number(repeat); i++) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    ts.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ts.sort((a, b) => a - b);
  console.log(`onnxruntime ${ort.env.versions ? ort.env.versions.common : ''} ${threads} threads: median ${ts[ts.length >> 1].toFixed(3)} ms`);
})();
