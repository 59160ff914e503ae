import json
import shutil
import subprocess
import sys

import tensorflow as tf

from seed.gin_setup import CONFIG_DIR
from seed.networks import ActorCriticNetwork
from tests.processes import REPO_ROOT


def test_seed_eval_plays_episodes_from_a_checkpoint_and_reports_them(tmp_path):
    shutil.copy(CONFIG_DIR / "classic_vtrace.gin", tmp_path / "learner_operative_config.gin")
    network = ActorCriticNetwork(2, (4, 1), "float32", torso="mlp")
    tf.train.Checkpoint(agent=network).save(str(tmp_path / "checkpoints" / "ckpt"))
    (tmp_path / "checkpoints" / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-1"\nall_model_checkpoint_paths: "ckpt-1"\n')
    result = subprocess.run([sys.executable, "-m", "learner.evaluate", "--logdir", str(tmp_path), "--episodes", "4",
                             "--num_envs", "2", "--json", str(tmp_path / "eval.json")],
                            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "eval.json").read_text())
    assert summary["episodes"] == 4 and len(summary["returns"]) == 4
    assert summary["return_min"] >= 8 and summary["return_min"] <= summary["return_mean"] <= summary["return_max"]
    assert "4 episodes from" in result.stdout


def test_seed_eval_without_a_run_directory_says_so(tmp_path):
    result = subprocess.run([sys.executable, "-m", "learner.evaluate", "--logdir", str(tmp_path)],
                            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 2 and "no operative config" in result.stderr
