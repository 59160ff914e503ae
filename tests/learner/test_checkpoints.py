import os
import subprocess
import threading

import numpy as np
import pytest
import tensorflow as tf

from learner.checkpoints import Checkpointer
from learner.data.saved_state import ArraySidecar
from learner.networks import ActorCriticNetwork


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


class KnownArray:
    """A known array behind an ArraySidecar, as the agents' replays are."""

    def __init__(self, value, nbytes=None):
        self.value = np.full(1000, value, np.float32)
        self.sidecar = ArraySidecar(threading.Lock(), lambda: {"value": self.value}, self._load,
                                    nbytes or (lambda: self.value.nbytes))

    def _load(self, arrays):
        self.value = arrays["value"].copy()


def test_sidecars_are_saved_rotated_and_restored_with_their_checkpoint(tmp_path, caplog):
    frames = tf.Variable(0, dtype=tf.int64)
    sidecar = KnownArray(0.0)
    checkpointer = Checkpointer(str(tmp_path), max_to_keep=2, sidecars={"replay": sidecar.sidecar},
                                environment_frames=frames)
    checkpointer.check_disk()
    for i in range(1, 5):
        frames.assign(100 * i)
        sidecar.value[:] = i
        checkpointer.save()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index",
                                            "ckpt-3.replay.npz", "ckpt-4.data-00000-of-00001", "ckpt-4.index",
                                            "ckpt-4.replay.npz", "latest.json"]
    fresh = KnownArray(-1.0)
    frames.assign(0)
    assert Checkpointer(str(tmp_path), sidecars={"replay": fresh.sidecar}, environment_frames=frames).restore_latest()
    assert int(frames.numpy()) == 400 and np.all(fresh.value == 4)

    os.remove(tmp_path / "ckpt-4.replay.npz")  # the learner died between the checkpoint and its sidecar
    empty = KnownArray(-1.0)
    assert Checkpointer(str(tmp_path), sidecars={"replay": empty.sidecar}, environment_frames=frames).restore_latest()
    assert np.all(empty.value == -1) and "no replay was saved with" in caplog.text


def test_sidecars_the_disk_cannot_hold_are_refused_at_start(tmp_path):
    huge = KnownArray(0.0, nbytes=lambda: 1 << 60)  # an exabyte: no disk holds it
    with pytest.raises(ValueError, match="needs .* GiB in .* but .* GiB is free; .*checkpoint_replay=False"):
        Checkpointer(str(tmp_path / "c"), sidecars={"replay": huge.sidecar}).check_disk()
