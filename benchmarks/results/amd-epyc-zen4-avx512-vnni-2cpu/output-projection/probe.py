"""One-node MatMulInteger (the int8 output projection, 256 x N), batch-1 time: 1 thread against
2 threads spinning with the worker pinned to CPU 1 (Translator(low_latency=True)'s decoder layout)."""
import os, time, statistics
import numpy as np, onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper
os.sched_setaffinity(0, {0})
rng = np.random.default_rng(0)
def graph(n):
    w = rng.integers(-127, 128, size=(256, n), dtype=np.int8)
    g = helper.make_graph([helper.make_node("MatMulInteger", ["x", "w", "zp"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, ["m", 256])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, ["m", n])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(128, np.uint8), "zp")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
def session(model, two):
    so = ort.SessionOptions(); so.inter_op_num_threads = 1
    so.intra_op_num_threads = 2 if two else 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if two else "0")
    if two: so.add_session_config_entry("session.intra_op_thread_affinities", "2")
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
sweep = np.ones(6 * 2**20 // 8)
for n in (16000, 8000, 4000):
    model = graph(n)
    s = {two: session(model, two) for two in (False, True)}
    for m in (1, 4):
        x = rng.integers(0, 256, size=(m, 256), dtype=np.uint8)
        for cold in (False, True):
            res = {}
            for two in (False, True):
                times = []
                for _ in range(1500):
                    if cold: sweep.sum()
                    t = time.perf_counter(); s[two].run(None, {"x": x}); times.append(time.perf_counter() - t)
                res[two] = statistics.median(times[200:]) * 1e6
            print(f"N={n} M={m} {'cold' if cold else 'warm'}: 1 thread {res[False]:.0f} us, 2 spinning pinned {res[True]:.0f} us", flush=True)
