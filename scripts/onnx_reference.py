"""Runs an ONNX model on ONNX Runtime's own Python package: the independent reference the
tests hold mmsched's generic ONNX path to.

Usage: onnx_reference.py MODEL INPUT_NAME SHAPE RAW_F32_FILE
  SHAPE is comma-separated (1,3,224,224); the file holds the input's float32 values in
  row-major order, little-endian. Prints {"outputs": [{"name", "shape", "data"}]} as JSON.
"""

import json
import sys

import numpy as np
import onnxruntime as ort


def main() -> None:
    model, name, shape, raw = sys.argv[1:5]
    dims = [int(d) for d in shape.split(",")]
    x = np.fromfile(raw, dtype="<f4").reshape(dims)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    outputs = session.run(None, {name: x})
    print(
        json.dumps(
            {
                "outputs": [
                    {"name": o.name, "shape": list(v.shape), "data": v.ravel().tolist()}
                    for o, v in zip(session.get_outputs(), outputs)
                ]
            }
        )
    )


if __name__ == "__main__":
    main()
