"""Drives a model of the user's own served by `mmsched serve --models --model-config` with
the official Triton HTTP client (tritonclient[http]): its metadata as read from the graph,
an image file and raw FP32 tensors in, its outputs and classes back, and the 400 of a
tensor of the wrong shape. Prints one `key value` line per finding for the Rust test.

usage: v2_own_model.py URL MODEL PAGE_PNG TURNED_PNG
"""

import sys

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

base, model, page_png, turned_png = sys.argv[1:5]
SLOW = {"X-Deadline-Ms": "300000"}
c = httpclient.InferenceServerClient(
    url=base.removeprefix("http://"), connection_timeout=60.0, network_timeout=600.0
)

md = c.get_model_metadata(model)
inputs = ",".join(f"{i['name']}:{i['datatype']}:{i['shape']}" for i in md["inputs"])
outputs = ",".join(o["name"] for o in md["outputs"])
print("model", model, c.is_model_ready(model), inputs.replace(" ", ""), outputs)


def classes_of(path):
    with open(path, "rb") as f:
        data = f.read()
    t = httpclient.InferInput("image_file", [1], "BYTES")
    t.set_data_from_numpy(np.array([data], dtype=np.object_))
    r = c.infer(model, [t], headers=SLOW)
    best = r.as_numpy("classes")[0][0]
    return (best.decode() if isinstance(best, bytes) else best), r


best, r = classes_of(page_png)
print("upright", best.split(":")[2])
print("scores_shape", "x".join(str(d) for d in r.as_numpy("fetch_name_0").shape))
print("missed", r.get_response()["parameters"]["deadline_missed"])
best, _ = classes_of(turned_png)
print("turned", best.split(":")[2])

x = np.zeros((1, 3, 224, 224), dtype=np.float32)
t = httpclient.InferInput("x", list(x.shape), "FP32")
t.set_data_from_numpy(x)
r = c.infer(model, [t], headers=SLOW)
print("tensor_shape", "x".join(str(d) for d in r.as_numpy("fetch_name_0").shape))

bad = np.zeros((1, 3, 32, 32), dtype=np.float32)
t = httpclient.InferInput("x", list(bad.shape), "FP32")
t.set_data_from_numpy(bad)
try:
    c.infer(model, [t], headers=SLOW)
    print("wrong_shape accepted")
except InferenceServerException as e:
    print("wrong_shape", e.status(), e.message())

with open(page_png, "rb") as f:
    page = httpclient.InferInput("image_file", [1], "BYTES")
    page.set_data_from_numpy(np.array([f.read()], dtype=np.object_))
t = httpclient.InferInput("x", list(x.shape), "FP32")
t.set_data_from_numpy(x)
try:
    c.infer(model, [page, t], headers=SLOW)
    print("both accepted")
except InferenceServerException as e:
    print("both", e.status(), e.message())
