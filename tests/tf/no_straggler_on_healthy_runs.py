"""The live straggler warning stays silent on healthy training: the digits
Keras training and the synthetic ResNet benchmark at np=2, through
`ringscope run`, with short straggler windows (2 s and 4 s: rank 0 logs its
judgement of each window at log level 2). Each job must have a window with
enough collectives to be judged (20), and no warning.

argv: BUILD_DIR PYTHON"""

import os
import pathlib
import re
import subprocess
import sys

BUILD, PYTHON = sys.argv[1], sys.argv[2]
ROOT = pathlib.Path(__file__).resolve().parents[2]
JOBS = {  # name: (window seconds, command)
    "digits": ("2", [str(ROOT / "examples/tf_keras_digits.py")]),
    "synthetic": ("4", [str(ROOT / "examples/tf_synthetic_benchmark.py"), "--batch-size", "8",
                        "--steps", "60"]),
}

failed = []
for name, (window, cmd) in JOBS.items():
    env = dict(os.environ, PYTHONPATH=f"{BUILD}/python", TF_CPP_MIN_LOG_LEVEL="2",
               RINGSCOPE_STRAGGLER_WINDOW_SECONDS=window, RINGSCOPE_LOG_LEVEL="2")
    out = subprocess.run([f"{BUILD}/bin/ringscope", "run", "-np", "2", "--", PYTHON, *cmd],
                         env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=900)
    judged = [int(m) for m in re.findall(r"straggler window: (\d+) collectives", out.stdout)]
    warned = [l for l in out.stdout.splitlines() if "warning: straggler" in l]
    print(f"{name}: exit {out.returncode}, {len(judged)} windows judged "
          f"({max(judged, default=0)} collectives in the fullest), {len(warned)} warnings")
    for line in out.stdout.splitlines():
        if "straggler" in line:
            print("  " + line)
    if out.returncode != 0 or max(judged, default=0) < 20 or warned:
        failed.append(name)
        print(out.stdout[-4000:])
sys.exit(f"failed: {', '.join(failed)}" if failed else 0)
