#!/usr/bin/python3
"""vksoftmax run against scipy.special.softmax on .npy files NumPy wrote.

Every axis of a 3-D tensor, float32 and float16, softmax and log-softmax,
with and without a temperature, on the gpu and cpu backends; plus rows with
non-finite values, whose NaN/0/-inf pattern must be SciPy's exactly.
Usage: scipy_check.py path/to/vksoftmax
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.special import log_softmax, softmax

BOUNDS = {np.float32: (1e-5, 1e-30), np.float16: (2e-3, 2.0**-14)}  # rel, floor


def check(cli, tmp, x, axis, log, temperature, backend):
    src, dst = tmp / "x.npy", tmp / "y.npy"
    np.save(src, x)
    cmd = [cli, "run", "-i", str(src), "-o", str(dst), "--axis", str(axis), "--backend", backend]
    if log:
        cmd.append("--log")
    if temperature is not None:
        cmd += ["--temperature", repr(temperature)]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        return f"{' '.join(cmd)} exited {run.returncode}: {run.stderr.strip()}"
    y = np.load(dst)
    if y.dtype != x.dtype or y.shape != x.shape:
        return f"{' '.join(cmd)}: got {y.dtype}{y.shape}, want {x.dtype}{x.shape}"
    z = x.astype(np.float64) / (temperature or 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = (log_softmax if log else softmax)(z, axis=axis).astype(x.dtype).astype(np.float64)
        # SciPy's log_softmax([inf, 1, 2]) is [nan, -inf, -inf], unlike its own
        # softmax and PyTorch (all NaN). vksoftmax follows the latter: a row
        # that softmax makes NaN is NaN in log-softmax too.
        ref[np.isnan(softmax(z, axis=axis))] = np.nan
    got = y.astype(np.float64)
    if not np.array_equal(np.isnan(got), np.isnan(ref)) or not np.array_equal(np.isinf(got), np.isinf(ref)):
        return f"{' '.join(cmd)}: NaN/inf pattern differs from SciPy's"
    finite = np.isfinite(ref)
    rel, floor = BOUNDS[x.dtype.type]
    floor = 1.0 if log else floor
    err = np.abs(got[finite] - ref[finite]) / np.maximum(np.abs(ref[finite]), floor)
    worst = err.max(initial=0.0)
    if worst > rel:
        return f"{' '.join(cmd)}: max relative error {worst:.3g} > {rel:g}"
    if np.any(got[np.isinf(ref)] != ref[np.isinf(ref)]):
        return f"{' '.join(cmd)}: -inf elements differ"
    return None


def main():
    cli = sys.argv[1]
    rng = np.random.default_rng()
    failures, runs = [], 0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base = rng.normal(0, 4, size=(6, 33, 129))
        special = base.copy()
        special[0, :, 0] = np.nan
        special[1, 5, :] = np.inf
        special[2, :, 3] = -np.inf
        special[3, 7, 1::2] = -np.inf
        for dtype in (np.float32, np.float16):
            for data in (base, special):
                x = data.astype(dtype)
                for axis in (0, 1, 2, -1):
                    for log in (False, True):
                        for temperature in (None, 0.7):
                            for backend in ("gpu", "cpu"):
                                runs += 1
                                msg = check(cli, tmp, x, axis, log, temperature, backend)
                                if msg:
                                    failures.append(msg)
    for f in failures:
        print("FAIL:", f)
    print(f"scipy: {runs - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
