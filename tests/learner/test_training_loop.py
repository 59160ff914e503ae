import threading
import time

import tensorflow as tf

from learner.checkpoints import Checkpointer
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


class SlowAgent(ScriptedAgent):
    """Batches that take 20 ms to come and updates that take 60 ms."""

    def next_batch(self, timeout_s=None):
        time.sleep(0.02)
        return super().next_batch(timeout_s)

    def update(self, batch):
        time.sleep(0.06)
        return super().update(batch)


def test_the_loop_counts_its_time_waiting_for_batches_and_updating(tmp_path):
    frames = tf.Variable(0, dtype=tf.int64)
    loop = TrainingLoop(SlowAgent([True] * 5), Checkpointer(str(tmp_path), environment_frames=frames), frames,
                        total_frames=10_000, checkpoint_interval_s=1e9, stop=threading.Event())
    loop.thread.start()
    loop.thread.join(60)
    assert loop.num_updates == 5
    # six waits (the sixth finds no batch), five updates
    assert 120_000 <= loop.batch_wait_us < loop.update_us and loop.update_us >= 300_000


def test_progress_line_says_how_far_and_how_long_is_left():
    from learner.progress import format_progress

    record = {"frames": 2_500_000, "total_frames": 10_000_000, "frames_per_second": 2_500.0, "seconds_left": 3000.0,
              "episodes": 7,
              "mean_return_last_100": -3.25, "inference_batch_size": 15.9, "loss/policy": -0.01, "loss/total": 1.0}
    line = format_progress(record, 7, "queue 3/64")
    assert line.startswith("frames 2,500,000 (25.0 % of 10,000,000; 2,500/s, 50m00s left) | episodes 7 | "
                           "return(last 7) -3.2 | loss policy -0.010 | inference batch 15.9 | queue 3/64")
    record.update(frames_per_second=0.0, seconds_left=None)
    assert "(25.0 % of 10,000,000; 0/s, n/a left)" in format_progress(record, 7, "")
    record.update(frames=0, total_frames=200_000_000, frames_per_second=4_000.0, seconds_left=50_000.0)
    assert "4,000/s, 13h53m left" in format_progress(record, 7, "")


def test_time_left_follows_the_rate_of_the_last_minutes_not_of_one_line():
    from learner.progress import TimeLeft

    left = TimeLeft(interval_s=5.0, now=0.0, frames=0, window_s=60.0)
    for second in range(5, 65, 5):  # 1,000 frames/s for a minute, but the last line at 100/s
        assert left.advance(second, 1_000 * second if second < 60 else 59_500, 1_000_000) is not None
    assert abs(left.advance(65.0, 64_500, 1_000_000) - (1_000_000 - 64_500) / 1_000) < 60
    # the start's slow warm-up leaves the window: the estimate then follows the steady rate
    for second in range(70, 200, 5):
        seconds_left = left.advance(second, 64_500 + 2_000 * (second - 65), 1_000_000)
    assert abs(seconds_left - (1_000_000 - 64_500 - 2_000 * 130) / 2_000) < 1
    assert left.advance(205.0, 1_000_000, 1_000_000) is None  # at the budget: nothing left


def test_a_resumed_run_reads_its_frames_stepped_from_the_last_complete_row(tmp_path):
    from learner.progress import EpisodeLog

    path = tmp_path / "episodes.csv"
    assert EpisodeLog.last_env_frames(str(path)) == 0
    path.write_text("env_frames,raw_return,clipped_return,length_frames,evaluation,time\n"
                    "400,1.0,1.0,100,0,1.0\n1200,2.0,2.0,100,0,2.0\n15")  # the last row is half written
    assert EpisodeLog.last_env_frames(str(path)) == 1200
