"""inference.tf_intra_op_threads / tf_inter_op_threads reach TensorFlow (in a fresh
interpreter: TensorFlow fixes its thread pools at its first op)."""
import subprocess
import sys

import pytest

from tests.processes import REPO_ROOT

CHECK = """
from learner.learner import set_tf_threads
import tensorflow as tf
set_tf_threads(1, 2)
tf.constant(1.0) + 1.0
print(tf.config.threading.get_intra_op_parallelism_threads(), tf.config.threading.get_inter_op_parallelism_threads())
"""


def test_thread_counts_reach_tensorflow():
    result = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.split()[-2:] == ["1", "2"], result.stderr[-2000:]


def test_negative_thread_counts_are_refused():
    from learner.settings import InferenceSettings

    with pytest.raises(ValueError, match="inference.tf_intra_op_threads must be 0 or more, got -1"):
        InferenceSettings(tf_intra_op_threads=-1)
