import threading

import tensorflow as tf

from learner.checkpoints import Checkpointer
from learner.learner import TrainingLoop


class ScriptedAgent:
    """Real data flow, scripted outcomes: every update reports whether it was applied."""

    def __init__(self, applied):
        self.applied = list(applied)

    def next_batch(self, stop):
        return {} if self.applied else None

    def update(self, batch):
        return {"update_applied": self.applied.pop(0), "loss/total": 0.0}, 10


def run_loop(tmp_path, applied, limit):
    frames = tf.Variable(0, dtype=tf.int64)
    loop = TrainingLoop(ScriptedAgent(applied), Checkpointer(str(tmp_path), environment_frames=frames), frames,
                        total_frames=10_000, checkpoint_interval_s=1e9, stop=threading.Event(),
                        max_consecutive_skipped_updates=limit)
    loop.thread.start()
    loop.thread.join(60)
    return loop


def test_non_finite_updates_are_skipped_and_counted(tmp_path):
    loop = run_loop(tmp_path, [True, False, False, True, False, True], limit=3)
    assert loop.error is None and loop.num_skipped_updates == 3 and loop.num_updates == 3


def test_too_many_non_finite_updates_in_a_row_stop_training_with_a_clear_error(tmp_path):
    loop = run_loop(tmp_path, [True, False, False, False, True], limit=3)
    assert isinstance(loop.error, FloatingPointError)
    assert "3 updates in a row had a non-finite loss or gradient" in str(loop.error)
    assert loop.num_updates == 1
