"""What the bench scripts that launch whole jobs share: running a command
from the source tree (its output, or exit with its tail on failure) and the
digits main job's throughput under `ringscope run -np 2`."""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd, env, timeout=900):
    out = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=timeout)
    if out.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed ({out.returncode}):\n{out.stdout[-3000:]}")
    return out.stdout


def ringscope_run(build, env, script, args=(), trace_dir=None):
    """`ringscope run -np 2` of a Python script; traced into a new folder
    under trace_dir when given."""
    cmd = [str(ROOT / build / "bin/ringscope"), "run", "-np", "2"]
    if trace_dir:
        cmd += ["--trace", str(Path(tempfile.mkdtemp(dir=trace_dir)) / "t.sqlite")]
    return run(cmd + ["--", str(ROOT / ".venv/bin/python"), script] + list(args), env)


def digits_samples_per_s(env, build, trace_dir=None):
    text = ringscope_run(build, env, "examples/tf_keras_digits.py", trace_dir=trace_dir)
    found = re.findall(r"throughput: ([0-9.]+) samples", text)
    if not found:
        sys.exit("no throughput line in the digits training's output:\n" + text[-2000:])
    return float(found[-1])
