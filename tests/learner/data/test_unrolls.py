import threading
import time

import numpy as np

from learner.data.unrolls import UnrollQueue, UnrollStore


def make_store(unroll_length=3, max_slots=4):
    return UnrollStore(max_slots, unroll_length, {"t": ((), "int64"), "obs": ((2,), "float32")})


def test_consecutive_unrolls_share_their_boundary_step():
    store = make_store()
    ids = np.array([1, 3])
    outputs = []
    for t in range(7):
        out = store.append(ids, {"t": np.array([t, 100 + t]), "obs": np.full((2, 2), t, np.float32)})
        outputs.append(out)
    assert [o is not None for o in outputs] == [False, False, False, True, False, False, True]
    np.testing.assert_array_equal(outputs[3]["t"], [[0, 1, 2, 3], [100, 101, 102, 103]])
    np.testing.assert_array_equal(outputs[6]["t"], [[3, 4, 5, 6], [103, 104, 105, 106]])
    assert outputs[6]["obs"].shape == (2, 4, 2)


def test_slots_fill_independently_and_reset_drops_partial_unrolls():
    store = make_store()
    store.append(np.array([0]), {"t": np.array([0]), "obs": np.zeros((1, 2))})
    store.append(np.array([0]), {"t": np.array([1]), "obs": np.zeros((1, 2))})
    store.reset(np.array([0]))
    got = None
    for t in range(10, 14):
        got = store.append(np.array([0, 2]), {"t": np.array([t, t]), "obs": np.zeros((2, 2))})
    np.testing.assert_array_equal(got["t"], [[10, 11, 12, 13]] * 2)


def group(values):
    return {"t": np.array(values)}


def test_queue_batches_across_groups_in_order():
    q = UnrollQueue(capacity=10)
    q.put(group([1, 2, 3]))
    q.put(group([4, 5]))
    np.testing.assert_array_equal(q.get_batch(4)["t"], [1, 2, 3, 4])
    assert len(q) == 1
    np.testing.assert_array_equal(q.get_batch(1)["t"], [5])


def test_full_queue_blocks_the_producer_until_training_takes_a_batch():
    q = UnrollQueue(capacity=2)
    q.put(group([1, 2]))
    done = threading.Event()
    producer = threading.Thread(target=lambda: (q.put(group([3])), done.set()))
    producer.start()
    assert not done.wait(0.3)  # back-pressure: inference waits for training
    q.get_batch(2)
    assert done.wait(5)
    producer.join()


def test_closing_releases_a_blocked_producer_and_consumer_for_good():
    q = UnrollQueue(capacity=1)
    q.put(group([1]))
    results = []
    producer = threading.Thread(target=lambda: results.append(q.put(group([2]))))  # full: it waits
    producer.start()
    q.close()
    producer.join(10)
    assert results == [False]
    assert q.get_batch(1) is None  # an unroll is there, but a closed queue hands out nothing
    assert q.get_batch(5, deadline=None) is None


def test_a_consumer_waits_until_its_deadline():
    q = UnrollQueue(capacity=4)
    assert q.get_batch(1, deadline=time.monotonic() + 0.05) is None


def test_overlapping_sequences_for_burn_in_start_after_history_rows():
    store = UnrollStore(2, 4, {"t": ((), "int64")}, overlap=3, fresh_start=2)
    got = []
    for t in range(10):
        out = store.append(np.array([0]), {"t": np.array([t])})
        if out is not None:
            got.append(out["t"][0].tolist())
    # 7 rows: 2 history rows (unused at the start), then every 4 new steps.
    assert got[0][2:] == [0, 1, 2, 3, 4] and got[1] == [2, 3, 4, 5, 6, 7, 8]
