#!/usr/bin/env python3
"""bench/compare.py on stored H200 result files: the tables it prints, and the
inputs it refuses. Usage: compare_check.py REPOSITORY_ROOT"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
COMPARE = os.path.join(ROOT, "bench", "compare.py")
R70 = os.path.join(ROOT, "bench", "results", "2026-12-02-h200-r70-one-run")
R80 = os.path.join(ROOT, "bench", "results", "2026-12-03-h200-r80-ggml-vulkan-suite")
failures = []


def run(*args):
    done = subprocess.run([sys.executable, COMPARE, *args], capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def expect(what, condition, output):
    if not condition:
        failures.append(f"{what}\n--- compare.py printed:\n{output[-1500:]}")


# The CUDA peers (round 70, call 3): the summary's first row and its count.
rc, out = run(os.path.join(R70, "call3-vk.json"), os.path.join(R70, "call3-peers.json"))
expect("vk + peers: exit 0", rc == 0, out)
expect("vk + peers: f32 1x16777216 at 54.17 us against torch.compile's 72.06",
       "| f32 | 1x16777216 | split | 54.17 |" in out and "| compile | 72.06 |" in out, out)
expect("vk + peers: 'Targets met on' line", "Targets met on " in out, out)

# ggml (round 80): forward and backward tables.
rc, out = run(os.path.join(R80, "vk.json"), "--ggml", os.path.join(R80, "ggml_wall.json"))
expect("vk + ggml: exit 0", rc == 0, out)
expect("vk + ggml: 1x16777216 54.30 against ggml's 839.42, 15.46x",
       "| 1x16777216 | 54.30 | split | 839.42 | **15.46** |" in out, out)
expect("vk + ggml: faster on 31 of 31 rows", "vksoftmax faster on 31 of 31 rows." in out, out)
rc, out = run(os.path.join(R80, "vk_backward.json"), "--ggml", os.path.join(R80, "ggml_wall_backward.json"))
expect("backward vk + ggml: soft_max_ext_back's table, 4096x1024 at 1.17x",
       rc == 0 and "soft_max_ext_back" in out and "| 4096x1024 | 13.50 | subgroup-row | 15.84 | **1.17** |" in out, out)

# A case peers_ggml could not time is shown as such, and not counted.
with tempfile.TemporaryDirectory() as tmp:
    ggml = json.load(open(os.path.join(R80, "ggml_wall.json")))
    for case in ggml["cases"]:
        if case["case"] == "1x16777216":
            case["wall_us"] = None
    path = os.path.join(tmp, "ggml.json")
    json.dump(ggml, open(path, "w"))
    rc, out = run(os.path.join(R80, "vk.json"), "--ggml", path)
    expect("an unmeasured ggml case: 'unmeasured', 30 rows counted",
           rc == 0 and "| 1x16777216 | 54.30 | split | unmeasured | |" in out
           and "vksoftmax faster on 30 of 30 rows." in out, out)

# Refusals: a forward file beside a backward one; nothing to compare with.
rc, out = run(os.path.join(R70, "call2-backward.json"), os.path.join(R70, "call3-peers.json"))
expect("backward vk + forward peers: refused", rc != 0 and "time both the same way" in out, out)
rc, out = run(os.path.join(R80, "vk.json"))
expect("no peers and no --ggml: refused", rc != 0 and "give PEERS.json, --ggml GGML.json or both" in out, out)

for f in failures:
    print("FAILED:", f)
print(f"compare_check: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
