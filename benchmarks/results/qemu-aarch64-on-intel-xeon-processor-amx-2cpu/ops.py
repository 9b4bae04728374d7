"""Which float op rounds with the padded length? Softmax over keys, and the product of the weights and V,
each for a sentence's row alone (length L) and padded to L + P with masked keys."""
import platform
import numpy as np
import onnxruntime as ort
from onnx import helper, TensorProto

def session(node, inputs, outputs):
    g = helper.make_graph([node], "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]); m.ir_version = 8
    o = ort.SessionOptions(); o.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), o, providers=["CPUExecutionProvider"])

f = lambda n, shape: helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
soft = session(helper.make_node("Softmax", ["x"], ["y"], axis=-1), [f("x", None)], [f("y", None)])
mm = session(helper.make_node("MatMul", ["a", "b"], ["c"]), [f("a", None), f("b", None)], [f("c", None)])
rng = np.random.default_rng(0)
worst = {"softmax": 0.0, "matmul": 0.0}
for L in range(3, 60):
    for P in (1, 5, 17, 40):
        x = rng.normal(0, 3, (4, 8, L)).astype(np.float32)
        xp = np.concatenate([x, np.full((4, 8, P), np.finfo(np.float32).min, np.float32)], -1)
        y, yp = soft.run(None, {"x": x})[0], soft.run(None, {"x": xp})[0]
        worst["softmax"] = max(worst["softmax"], float(np.abs(y - yp[..., :L]).max()))
        v = rng.normal(0, 1, (4, L, 64)).astype(np.float32)
        vp = np.concatenate([v, rng.normal(0, 1, (4, P, 64)).astype(np.float32)], 1)
        c, cp = mm.run(None, {"a": y, "b": v})[0], mm.run(None, {"a": yp, "b": vp})[0]
        worst["matmul"] = max(worst["matmul"], float(np.abs(c - cp).max()))
print(platform.machine(), ort.__version__, {k: f"{v:.3g}" for k, v in worst.items()})
