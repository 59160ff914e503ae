"""Data-parallel V-trace with tf.distribute, on CPU: two logical CPU devices under
MirroredStrategy (exactly the single-device update), and two learner processes
under MultiWorkerMirroredStrategy on loopback inside a private network namespace
(identical weights after N updates). Both run in fresh interpreters: devices and
collectives are fixed at TensorFlow's first op."""
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from learner.strategy import create_strategy, split_batch
from tests.processes import REPO_ROOT, child_env


def run_scenario(module, *args, network_namespace=False, timeout_s=600):
    command = [sys.executable, "-m", module, *args]
    if network_namespace:
        if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
            pytest.skip("cannot create a network namespace here (unshare -n needs root); TensorFlow's "
                        "collective servers must not listen outside one")
        command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *command]
    result = subprocess.run(command, cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True,
                            timeout=timeout_s)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-5000:]
    return json.loads(lines[-1])


def test_mirrored_update_on_two_replicas_equals_the_single_device_update():
    outcome = run_scenario("tests.strategy_scenario")
    assert outcome["replicas"] == 2 and len(outcome["devices"]) == 2
    assert outcome["replica_difference"] == 0.0  # the two copies of every weight are the same
    assert outcome["largest_difference"] < 1e-4  # and they are what one device computes
    assert outcome["iterations"] == 5
    # Mixed batches (fresh rows all on one replica, loss weights, CLEAR on): the same losses, metrics and
    # per-unroll errors (in batch order) as on one device.
    assert outcome["cloning"] > 0 and outcome["metrics_difference"] < 1e-4 and outcome["errors_difference"] < 1e-4
    assert "VTraceTrainer.jit_compile works on one device only, not with 2 replicas" in outcome["jit_error"]


def test_two_learner_processes_keep_identical_weights(tmp_path):
    outcome = run_scenario("tests.multi_worker_scenario", str(tmp_path), network_namespace=True)
    assert outcome["exit_codes"] == [0, 0], outcome["learner_log_tail"]
    assert outcome["iterations"] == [30, 30]
    assert outcome["weights_compared"] > 10 and outcome["largest_weight"] > 0
    assert outcome["largest_difference"] == 0.0


def test_a_batch_that_does_not_split_evenly_is_refused():
    class TwoLocalReplicas:
        num_replicas_in_sync = 2

        class extended:
            worker_devices = ("/cpu:0", "/cpu:1")

    with pytest.raises(ValueError, match="make VTraceAgent.batch_size a multiple of 2"):
        split_batch(TwoLocalReplicas(), {"reward": np.zeros((21, 3), np.float32)})


def test_bad_strategy_settings_name_the_fix(monkeypatch):
    with pytest.raises(ValueError, match="unknown create_strategy.kind 'tpu'"):
        create_strategy("tpu")
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="needs TF_CONFIG"):
        create_strategy("multi_worker")
    with pytest.raises(ValueError, match="create_strategy.cpu_replicas must be 0 or more, got -1"):
        create_strategy("mirrored", cpu_replicas=-1)
    assert create_strategy("none") is tf.distribute.get_strategy()


def test_r2d2_with_a_strategy_is_refused_at_start(tmp_path):
    result = subprocess.run([sys.executable, "-m", "learner", "--logdir", str(tmp_path), "--address", "127.0.0.1:0",
                             "--gin_config", "classic_r2d2.gin", "--gin_bindings", "create_strategy.kind='mirrored'"],
                            cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "R2D2Agent trains on one device only; distributed training supports @VTraceAgent" in result.stderr
