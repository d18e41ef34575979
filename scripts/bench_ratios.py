"""mmsched's engines against the mainstream ones, in alternation (run `scripts/bench-ratios.sh`).

One `mmsched bench models --json` and one `scripts/bench-mainstream.sh` make a pair; the
pairs alternate which side runs first. On a shared machine the load changes from minute to
minute by more than the engines differ, so a figure is only compared with the other side's
figure of the same pair. For each figure the table gives both sides' median (min-max) over
the pairs, the speed ratio of every pair (above 1: mmsched is faster) as median (min-max),
and in how many pairs the ratio met its goal (the engine goals in crates/backends/README.md).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

# (JSON key, label, lower is better, goal for the speed ratio mainstream/mmsched)
FIGURES = [
    ("ocr.det_ms_p50", "PP-OCRv4 det ms, 1 thread", True, 1 / 1.05),
    ("ocr.rec_box_ms_p50", "PP-OCRv4 rec ms per box, 1 thread", True, 1 / 1.05),
    ("asr.rtf_1t", "Whisper RTF, 1 thread", True, 1.0),
    ("asr.rtf_2t", "Whisper RTF, 2 threads", True, 1.0),
    ("llm.prefill_tok_s_1t", "Gemma-3 prefill tok/s, 1 thread", False, 0.9),
    ("llm.prefill_tok_s_2t", "Gemma-3 prefill tok/s, 2 threads", False, 0.9),
    ("llm.decode_tok_s_1t", "Gemma-3 decode tok/s, 1 thread", False, 1.0),
    ("llm.decode_tok_s_2t", "Gemma-3 decode tok/s, 2 threads", False, 1.0),
]
# The `--only` groups of `mmsched bench models` that have a mainstream counterpart.
GROUPS = ("ocr", "asr", "llm")


def value(doc, key):
    """The figure `key` (dotted path) of one run's JSON, or None when absent."""
    for part in key.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc if isinstance(doc, (int, float)) else None


def spread(values):
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


def run_json(cmd, path):
    """Runs `cmd`, keeps its stdout in `path` and returns it parsed."""
    with open(path, "w") as out, open(path + ".err", "w") as err:
        rc = subprocess.run(cmd, stdout=out, stderr=err).returncode
    if rc != 0:
        sys.exit(f"bench-ratios: `{' '.join(cmd)}` failed (exit {rc}); see {path}.err")
    with open(path) as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--only", default="ocr,asr,llm")
    p.add_argument("--mmsched", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    groups = [g.strip() for g in a.only.split(",") if g.strip()]
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        sys.exit(f"bench-ratios: --only takes a list of ocr, asr and llm (got {a.only!r})")
    if a.pairs < 1:
        sys.exit(f"bench-ratios: --pairs takes 1 or more (got {a.pairs})")
    only = ",".join(groups)
    # `--engine auto`: the ONNX engine `mmsched run` uses, the one whose figures count.
    ours_cmd = [a.mmsched, "bench", "models", "--only", only, "--engine", "auto", "--json"]
    theirs_cmd = ["scripts/bench-mainstream.sh", "--only", only]
    os.makedirs(a.out, exist_ok=True)
    pairs = []
    for i in range(a.pairs):
        sides = [("mmsched", ours_cmd), ("mainstream", theirs_cmd)]
        if i % 2 == 1:
            sides.reverse()
        got = {}
        for name, cmd in sides:
            print(f"bench-ratios: pair {i + 1}/{a.pairs}: {name}", file=sys.stderr)
            got[name] = run_json(cmd, os.path.join(a.out, f"{name}-{i + 1}.json"))
        pairs.append(got)

    print(f"{a.pairs} pairs, alternating which side runs first; JSON of every run in {a.out}")
    print("figure | mmsched | mainstream | speed ratio (>1: mmsched faster) | goal | pairs at goal")
    print("---|---|---|---|---|---")
    for key, label, lower_better, goal in FIGURES:
        if key.split(".")[0] not in groups:
            continue
        ours = [value(pr["mmsched"], key) for pr in pairs]
        theirs = [value(pr["mainstream"], key) for pr in pairs]
        both = [(o, t) for o, t in zip(ours, theirs) if o and t]
        if not both:
            print(f"{label} | absent | absent | - | - | -")
            continue
        ratios = [(t / o) if lower_better else (o / t) for o, t in both]
        met = sum(r >= goal for r in ratios)
        print(
            f"{label} | {spread([o for o, _ in both])} | {spread([t for _, t in both])} | "
            f"{spread(ratios)} | >= {goal:.2f} | {met} of {len(ratios)}"
        )
    # mmsched's own layer against its engine called directly (no mainstream side).
    models = sorted({m for pr in pairs for m in (pr["mmsched"].get("layer_ratios") or {})})
    for model in models:
        # Model names hold dots (whisper-tiny.en): looked up directly, not by a dotted path.
        ratios = [(pr["mmsched"].get("layer_ratios") or {}).get(model) for pr in pairs]
        ratios = [r for r in ratios if isinstance(r, (int, float))]
        met = sum(r >= 0.97 for r in ratios)
        print(
            f"{model}: mmsched's layer / direct engine call | - | - | {spread(ratios)} | "
            f">= 0.97 | {met} of {len(ratios)}"
        )


if __name__ == "__main__":
    main()
