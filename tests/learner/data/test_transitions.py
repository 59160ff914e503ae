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
    """Batches handed out until the ratio says wait (a set stop turns the wait into None)."""
    stop = threading.Event()
    stop.set()
    count = 0
    while replay.next_batch(stop) is not None:
        count += 1
    return count


def test_sampling_waits_for_the_minimum_fill_and_the_ratio_counts_from_the_fill():
    stop = threading.Event()
    replay = TransitionReplay(10, FIELDS, batch_size=2, rate=RateLimit(4, samples_per_insert=2.0),
                              max_lag_updates=100, seed=0)
    replay.insert(transitions(0, 3), stop)
    assert batches_allowed(replay) == 0  # 3 < the minimum of 4
    replay.insert(transitions(3, 1), stop)
    assert batches_allowed(replay) == 1  # the prefill owes nothing; the insert that filled it owes one step
    replay.insert(transitions(4, 3), stop)
    assert batches_allowed(replay) == 3  # one gradient step (2 samples / 2 per batch) per insert


def test_inserts_wait_while_training_lags_and_the_ring_overwrites_the_oldest():
    stop = threading.Event()
    replay = TransitionReplay(4, FIELDS, batch_size=1, rate=RateLimit(1, samples_per_insert=1.0),
                              max_lag_updates=2, seed=0)
    assert replay.insert(transitions(0, 2), stop)  # filled at the second: 1 step owed
    assert replay.insert(transitions(2, 1), stop)  # 2 owed
    assert replay.insert(transitions(3, 1), stop)  # 2 owed before it: at the limit, allowed; 3 after
    stop.set()
    assert not replay.insert(transitions(4, 1), stop)  # 3 owed: it would wait; stop ends the wait
    stop.clear()
    replay.next_batch(stop)
    assert replay.insert(transitions(4, 2), stop)
    assert replay.size == 4 and sorted(replay.state()["transitions/r"]) == [2.0, 3.0, 4.0, 5.0]


def test_state_round_trips():
    stop = threading.Event()
    replay = TransitionReplay(8, FIELDS, 2, RateLimit(1, 1.0), 100, seed=0)
    replay.insert(transitions(0, 5), stop)
    fresh = TransitionReplay(8, FIELDS, 2, RateLimit(1, 1.0), 100, seed=0)
    fresh.load_state(replay.state())
    assert fresh.size == 5 and fresh.num_inserted == 5
    np.testing.assert_array_equal(fresh.state()["transitions/x"], replay.state()["transitions/x"])
