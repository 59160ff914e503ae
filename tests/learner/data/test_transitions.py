"""The transition replay keeps its replay ratio in both directions: sampling waits for inserts,
and inserts wait while training lags."""
import threading

import numpy as np

from learner.data import RateLimit
from learner.data.transitions import TransitionReplay

FIELDS = {"x": ((2,), "float32"), "r": ((), "float32")}


def transitions(start, n):
    return {"x": np.arange(start, start + n, dtype=np.float32)[:, None].repeat(2, 1),
            "r": np.arange(start, start + n, dtype=np.float32)}


def batches_allowed(replay):
    """Batches handed out until the ratio says wait (a timeout of 0 turns the wait into None)."""
    count = 0
    while replay.next_batch(timeout_s=0) is not None:
        count += 1
    return count


def test_sampling_waits_for_the_minimum_fill_and_the_ratio_counts_from_the_fill():
    replay = TransitionReplay(10, FIELDS, batch_size=2, rate=RateLimit(4, samples_per_insert=2.0),
                              max_lag_updates=100, seed=0)
    replay.insert(transitions(0, 3))
    assert batches_allowed(replay) == 0  # 3 < the minimum of 4
    replay.insert(transitions(3, 1))
    assert batches_allowed(replay) == 1  # the prefill owes nothing; the insert that filled it owes one step
    replay.insert(transitions(4, 3))
    assert batches_allowed(replay) == 3  # one gradient step (2 samples / 2 per batch) per insert


def test_inserts_wait_while_training_lags_and_the_ring_overwrites_the_oldest():
    replay = TransitionReplay(4, FIELDS, batch_size=1, rate=RateLimit(1, samples_per_insert=1.0),
                              max_lag_updates=2, seed=0)
    assert replay.insert(transitions(0, 2))  # filled at the second: 1 step owed
    assert replay.insert(transitions(2, 1))  # 2 owed
    assert replay.insert(transitions(3, 1))  # 2 owed before it: at the limit, allowed; 3 after
    inserted = []  # 3 owed: the next insert waits until training takes a step on this thread
    waiting = threading.Thread(target=lambda: inserted.append(replay.insert(transitions(4, 2))))
    waiting.start()
    assert replay.next_batch(timeout_s=10) is not None
    waiting.join(10)
    assert inserted == [True]
    assert replay.size == 4 and sorted(replay.state()["transitions/r"]) == [2.0, 3.0, 4.0, 5.0]
    gave_up = []  # 4 owed now: another insert waits, and closing the replay ends the wait with False
    waiting = threading.Thread(target=lambda: gave_up.append(replay.insert(transitions(6, 1))))
    waiting.start()
    replay.close()
    waiting.join(10)
    assert gave_up == [False] and replay.next_batch() is None


def test_state_round_trips():
    replay = TransitionReplay(8, FIELDS, 2, RateLimit(1, 1.0), 100, seed=0)
    replay.insert(transitions(0, 5))
    fresh = TransitionReplay(8, FIELDS, 2, RateLimit(1, 1.0), 100, seed=0)
    fresh.load_state(replay.state())
    assert fresh.size == 5 and fresh.limiter.inserted == 5
    np.testing.assert_array_equal(fresh.state()["transitions/x"], replay.state()["transitions/x"])
