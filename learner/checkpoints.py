"""Checkpoints of everything a resumed run needs: weights, optimizer slots and
step, and the environment-frame counter.

tf.train.CheckpointManager writes the new files first and then replaces the
small `checkpoint` index file atomically (write to temp, rename), so a crash
mid-save leaves the previous checkpoint as the latest readable one.
"""
import json
import logging
import os
import time

import tensorflow as tf

log = logging.getLogger(__name__)

LATEST_JSON = "latest.json"


class Checkpointer:
    def __init__(self, directory: str, max_to_keep: int = 3, **trackables):
        self.directory = directory
        self._frames = trackables.get("environment_frames")
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
        return True

    def save(self):
        """Writes a checkpoint; a failed write (disk full, say) is logged and the previous one kept."""
        try:
            path = self._manager.save()
        except (OSError, tf.errors.OpError) as e:
            log.error("could not write a checkpoint to %s (%s); the previous one, %s, is kept",
                      self.directory, getattr(e, "message", None) or e, self._manager.latest_checkpoint)
            return None
        log.info("saved checkpoint %s", path)
        self._write_summary(path)
        return path

    def _write_summary(self, path: str) -> None:
        """LATEST_JSON: what the newest checkpoint holds, for launchers that report it without TensorFlow
        (run_local.sh's stop message)."""
        summary = {"checkpoint": os.path.basename(path), "time": time.time(),
                   "environment_frames": int(self._frames.numpy()) if self._frames is not None else None}
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
