"""The official Triton HTTP client (tritonclient[http]) against `serve --models --model
toy=FILE.gguf`: the text model is served over the v2 protocol under the name it was given,
its metadata names it, a prompt is answered by it, and the default model's name is not
served. Prints one `key value` line per check. Usage: own_gguf_v2_client.py URL"""

import sys

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

c = httpclient.InferenceServerClient(
    url=sys.argv[1].removeprefix("http://"), connection_timeout=60.0, network_timeout=600.0
)
meta = c.get_model_metadata("toy")
print("v2_name", meta["name"])
print("v2_ready", c.is_model_ready("toy"))
prompt = httpclient.InferInput("text_input", [1], "BYTES")
prompt.set_data_from_numpy(np.array([b"hello world"], dtype=np.object_))
answer = c.infer(
    "toy",
    [prompt],
    parameters={"max_tokens": 4, "temperature": 0},
    headers={"X-Deadline-Ms": "300000"},
)
print("v2_model", answer.get_response()["model_name"])
print("v2_text", answer.as_numpy("text_output") is not None)
try:
    c.get_model_metadata("gemma-3-270m")
    print("v2_default served")
except InferenceServerException as e:
    print("v2_default", e.status())
