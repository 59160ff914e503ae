"""Checkpoints of everything a resumed run needs: weights, optimizer slots and
step, and the environment-frame counter.

A save is whole once LATEST_JSON names it: tf.train.CheckpointManager writes
the checkpoint's files and then its `checkpoint` index, the sidecars follow,
everything is flushed to the disk, and only then is LATEST_JSON replaced and
the save logged. A resume takes the newest checkpoint that is whole: one newer
than LATEST_JSON (a learner killed mid-save), one whose files are cut short or
corrupted, or one whose sidecar is not its own, is named in one line and the
one before it is tried.
"""
import glob
import json
import logging
import os
import shutil
import time

import tensorflow as tf

from learner.data.saved_state import SidecarDamaged
from seed.process import CONSOLE

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
        """Restores the newest whole checkpoint in the directory; False if there is none at all."""
        candidates = list(reversed(self._manager.checkpoints))  # newest first
        if not candidates:
            return False
        whole = self._last_whole_save()
        for path in candidates:
            if whole is not None and _number(path) > _number(whole):
                log.warning("checkpoint %s was cut short: the learner stopped while saving it; trying the one "
                            "before", path, extra=CONSOLE)
                continue
            problem = self._restore(path)
            if problem is None:
                log.info("restored checkpoint %s", path)
                return True
            log.warning("checkpoint %s is damaged (%s); trying the one before", path, problem, extra=CONSOLE)
        raise ValueError(f"no checkpoint in {self.directory} can be read whole (see the lines above); start a new "
                         "run (run_local.sh --new, or another --logdir)")

    def _last_whole_save(self) -> str | None:
        """The checkpoint LATEST_JSON names: the newest whose save finished (None: unknown)."""
        try:
            with open(os.path.join(self.directory, LATEST_JSON)) as f:
                return os.path.join(self.directory, json.load(f)["checkpoint"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _restore(self, path: str) -> str | None:
        """Restores one checkpoint and its sidecars; returns what is damaged, or None."""
        try:
            self._checkpoint.restore(path).assert_existing_objects_matched()
        except (AssertionError, ValueError) as e:
            raise ValueError(
                f"checkpoint {path} does not fit this run's agent or network ({str(e).splitlines()[0]}); "
                "resume with the settings it was made with (the run directory's learner_operative_config.gin) "
                "or start a new run (run_local.sh --new, or another --logdir)") from None
        except (tf.errors.OpError, IndexError) as e:  # a file cut short or gone, a checksum that does not match
            # (TensorFlow's checkpoint reader raises IndexError for a file that ends early)
            message = e.message if isinstance(e, tf.errors.OpError) else str(e)
            return f"{type(e).__name__}: {message.splitlines()[0]}"
        for name, sidecar in self.sidecars.items():
            sidecar_path = f"{path}.{name}.npz"
            if not os.path.exists(sidecar_path):
                log.warning("no %s was saved with %s (it was written without it); the %s starts empty",
                            name, path, name)
                continue
            try:
                sidecar.load_state(sidecar_path)
            except SidecarDamaged as e:  # other ValueErrors (settings that changed) stop the learner, saying so
                return f"its {name} {sidecar_path}: {e}"
        return None

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
            _flush_to_disk(glob.glob(f"{path}.*") + [os.path.join(self.directory, "checkpoint")], self.directory)
        except (OSError, tf.errors.OpError) as e:
            log.error("could not write a checkpoint to %s (%s); the previous one, %s, is kept",
                      self.directory, getattr(e, "message", None) or e, self._last_whole_save())
            return None
        for name, sidecar in self.sidecars.items():
            try:
                started = time.monotonic()
                sidecar.save_state(f"{path}.{name}.npz")
                log.info("saved %s with %s in %.1f s", name, path, time.monotonic() - started)
            except OSError as e:
                log.error("could not save %s with %s (%s); a resume from it starts with an empty %s",
                          name, path, e, name)
        self._remove_rotated_sidecars()
        if not self._write_summary(path):  # without it a resume takes this checkpoint for one cut short
            log.error("could not finish saving checkpoint %s; a resume starts from the one before, %s", path,
                      self._last_whole_save())
            return None
        log.info("saved checkpoint %s", path)
        return path

    def _remove_rotated_sidecars(self) -> None:
        kept = set(self._manager.checkpoints)
        for path in glob.glob(os.path.join(self.directory, "ckpt-*.*.npz")):
            if path.rsplit(".", 2)[0] not in kept:
                os.remove(path)

    def _write_summary(self, path: str) -> bool:
        """LATEST_JSON: what the newest checkpoint holds, for launchers that report it without TensorFlow
        (run_local.sh's stop message), and the mark that its save is whole. False if it cannot be written."""
        summary = {"checkpoint": os.path.basename(path), "time": time.time(),
                   "environment_frames": int(self._frames.numpy()) if self._frames is not None else None,
                   **self.extra_summary()}
        target = os.path.join(self.directory, LATEST_JSON)
        try:
            with open(target + ".tmp", "w") as f:
                json.dump(summary, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(target + ".tmp", target)
            _flush_to_disk([], self.directory)
            return True
        except OSError as e:
            log.error("could not write %s (%s)", target, e)
            return False

    @property
    def latest(self):
        return self._manager.latest_checkpoint


def _number(path: str) -> int:
    return int(path.rsplit("-", 1)[1])


def _flush_to_disk(files: list[str], directory: str) -> None:
    """fsync: the files' bytes and the directory's entries (their names) survive a crash or a power cut."""
    for path in [*files, directory]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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
