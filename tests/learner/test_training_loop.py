import threading
import time

from learner.checkpoints import Checkpointer
from learner.frame_counter import FrameCounter
from learner.training_loop import TrainingLoop


class ScriptedAgent:
    """Real data flow, scripted outcomes: every update reports whether it was applied. The agent is
    its own data source here (the loop reads `agent.data.next_batch`)."""

    def __init__(self, applied):
        self.applied = list(applied)
        self.data = self

    def next_batch(self, timeout_s=None):
        return {} if self.applied else None

    def update(self, batch):
        return {"update_applied": self.applied.pop(0), "loss/total": 0.0}, 10


def run_loop(tmp_path, applied, limit):
    frames = FrameCounter(frames_per_step=1)
    loop = TrainingLoop(ScriptedAgent(applied), Checkpointer(str(tmp_path), **frames.trackables()), frames,
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


class SlowAgent(ScriptedAgent):
    """Batches that take 10 ms to come and updates that take 100 ms: far enough apart that a loaded
    machine's late wake-ups (tens of ms each) cannot swap which side is larger."""

    def next_batch(self, timeout_s=None):
        time.sleep(0.01)
        return super().next_batch(timeout_s)

    def update(self, batch):
        time.sleep(0.1)
        return super().update(batch)


def test_the_loop_counts_its_time_waiting_for_batches_and_updating(tmp_path):
    frames = FrameCounter(frames_per_step=1)
    loop = TrainingLoop(SlowAgent([True] * 5), Checkpointer(str(tmp_path), **frames.trackables()), frames,
                        total_frames=10_000, checkpoint_interval_s=1e9, stop=threading.Event())
    loop.thread.start()
    loop.thread.join(60)
    assert loop.num_updates == 5
    # six waits (the sixth finds no batch), five updates
    assert 60_000 <= loop.batch_wait_us < loop.update_us and loop.update_us >= 500_000
