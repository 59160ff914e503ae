"""The run's count of environment frames, both kinds in one place and both kept in the checkpoint.

- Frames *trained*: collected into training data, what the frame budget, progress and the schedules
  count (V-trace's and PPO's fresh frames, R2D2's and SAC's frames inserted into replay). The
  training thread adds each update's.
- Frames *stepped*: every frame the actors stepped, episodes.csv's x axis. The inference thread
  adds each batch's.

A resumed run goes on from the checkpoint's counts. Frames stepped also count the actors' work that
a crash lost (the episodes played after the last checkpoint stay in episodes.csv): a resumed run
goes on from the larger of the checkpoint's count and the episode log's last row, so its learning
curve never steps back.
"""
import tensorflow as tf


class FrameCounter:
    def __init__(self, frames_per_step: int):
        self.frames_per_step = frames_per_step
        self.trained = tf.Variable(0, dtype=tf.int64, name="environment_frames")
        self._stepped = tf.Variable(0, dtype=tf.int64, name="environment_frames_stepped")
        self.env_steps = 0  # agent steps, counted by the inference thread (a Python int: no op per batch)

    @property
    def stepped_frames(self) -> int:
        return self.env_steps * self.frames_per_step

    @property
    def trained_frames(self) -> int:
        return int(self.trained.numpy())

    def add_trained(self, frames: int) -> None:
        self.trained.assign_add(frames)

    def trackables(self) -> dict[str, tf.Variable]:
        """What the checkpoint holds of the counter."""
        return {"environment_frames": self.trained, "environment_frames_stepped": self._stepped}

    def before_save(self) -> None:
        self._stepped.assign(self.stepped_frames)

    def resume(self, logged_stepped_frames: int) -> None:
        """After the checkpoint's restore: frames stepped go on from the larger of its count and
        `logged_stepped_frames` (the episode log's last row)."""
        self.env_steps = max(int(self._stepped.numpy()), logged_stepped_frames) // self.frames_per_step
