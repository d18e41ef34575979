"""Writes a tiny ONNX detector with ONNX's own helpers: an image input `images`
[1, 3, 64, 64] and one output `output0` [1, 6, 3] in the YOLOv8 layout (centre x, centre
y, width, height, then the scores of classes `cat` and `dog`, per candidate), the same
three candidates whatever the image — two overlapping dogs and a cat — so a test knows the
boxes a decoder must find. The class names are in the metadata entry `names`, as YOLO
exporters write them.

Usage: onnx_constant_detector.py OUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CANDIDATES = np.array(
    [
        # cx, cy, w, h, cat, dog
        [20.0, 20.0, 10.0, 10.0, 0.1, 0.9],
        [21.0, 20.0, 10.0, 10.0, 0.1, 0.8],
        [48.0, 40.0, 8.0, 16.0, 0.7, 0.2],
    ],
    dtype=np.float32,
)


def main() -> None:
    out = sys.argv[1]
    boxes = numpy_helper.from_array(CANDIDATES.T.reshape(1, 6, 3).copy(), "candidates")
    zero = numpy_helper.from_array(np.zeros((1,), dtype=np.float32), "zero")
    # output0 = candidates + 0 × ReduceSum(images): the image is read, the result is fixed.
    nodes = [
        helper.make_node("ReduceSum", ["images"], ["total"], keepdims=0),
        helper.make_node("Mul", ["total", "zero"], ["nothing"]),
        helper.make_node("Add", ["candidates", "nothing"], ["output0"]),
    ]
    graph = helper.make_graph(
        nodes,
        "constant-detector",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 6, 3])],
        initializer=[boxes, zero],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    entry = model.metadata_props.add()
    entry.key, entry.value = "names", "{0: 'cat', 1: 'dog'}"
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
