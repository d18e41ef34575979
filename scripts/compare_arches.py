"""Compares what the Arm build of mmsched printed under emulation with what the x86 build
printed for the same command (run by scripts/check-aarch64.sh).

    compare_arches.py KIND X86_JSON ARM_JSON

KIND is one of:
  ocr   `infer ocr --json`: the lines' texts must be equal, in order.
  vad   `infer vad --json`: the speech segments must be equal.
  asr   `infer asr --json`: the word error rate of the Arm transcript against the x86 one
        must be 0 (words compared lowercase, without punctuation).
  llm   `infer llm --json` (greedy): the token ids must be equal up to the first step where
        they differ, if any; that step must be a near tie: each build's runner-up there is
        the other's token and both margins (highest logit minus second-highest) are at most
        NEAR_TIE. The tokens after it continue different texts and are not compared. Any
        other difference fails (docs/devices.md says why Arm's kernels round differently).
  run   `run --results FILE` (NDJSON): every result of the Arm run whose input the x86 run
        also answered (same stream, kind and capture time) must have the same text. Which
        inputs the emulated run answers within its 10 s depends on how slowly it runs, so
        kinds it did not answer are listed as not compared (and the line says so), not
        counted as a difference.

Prints one line per check and exits 1 on a difference.
"""

import json
import re
import sys


def words(text):
    return re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split()


def wer(reference, hypothesis):
    """Word error rate: word-level edit distance over the reference's length."""
    ref, hyp = words(reference), words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[len(hyp)] / max(len(ref), 1)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def ocr(x86, arm):
    a = [line["text"] for line in x86["lines"]]
    b = [line["text"] for line in arm["lines"]]
    return a == b and len(a) > 0, f"x86 {a} arm {b} (engines {x86['engine']}/{arm['engine']})"


def vad(x86, arm):
    a = [(s["start_ms"], s["end_ms"]) for s in x86["segments"]]
    b = [(s["start_ms"], s["end_ms"]) for s in arm["segments"]]
    detail = (
        f"{len(a)} segments; speech chunks x86 {x86['speech_chunks']} arm {arm['speech_chunks']}"
        f" (engines {x86['engine']}/{arm['engine']})"
    )
    return a == b and len(a) > 0, detail if a == b else f"x86 {a} arm {b}"


def asr(x86, arm):
    rate = wer(x86["text"], arm["text"])
    return rate == 0 and words(x86["text"]), f"WER {rate:.3f}: x86 {x86['text']!r} arm {arm['text']!r}"


# How far apart two candidates' logits may be for a swap between the builds to count as
# rounding, in logits. Measured (docs/devices.md): on the steps both builds agree on, the
# Arm build's margins differ from the x86 build's by up to 0.14, and the one swap seen
# had margins of 0.15 (x86) and 0.10 (Arm); the top candidate's margin is 0.25-4.6 on the
# other steps of that answer.
NEAR_TIE = 0.25


def llm(x86, arm):
    a, b = x86["token_ids"], arm["token_ids"]
    if a == b and a:
        return True, f"{len(a)} tokens equal: {arm['text']!r}"
    first = next((i for i, (p, q) in enumerate(zip(a, b)) if p != q), min(len(a), len(b)))
    texts = f"x86 {x86['text']!r} arm {arm['text']!r}"
    # How much the builds' rounding moves a margin, seen on the steps where they agree.
    moved = [
        abs(p["margin"] - q["margin"])
        for p, q in zip(x86["top_two"][:first], arm["top_two"][:first])
        if p is not None and q is not None
    ]
    if moved:
        texts += f"; on the equal steps the margins differ by at most {max(moved):.4f}"
    if first >= min(len(a), len(b)):
        return False, f"one answer stops early at step {first}: {texts}"
    top_a, top_b = x86["top_two"][first], arm["top_two"][first]
    swapped = (
        top_a is not None
        and top_b is not None
        and top_a["runner_up"] == b[first]
        and top_b["runner_up"] == a[first]
    )
    margins = (
        f"margins x86 {top_a['margin']:.4f} arm {top_b['margin']:.4f}"
        if top_a is not None and top_b is not None
        else "no margin"
    )
    if swapped and max(top_a["margin"], top_b["margin"]) <= NEAR_TIE:
        return True, (
            f"NEAR TIE at step {first} (tokens 0-{first - 1} equal): the two builds' top two "
            f"candidates swap, {margins} (at most {NEAR_TIE}); the texts after it are not "
            f"compared: {texts}"
        )
    return False, f"tokens differ from step {first}, {margins}: {texts}"


def load_results(path):
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    # Capture times are on the device timeline of each run; inputs are at whole multiples
    # of their stream's period, so rounding to 1 ms keys the same input in both runs.
    return {(r["stream"], r["kind"], round(r["capture_ms"])): r for r in records}


def run(x86_path, arm_path):
    x86, arm = load_results(x86_path), load_results(arm_path)
    shared = sorted(set(x86) & set(arm))
    differ = [k for k in shared if x86[k]["text"] != arm[k]["text"]]
    kinds_x86 = {k[1] for k in x86}
    kinds_arm = {k[1] for k in arm}
    missing = sorted(kinds_x86 - kinds_arm)
    detail = (
        f"results x86 {len(x86)} arm {len(arm)}, {len(shared)} of the same inputs, "
        f"{len(differ)} differ; kinds x86 {sorted(kinds_x86)} arm {sorted(kinds_arm)}"
    )
    for k in differ:
        detail += f"\n    {k}: x86 {x86[k]['text']!r} arm {arm[k]['text']!r}"
    if missing:
        detail += f"\n    NOT COMPARED: the emulated run answered no {', '.join(missing)} input in time"
    return not differ, detail


def main():
    kind, x86_path, arm_path = sys.argv[1:4]
    if kind == "run":
        ok, detail = run(x86_path, arm_path)
    else:
        check = {"ocr": ocr, "vad": vad, "asr": asr, "llm": llm}[kind]
        ok, detail = check(load(x86_path), load(arm_path))
    if not ok:
        label = "DIFFERENT"
    elif "NOT COMPARED" in detail:
        label = "partial"
    elif "NEAR TIE" in detail:
        label = "near-tie"
    else:
        label = "same"
    print(f"{label:<9} {kind:<4} {detail}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
