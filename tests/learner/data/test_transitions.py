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


def test_sampling_waits_for_the_minimum_fill_and_the_ratio():
    stop = threading.Event()
    replay = TransitionReplay(10, FIELDS, batch_size=2, rate=RateLimit(4, samples_per_insert=2.0),
                              max_lag_updates=100, seed=0)
    replay.insert(transitions(0, 3), stop)
    stop.set()
    assert replay.next_batch(stop) is None  # 3 < the minimum of 4
    stop.clear()
    replay.insert(transitions(3, 1), stop)
    batches = 0
    stop.set()  # returns None instead of waiting once the ratio is used up
    while replay.next_batch(stop) is not None:
        batches += 1
    assert batches == 4  # 4 inserted x 2 samples per insert / 2 per batch


def test_inserts_wait_while_training_lags_and_the_ring_overwrites_the_oldest():
    stop = threading.Event()
    replay = TransitionReplay(4, FIELDS, batch_size=1, rate=RateLimit(1, samples_per_insert=1.0),
                              max_lag_updates=2, seed=0)
    assert replay.insert(transitions(0, 2), stop)  # 2 updates owed: at the limit
    assert replay.insert(transitions(2, 1), stop)  # 2 owed before this one: allowed
    stop.set()
    assert not replay.insert(transitions(3, 1), stop)  # 3 owed: it would wait; stop ends the wait
    stop.clear()
    replay.next_batch(stop)
    assert replay.insert(transitions(3, 3), stop)
    assert replay.size == 4 and sorted(replay.state()["transitions/r"]) == [2.0, 3.0, 4.0, 5.0]


def test_state_round_trips():
    stop = threading.Event()
    replay = TransitionReplay(8, FIELDS, 2, RateLimit(1, 1.0), 100, seed=0)
    replay.insert(transitions(0, 5), stop)
    fresh = TransitionReplay(8, FIELDS, 2, RateLimit(1, 1.0), 100, seed=0)
    fresh.load_state(replay.state())
    assert fresh.size == 5 and fresh.num_inserted == 5
    np.testing.assert_array_equal(fresh.state()["transitions/x"], replay.state()["transitions/x"])
