"""Drives `mmsched serve --models` with the official Triton HTTP client (tritonclient[http]):
health, metadata, inference on the three built-in models (binary tensors, as the client
sends them by default, and JSON), the error statuses, and a timing of a v2 OCR inference
against POST /api/v1/ocr on the same image. Prints one `key value` line per finding for
the Rust test to assert on.

usage: v2_client.py URL SIGN_PNG SPEECH_WAV
"""

import json
import statistics
import subprocess
import sys
import time
import urllib.request

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

base, sign_png, speech_wav = sys.argv[1], sys.argv[2], sys.argv[3]
# Deadlines far out: this machine also builds and tests while the models run.
SLOW = {"X-Deadline-Ms": "300000"}
c = httpclient.InferenceServerClient(
    url=base.removeprefix("http://"), connection_timeout=60.0, network_timeout=600.0
)

print("live", c.is_server_live())
print("ready", c.is_server_ready())
meta = c.get_server_metadata()
print("server", meta["name"], " ".join(meta["extensions"]))
for model in ["pp-ocrv4", "whisper-tiny.en", "gemma-3-270m"]:
    md = c.get_model_metadata(model)
    inputs = ",".join(f"{i['name']}:{i['datatype']}" for i in md["inputs"])
    outputs = ",".join(o["name"] for o in md["outputs"])
    print("model", model, c.is_model_ready(model), md["versions"][0], inputs, outputs)


def ffmpeg(*args):
    return subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", *args],
        check=True, capture_output=True,
    ).stdout


def missed(result):
    return result.get_response()["parameters"]["deadline_missed"]


# OCR on the PNG file as one BYTES element (binary in, binary out: the client's default).
png = open(sign_png, "rb").read()
image_file = httpclient.InferInput("image_file", [1], "BYTES")
image_file.set_data_from_numpy(np.array([png], dtype=np.object_))
r = c.infer("pp-ocrv4", [image_file], headers=SLOW)
print("ocr_file", " | ".join(t.decode() for t in r.as_numpy("text")))
print("ocr_boxes", "x".join(str(d) for d in r.as_numpy("boxes").shape))
print("ocr_missed", missed(r))

# OCR on RGB pixels [H, W, 3], UINT8 (ffmpeg decodes the PNG; no imaging package here).
width, height = 640, 360
pixels = np.frombuffer(ffmpeg("-i", sign_png, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"), np.uint8)
image = httpclient.InferInput("image", [height, width, 3], "UINT8")
image.set_data_from_numpy(pixels.reshape(height, width, 3))
r = c.infer("pp-ocrv4", [image], headers=SLOW)
print("ocr_pixels", " | ".join(t.decode() for t in r.as_numpy("text")))
# The same pixels gzip-compressed (Content-Encoding: gzip). The client adds that header to
# the dict it is given, so it gets a copy.
r = c.infer("pp-ocrv4", [image], headers=dict(SLOW), request_compression_algorithm="gzip")
print("ocr_gzip", " | ".join(t.decode() for t in r.as_numpy("text")))

# Speech: the WAV file as BYTES, and 16 kHz FP32 samples [1, N] sent as JSON with a JSON
# answer and the deadline as a parameter.
wav = open(speech_wav, "rb").read()
audio_file = httpclient.InferInput("audio_file", [1], "BYTES")
audio_file.set_data_from_numpy(np.array([wav], dtype=np.object_))
r = c.infer("whisper-tiny.en", [audio_file], headers=SLOW)
print("asr_file", r.as_numpy("text")[0].decode())
samples = np.frombuffer(ffmpeg("-i", speech_wav, "-ar", "16000", "-ac", "1", "-f", "f32le", "-"), np.float32)
audio = httpclient.InferInput("audio", [1, len(samples)], "FP32")
audio.set_data_from_numpy(samples.reshape(1, -1), binary_data=False)
r = c.infer(
    "whisper-tiny.en", [audio],
    outputs=[httpclient.InferRequestedOutput("text", binary_data=False)],
    parameters={"deadline_ms": 300000},
)
heard = r.as_numpy("text")[0]
print("asr_samples", heard.decode() if isinstance(heard, bytes) else heard)
print("asr_deadline", r.get_response()["parameters"]["deadline_ms"])

# Text with max_tokens: greedy, so the same answer as POST /v1/completions gives.
prompt = "The three primary colours are"
text_input = httpclient.InferInput("text_input", [1], "BYTES")
text_input.set_data_from_numpy(np.array([prompt.encode()], dtype=np.object_))
r = c.infer("gemma-3-270m", [text_input], parameters={"max_tokens": 8}, headers=SLOW)
v2_text = r.as_numpy("text_output")[0].decode()
body = json.dumps({"model": "gemma-3-270m", "prompt": prompt, "max_tokens": 8}).encode()
req = urllib.request.Request(
    base + "/v1/completions", body, {"Content-Type": "application/json", **SLOW}
)
with urllib.request.urlopen(req, timeout=600) as resp:
    openai_text = json.load(resp)["choices"][0]["text"]
print("llm_text", json.dumps(v2_text))
print("llm_same_as_completions", v2_text == openai_text)

# Errors: an unknown model, a wrong datatype.
try:
    c.get_model_metadata("resnet50")
    print("unknown_model accepted")
except InferenceServerException as e:
    print("unknown_model", e.status(), e.message())
try:
    wrong = httpclient.InferInput("text_input", [1], "FP32")
    wrong.set_data_from_numpy(np.array([1.0], dtype=np.float32))
    c.infer("gemma-3-270m", [wrong])
    print("wrong_datatype accepted")
except InferenceServerException as e:
    print("wrong_datatype", e.status(), e.message())
print("unknown_ready", c.is_model_ready("resnet50"))


# The same image through both endpoints, alternating, five times each: median ms.
def timed(call):
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def v2_ocr():
    c.infer("pp-ocrv4", [image_file], headers=SLOW)


def api_ocr():
    req = urllib.request.Request(base + "/api/v1/ocr", png, SLOW)
    with urllib.request.urlopen(req, timeout=600) as resp:
        resp.read()


v2_ms, api_ms = [], []
for _ in range(5):
    v2_ms.append(timed(v2_ocr))
    api_ms.append(timed(api_ocr))
print("latency_ms v2 %.1f api %.1f" % (statistics.median(v2_ms), statistics.median(api_ms)))
