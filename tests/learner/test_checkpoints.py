import os
import subprocess

import pytest
import tensorflow as tf

from learner.checkpoints import Checkpointer
from seed.networks import ActorCriticNetwork


def test_a_checkpoint_of_another_network_is_refused_with_the_way_out(tmp_path):
    Checkpointer(str(tmp_path), agent=ActorCriticNetwork(2, (4, 1), "float32", torso="mlp")).save()
    other = ActorCriticNetwork(2, (4, 1), "float32", torso="mlp", mlp_hidden_sizes=(32,))
    with pytest.raises(ValueError, match=r"ckpt-1 does not fit this run's agent or network \(.*shape.*\); resume "
                                         r"with the settings it was made with .* or start a new run"):
        Checkpointer(str(tmp_path), agent=other).restore_latest()


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs: a real full disk, which needs root (and a kernel that allows the mount)."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.strip() or 'not root'})")
    yield mount_point
    subprocess.run(["umount", str(mount_point)], check=True)


def test_checkpoint_on_a_full_disk_is_logged_and_the_previous_one_kept(small_disk, caplog):
    network = ActorCriticNetwork(2, (4, 1), "float32", torso="mlp")
    frames = tf.Variable(5, dtype=tf.int64)
    checkpointer = Checkpointer(str(small_disk / "checkpoints"), agent=network, environment_frames=frames)
    first = checkpointer.save()
    assert first is not None
    with open(small_disk / "filler", "wb", buffering=0) as f:  # take every byte that is left
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    frames.assign(9)
    assert checkpointer.save() is None
    assert "could not write a checkpoint" in caplog.text
    os.remove(small_disk / "filler")
    restored = tf.Variable(0, dtype=tf.int64)
    fresh = Checkpointer(str(small_disk / "checkpoints"), agent=ActorCriticNetwork(2, (4, 1), "float32", torso="mlp"),
                         environment_frames=restored)
    assert fresh.restore_latest() and int(restored.numpy()) == 5 and fresh.latest == first
