"""The Keras 3 edits a user makes to a Keras 2 script (docs/tensorflow.md,
"Keras 3 edits"), applied by run.sh to the scratch copy of a Horovod test
file before it runs. Each edit listed for a file must match in it at least
once, so a different Horovod version fails here instead of running
unedited."""

import os
import re
import sys

KERAS = "test_tensorflow2_keras.py"
TF = "test_tensorflow.py"
BENCH = "tensorflow2_synthetic_benchmark.py"
KERAS_BENCH = "tensorflow2_keras_synthetic_benchmark.py"
KERAS_SETS = "test_tensorflow2_keras_process_sets.py"
EDITS = [
    # (files, pattern, replacement, why)
    ((KERAS,), r"\blr=", "learning_rate=", "optimizers take learning_rate= only"),
    ((KERAS,), r"\.optimizer\.lr\b", ".optimizer.learning_rate", "optimizer.lr is gone"),
    ((KERAS,), r"keras\.optimizers\.legacy\.", "keras.optimizers.", "no legacy optimizers"),
    ((KERAS, KERAS_BENCH), r",\s*experimental_run_tf_function=False", "",
     "compile() has no experimental_run_tf_function"),
    ((KERAS,), r"keras\.layers\.ThresholdedReLU\(([^)]*)\)", r"keras.layers.ReLU(threshold=\1)",
     "ThresholdedReLU is ReLU(threshold=...)"),
    ((KERAS,), r",\s*input_length=\d+", "", "Embedding has no input_length"),
    ((KERAS, TF), r"\b([A-Za-z_][A-Za-z_0-9]*)\.ref\(\)", r"id(\1)",
     "Keras variables have no ref(): key them by id()"),
    ((KERAS, KERAS_SETS), r"def update_step\(self, gradient, variable\):",
     "def update_step(self, gradient, variable, learning_rate=None):",
     "Optimizer.update_step takes the learning rate"),
    ((KERAS,), r"keras\.losses\.mean_squared_error\b", "keras.losses.MeanSquaredError()",
     "loss functions are classes (or 'mse')"),
    ((KERAS, KERAS_SETS), r"super\(\)\.__init__\(name=name, \*\*kwargs\)",
     "super().__init__(name=name, **{'learning_rate': 0.1, **kwargs})",
     "an Optimizer subclass passes learning_rate to Optimizer.__init__"),
    ((KERAS,), r",\s*experimental_aggregate_gradients=False", "",
     "apply_gradients has no experimental_aggregate_gradients"),
    ((BENCH,), r"\.variables\(\)", ".variables", "Optimizer.variables is a property"),
    ((TF,), r"(keras\.layers\.BatchNormalization\([^)]*?),\s*fused=False\)", r"\1)",
     "BatchNormalization has no fused="),
]


def main(path):
    base = os.path.basename(path)
    text = open(path).read()
    for files, pattern, replacement, why in EDITS:
        if base not in files:
            continue
        text, n = re.subn(pattern, replacement, text)
        if n == 0:
            sys.exit(f"keras3_edits: '{pattern}' ({why}) matched nothing in {path}")
        print(f"keras3_edits: {n:2}x {why}")
    open(path, "w").write(text)


if __name__ == "__main__":
    main(sys.argv[1])
