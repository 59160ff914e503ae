import json
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf

from learner.networks import ActorCriticNetwork
from seed.gin_setup import CONFIG_DIR
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
    progress = [line for line in result.stderr.splitlines() if line.startswith("episode ")]
    assert [line.split(":")[0] for line in progress] == [f"episode {i}/4" for i in range(1, 5)]


def test_seed_eval_without_a_run_directory_says_so(tmp_path):
    result = subprocess.run([sys.executable, "-m", "learner.evaluate", "--logdir", str(tmp_path)],
                            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 2 and "no operative config" in result.stderr


@pytest.mark.parametrize("flag, value, reason", [("--episodes", "0", "--episodes must be at least 1, got 0"),
                                                  ("--num_envs", "-2", "--num_envs must be at least 1, got -2"),
                                                  ("--episodes", "ten", "argument --episodes: invalid int value"),
                                                  ("--epsilon", "1.5", "--epsilon must be between 0 and 1, got 1.5"),
                                                  ("--epsilon", "nan", "--epsilon must be between 0 and 1, got nan")])
def test_seed_eval_refuses_bad_flag_values_in_one_line(tmp_path, flag, value, reason):
    result = subprocess.run([sys.executable, "-m", "learner.evaluate", "--logdir", str(tmp_path), flag, value],
                            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 2
    assert reason in result.stderr.splitlines()[-1]


def test_seed_eval_records_an_episode_to_video(tmp_path):
    import cv2
    shutil.copy(CONFIG_DIR / "atari_vtrace.gin", tmp_path / "learner_operative_config.gin")
    network = ActorCriticNetwork(6, (84, 84, 4), "uint8")
    path = tf.train.Checkpoint(agent=network).save(str(tmp_path / "checkpoints" / "ckpt"))
    (tmp_path / "checkpoints" / "checkpoint").write_text(f'model_checkpoint_path: "{path.split("/")[-1]}"\n')
    video = tmp_path / "episode.mp4"
    result = subprocess.run([sys.executable, "-m", "learner.evaluate", "--logdir", str(tmp_path), "--episodes", "1",
                             "--epsilon", "0.5", "--video", str(video),
                             "--gin_bindings", "create_atari_envs.max_episode_frames=2000"],
                            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    capture = cv2.VideoCapture(str(video))
    frames = 0
    while capture.read()[0]:
        frames += 1
    assert capture.get(cv2.CAP_PROP_FRAME_WIDTH) == 336 and 100 < frames <= 501
    assert f"recorded {frames} frames" in result.stdout


def test_video_of_vector_observations_is_refused_with_a_reason(tmp_path):
    shutil.copy(CONFIG_DIR / "classic_vtrace.gin", tmp_path / "learner_operative_config.gin")
    path = tf.train.Checkpoint(agent=ActorCriticNetwork(2, (4, 1), "float32")).save(str(tmp_path / "checkpoints" / "c"))
    (tmp_path / "checkpoints" / "checkpoint").write_text(f'model_checkpoint_path: "{path.split("/")[-1]}"\n')
    result = subprocess.run([sys.executable, "-m", "learner.evaluate", "--logdir", str(tmp_path), "--video", "x.mp4"],
                            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert result.returncode == 2 and "--video needs image observations" in result.stderr
