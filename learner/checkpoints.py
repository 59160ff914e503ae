"""Checkpoints of everything a resumed run needs: weights, optimizer slots and
step, and the environment-frame counter.

tf.train.CheckpointManager writes the new files first and then replaces the
small `checkpoint` index file atomically (write to temp, rename), so a crash
mid-save leaves the previous checkpoint as the latest readable one.
"""
import glob
import json
import logging
import os
import shutil
import time

import tensorflow as tf

log = logging.getLogger(__name__)

LATEST_JSON = "latest.json"


class Checkpointer:
    """`sidecars` are saved beside each checkpoint as CKPT.NAME.npz (objects with `save_state(path)`,
    `load_state(path)` and `state_nbytes`: learner.data.saved_state.ArraySidecar, the data sources' replays
    with `checkpoint_replay`), restored with it and removed with it when it rotates out. `before_save()`
    runs first at every save."""

    def __init__(self, directory: str, max_to_keep: int = 3, sidecars: dict[str, object] | None = None,
                 before_save=None, **trackables):
        self.directory = directory
        self.max_to_keep = max_to_keep
        self.sidecars = sidecars or {}
        self._before_save = before_save  # called first by every save (the frame counter's sync)
        self._frames = trackables.get("environment_frames")
        self.extra_summary = dict  # more fields for LATEST_JSON, read at each save
        self._checkpoint = tf.train.Checkpoint(**trackables)
        self._manager = tf.train.CheckpointManager(self._checkpoint, directory, max_to_keep=max_to_keep)

    def restore_latest(self) -> bool:
        """Restores the newest checkpoint in the directory; False if there is none."""
        path = self._manager.latest_checkpoint
        if path is None:
            return False
        try:
            self._checkpoint.restore(path).assert_existing_objects_matched()
        except (AssertionError, ValueError) as e:
            raise ValueError(
                f"checkpoint {path} does not fit this run's agent or network ({str(e).splitlines()[0]}); "
                "resume with the settings it was made with (the run directory's learner_operative_config.gin) "
                "or start a new run (run_local.sh --new, or another --logdir)") from None
        log.info("restored checkpoint %s", path)
        for name, sidecar in self.sidecars.items():
            sidecar_path = f"{path}.{name}.npz"
            if os.path.exists(sidecar_path):
                sidecar.load_state(sidecar_path)
            else:
                log.warning("no %s was saved with %s (it was written without it, or the learner died while "
                            "writing it); the %s starts empty", name, path, name)
        return True

    def check_disk(self) -> None:
        """Refuses sidecars the disk cannot hold: the kept checkpoints' copies and one being written."""
        if not self.sidecars:
            return
        each = sum(s.state_nbytes for s in self.sidecars.values())
        needed = each * (self.max_to_keep + 1)
        os.makedirs(self.directory, exist_ok=True)
        existing = sum(os.path.getsize(p) for p in glob.glob(os.path.join(self.directory, "*.npz")))
        free = shutil.disk_usage(self.directory).free + existing
        log.info("each checkpoint also saves %s: %.2f GiB; %d kept: %.2f GiB", ", ".join(self.sidecars),
                 each / 2 ** 30, self.max_to_keep, self.max_to_keep * each / 2 ** 30)
        if needed > free:
            raise ValueError(f"saving {', '.join(self.sidecars)} with the checkpoints needs {needed / 2 ** 30:.1f} GiB "
                             f"in {self.directory} but {free / 2 ** 30:.1f} GiB is free; free space, make the replay "
                             "smaller, or set checkpoint_replay=False")

    def save(self):
        """Writes a checkpoint; a failed write (disk full, say) is logged and the previous one kept."""
        if self._before_save is not None:
            self._before_save()
        try:
            path = self._manager.save()
        except (OSError, tf.errors.OpError) as e:
            log.error("could not write a checkpoint to %s (%s); the previous one, %s, is kept",
                      self.directory, getattr(e, "message", None) or e, self._manager.latest_checkpoint)
            return None
        log.info("saved checkpoint %s", path)
        for name, sidecar in self.sidecars.items():
            try:
                started = time.monotonic()
                sidecar.save_state(f"{path}.{name}.npz")
                log.info("saved %s with %s in %.1f s", name, path, time.monotonic() - started)
            except OSError as e:
                log.error("could not save %s with %s (%s); a resume from it starts with an empty %s",
                          name, path, e, name)
        self._remove_rotated_sidecars()
        self._write_summary(path)
        return path

    def _remove_rotated_sidecars(self) -> None:
        kept = set(self._manager.checkpoints)
        for path in glob.glob(os.path.join(self.directory, "ckpt-*.*.npz")):
            if path.rsplit(".", 2)[0] not in kept:
                os.remove(path)

    def _write_summary(self, path: str) -> None:
        """LATEST_JSON: what the newest checkpoint holds, for launchers that report it without TensorFlow
        (run_local.sh's stop message)."""
        summary = {"checkpoint": os.path.basename(path), "time": time.time(),
                   "environment_frames": int(self._frames.numpy()) if self._frames is not None else None,
                   **self.extra_summary()}
        target = os.path.join(self.directory, LATEST_JSON)
        try:
            with open(target + ".tmp", "w") as f:
                json.dump(summary, f)
            os.replace(target + ".tmp", target)
        except OSError as e:
            log.warning("could not write %s (%s)", target, e)

    @property
    def latest(self):
        return self._manager.latest_checkpoint


def ensure_writable_dir(path: str) -> str:
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, ".write_probe")
        with open(probe, "w") as f:
            f.write("ok")
        os.remove(probe)
    except OSError as e:
        raise SystemExit(f"error: run directory {path!r} is not writable ({e.strerror}); "
                         "pick another with --logdir") from None
    return path
