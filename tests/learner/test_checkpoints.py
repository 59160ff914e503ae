import json
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


def three_saves(directory, sidecar=None):
    """ckpt-1..3 of frames 100, 200, 300 (with a sidecar holding 1, 2, 3)."""
    frames = tf.Variable(0, dtype=tf.int64)
    checkpointer = Checkpointer(str(directory), sidecars={"replay": sidecar.sidecar} if sidecar else None,
                                environment_frames=frames)
    for i in range(1, 4):
        frames.assign(100 * i)
        if sidecar:
            sidecar.value[:] = i
        checkpointer.save()


def resumed_frames(directory, sidecar=None):
    frames = tf.Variable(0, dtype=tf.int64)
    checkpointer = Checkpointer(str(directory), sidecars={"replay": sidecar.sidecar} if sidecar else None,
                                environment_frames=frames)
    assert checkpointer.restore_latest()
    return int(frames.numpy())


@pytest.mark.parametrize("damage", ["truncated", "corrupted", "missing"])
def test_a_damaged_newest_checkpoint_is_named_and_the_one_before_is_used(tmp_path, caplog, damage):
    three_saves(tmp_path)
    data = tmp_path / "ckpt-3.data-00000-of-00001"
    if damage == "truncated":
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    elif damage == "corrupted":
        raw = bytearray(data.read_bytes())
        raw[len(raw) // 2] ^= 0xFF  # one byte flipped: the bundle's checksum no longer matches
        data.write_bytes(bytes(raw))
    else:
        data.unlink()
    assert resumed_frames(tmp_path) == 200
    (line,) = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
    assert "ckpt-3 is damaged (" in line and "trying the one before" in line


def test_a_checkpoint_whose_save_was_cut_short_is_skipped_though_its_files_read(tmp_path, caplog):
    """The learner killed after the checkpoint's files but before its sidecar and LATEST_JSON."""
    sidecar = KnownArray(0.0)
    three_saves(tmp_path, sidecar)
    latest = json.loads((tmp_path / "latest.json").read_text())
    (tmp_path / "latest.json").write_text(json.dumps({**latest, "checkpoint": "ckpt-2"}))  # as ckpt-2's save left it
    (tmp_path / "ckpt-3.replay.npz").write_bytes(b"PK\x03\x04 half a zip")  # and the sidecar's temporary name aside
    fresh = KnownArray(-1.0)
    assert resumed_frames(tmp_path, fresh) == 200 and np.all(fresh.value == 2)
    assert "checkpoint " + str(tmp_path / "ckpt-3") + " was cut short" in caplog.text


@pytest.mark.parametrize("damage", ["truncated", "another checkpoint's"])
def test_a_damaged_or_foreign_sidecar_makes_its_checkpoint_unusable(tmp_path, caplog, damage):
    sidecar = KnownArray(0.0)
    three_saves(tmp_path, sidecar)
    path = tmp_path / "ckpt-3.replay.npz"
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        path.write_bytes((tmp_path / "ckpt-2.replay.npz").read_bytes())  # ckpt-2's replay under ckpt-3's name
    fresh = KnownArray(-1.0)
    assert resumed_frames(tmp_path, fresh) == 200 and np.all(fresh.value == 2)
    assert "ckpt-3 is damaged (its replay" in caplog.text
    if damage != "truncated":
        assert "it was saved with ckpt-2, not ckpt-3" in caplog.text


def test_a_whole_sidecar_that_does_not_fit_the_settings_stops_the_resume_instead_of_skipping_checkpoints(tmp_path):
    sidecar = KnownArray(0.0)
    three_saves(tmp_path, sidecar)
    misfit = KnownArray(-1.0)

    def load(arrays):
        raise ValueError("the saved replay's observation is uint8[84, 84] of 100 rows, this run's another: "
                         "resume with the replay settings it was saved with or set checkpoint_replay=False")
    misfit.sidecar._load = load
    with pytest.raises(ValueError, match="resume with the replay settings") as raised:
        resumed_frames(tmp_path, misfit)
    assert "can be read whole" not in str(raised.value)  # not taken for damage: no checkpoint was skipped


def test_a_save_whose_latest_json_cannot_be_written_is_not_reported_saved(tmp_path, monkeypatch, caplog):
    checkpointer = Checkpointer(str(tmp_path), environment_frames=tf.Variable(1))
    assert checkpointer.save() is not None
    real_replace = os.replace

    def replace(source, target):
        if str(target).endswith("latest.json"):
            raise OSError(28, "No space left on device")
        real_replace(source, target)
    monkeypatch.setattr(os, "replace", replace)
    assert checkpointer.save() is None
    assert "could not finish saving checkpoint" in caplog.text and "ckpt-1" in caplog.text
    assert "saved checkpoint " + str(tmp_path / "ckpt-2") not in caplog.text


def test_when_no_checkpoint_is_whole_the_error_says_so_in_one_line(tmp_path):
    three_saves(tmp_path)
    for data in tmp_path.glob("ckpt-*.data-*"):
        data.write_bytes(b"")
    with pytest.raises(ValueError, match=r"no checkpoint in .* can be read whole .*; start a new run"):
        resumed_frames(tmp_path)


def test_a_save_is_flushed_to_the_disk_before_latest_json_names_it(tmp_path, monkeypatch):
    synced, named = [], []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def replace(source, target):
        if str(target).endswith("latest.json"):
            named.append(set(synced))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    sidecar = KnownArray(1.0)
    Checkpointer(str(tmp_path), sidecars={"replay": sidecar.sidecar}, environment_frames=tf.Variable(1)).save()
    (before_naming,) = named
    for name in ("ckpt-1.index", "ckpt-1.data-00000-of-00001", "checkpoint", "ckpt-1.replay.npz.tmp",
                 "latest.json.tmp"):
        assert str(tmp_path / name) in before_naming, name
    assert str(tmp_path) in before_naming  # the directory: the files' names
