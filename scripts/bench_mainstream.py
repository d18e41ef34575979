"""The mainstream engines' figures for `scripts/bench-mainstream.sh` (run it, not this file).

Every figure is measured the way `mmsched bench models` measures mmsched's side:

- PP-OCRv4 det on a 1x3x320x320 input and rec on one 1x3x48x320 line, ONNX Runtime called
  directly (`InferenceSession.run`), intra-op threads 1 (and 2), inter-op 1, sequential
  execution; medians and P99 of timed runs after warm-up. The input values do not change
  the work these graphs do, so a fixed pseudo-random tensor is used.
- Whisper tiny.en on the 10 s `beckett.wav`: faster-whisper (CTranslate2) with int8
  weights, greedy (beam 1), no timestamps, English, no VAD filter; the time covers the log-mel,
  the encoder and the decoding (the whole `transcribe` call, segments consumed); RTF = time /
  clip length. The 1- and 2-thread models run alternately so both see the same load.
- Gemma-3 270M Q4_K_M through llama-cpp-python: prefill tok/s = prompt tokens / time of one
  `eval` of the prompt; decode tok/s = 1 / median time of one `eval` of one token (greedy,
  argmax of the logits), 32 tokens per generation; 1- and 2-thread models alternate.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import wave

import numpy as np

# A prompt of about 45 tokens for prefill, as in the figures quoted for mmsched.
PREFILL_PROMPT = (
    "The scheduler shares one small device between a camera that reads text, a microphone "
    "that listens for speech and a language model that answers questions, so every model "
    "must finish before its deadline while the others wait for the"
)
DECODE_PROMPT = "The three primary colours of light are"


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def ms_stats(seconds):
    return {
        "p50": round(statistics.median(seconds) * 1e3, 3),
        "p99": round(pct(seconds, 0.99) * 1e3, 3),
    }


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def bench_ocr(home, runs):
    import onnxruntime as ort

    def session(path, threads):
        o = ort.SessionOptions()
        o.intra_op_num_threads = threads
        o.inter_op_num_threads = 1
        o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])

    rng = np.random.default_rng(7)
    models = {
        "det": (os.path.join(home, "models/ppocr-v4/det.onnx"), (1, 3, 320, 320)),
        "rec_box": (os.path.join(home, "models/ppocr-v4/rec.onnx"), (1, 3, 48, 320)),
    }
    out = {"engine": f"onnxruntime {ort.__version__} (Python)"}
    for name, (path, shape) in models.items():
        x = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
        sessions = {t: session(path, t) for t in (1, 2)}
        feeds = {t: {s.get_inputs()[0].name: x} for t, s in sessions.items()}
        times = {1: [], 2: []}
        for _ in range(3):
            for t, s in sessions.items():
                s.run(None, feeds[t])
        for i in range(runs):
            order = (1, 2) if i % 2 == 0 else (2, 1)
            for t in order:
                t0 = time.perf_counter()
                sessions[t].run(None, feeds[t])
                times[t].append(time.perf_counter() - t0)
        for t in (1, 2):
            st = ms_stats(times[t])
            suffix = "" if t == 1 else "_2t"
            out[f"{name}_ms_p50{suffix}"] = st["p50"]
            out[f"{name}_ms_p99{suffix}"] = st["p99"]
    return out


def bench_asr(home, ct2_dir, runs):
    import ctranslate2
    import faster_whisper

    wav = os.path.join(home, "testdata/beckett.wav")
    with wave.open(wav) as w:
        seconds = w.getnframes() / w.getframerate()
    models = {
        t: faster_whisper.WhisperModel(ct2_dir, device="cpu", compute_type="int8", cpu_threads=t)
        for t in (1, 2)
    }

    def transcribe(model):
        segments, _ = model.transcribe(
            wav,
            language="en",
            beam_size=1,
            best_of=1,
            temperature=0.0,
            without_timestamps=True,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        return " ".join(s.text.strip() for s in segments)

    text = ""
    for m in models.values():
        text = transcribe(m)
    times = {1: [], 2: []}
    for i in range(runs):
        order = (1, 2) if i % 2 == 0 else (2, 1)
        for t in order:
            t0 = time.perf_counter()
            transcribe(models[t])
            times[t].append(time.perf_counter() - t0)
    out = {
        "engine": f"ctranslate2 {ctranslate2.__version__} int8 (faster-whisper {faster_whisper.__version__})",
        "clip_s": round(seconds, 3),
        "text": text,
    }
    for t in (1, 2):
        med = statistics.median(times[t])
        out[f"seconds_p50_{t}t"] = round(med, 4)
        out[f"rtf_{t}t"] = round(med / seconds, 4)
        out[f"rtf_min_{t}t"] = round(min(times[t]) / seconds, 4)
        out[f"rtf_max_{t}t"] = round(max(times[t]) / seconds, 4)
    return out


def bench_llm(home, runs, tokens):
    import llama_cpp

    path = os.path.join(home, "models/gemma3-270m/gemma-3-270m-q4_k_m.gguf")
    models = {
        t: llama_cpp.Llama(
            model_path=path, n_threads=t, n_threads_batch=t, n_ctx=512, verbose=False
        )
        for t in (1, 2)
    }
    prefill = {1: [], 2: []}
    steps = {1: [], 2: []}
    texts = {}

    def generation(t):
        m = models[t]
        ids = m.tokenize(PREFILL_PROMPT.encode(), add_bos=True)
        m.reset()
        t0 = time.perf_counter()
        m.eval(ids)
        prefill[t].append(len(ids) / (time.perf_counter() - t0))
        ids = m.tokenize(DECODE_PROMPT.encode(), add_bos=True)
        m.reset()
        m.eval(ids)
        out = []
        for _ in range(tokens):
            nxt = int(np.argmax(m.scores[m.n_tokens - 1]))
            out.append(nxt)
            t0 = time.perf_counter()
            m.eval([nxt])
            steps[t].append(time.perf_counter() - t0)
        texts[t] = m.detokenize(out).decode(errors="replace")

    for t in (1, 2):
        generation(t)
    for s in (prefill, steps):
        s[1].clear()
        s[2].clear()
    for i in range(runs):
        for t in (1, 2) if i % 2 == 0 else (2, 1):
            generation(t)
    out = {
        "engine": f"llama.cpp (llama-cpp-python {llama_cpp.__version__})",
        "prefill_prompt_tokens": len(models[1].tokenize(PREFILL_PROMPT.encode(), add_bos=True)),
        "text": texts[1],
        "greedy_text_same_1t_2t": texts[1] == texts[2],
    }
    for t in (1, 2):
        out[f"decode_tok_s_{t}t"] = round(1.0 / statistics.median(steps[t]), 2)
        out[f"prefill_tok_s_{t}t"] = round(statistics.median(prefill[t]), 2)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--home", required=True)
    p.add_argument("--ct2-dir", required=True)
    p.add_argument("--llama-error", default="")
    p.add_argument("--runs", type=int, default=30, help="timed OCR runs per model and thread count")
    p.add_argument("--asr-runs", type=int, default=5, help="timed Whisper runs per thread count")
    p.add_argument("--llm-runs", type=int, default=5, help="generations per thread count")
    p.add_argument("--llm-tokens", type=int, default=32)
    p.add_argument("--only", default="ocr,asr,llm", help="comma-separated: ocr, asr, llm")
    a = p.parse_args()
    parts = set(a.only.split(","))
    # Other processes disturb every figure: the load averages say how busy the machine was.
    result = {
        "cpu": cpu_model(),
        "threads_available": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }
    if "ocr" in parts:
        result["ocr"] = bench_ocr(a.home, a.runs)
    if "asr" in parts:
        result["asr"] = bench_asr(a.home, a.ct2_dir, a.asr_runs)
    if "llm" in parts:
        if a.llama_error:
            result["llm"] = {"error": a.llama_error}
        else:
            try:
                result["llm"] = bench_llm(a.home, a.llm_runs, a.llm_tokens)
            except Exception as e:  # report and keep the other figures
                result["llm"] = {"error": f"{type(e).__name__}: {e}"}
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
