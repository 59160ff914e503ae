import threading
import time

import numpy as np
import pytest

from learner.batcher import InferenceBatcher
from learner.data import LearnerStopped
from seed.codec import EnvStepBatch


def steps_for(marker, n):
    obs = np.full((n, 1), marker, np.float32)
    return EnvStepBatch.from_env(obs, np.zeros(n, np.float32), np.zeros(n, np.uint8), np.zeros(n, bool))


class RecordingPolicy:
    """Answers each env with 1000 * slot id + its observation, and records batch sizes."""

    def __init__(self):
        self.batch_sizes = []

    def __call__(self, slot_ids, steps):
        self.batch_sizes.append(len(slot_ids))
        return (1000 * slot_ids + steps.observations[:, 0]).astype(np.int32)


@pytest.fixture
def make_batcher():
    batchers = []

    def make(max_batch_envs, timeout_ms, policy, release=lambda ids: None, start=True):
        b = InferenceBatcher(policy, release, max_batch_envs, timeout_ms)
        if start:
            b.start()
        batchers.append(b)
        return b

    yield make
    for b in batchers:
        b.stop()


def test_batch_forms_at_the_size_limit(make_batcher):
    policy = RecordingPolicy()
    # A long timeout: only the size limit can close these batches quickly. All four requests are
    # queued before the inference thread starts: after its first batch it waits for no stragglers
    # (the policy call is far under a millisecond), so one submitted late would make a batch alone.
    batcher = make_batcher(8, 60_000, policy, start=False)
    futures = [batcher.submit(np.arange(4) + 4 * i, steps_for(i, 4)) for i in range(4)]
    batcher.start()
    for f in futures:
        f.result(timeout=10)
    assert policy.batch_sizes == [8, 8]


def test_batch_forms_at_the_timeout_with_fewer_envs(make_batcher):
    policy = RecordingPolicy()
    batcher = make_batcher(64, 50, policy)
    start = time.monotonic()
    actions = batcher.submit(np.arange(3), steps_for(7, 3)).result(timeout=10)
    assert policy.batch_sizes == [3]
    assert time.monotonic() - start >= 0.045  # it waited for the timeout, not for a full batch
    np.testing.assert_array_equal(actions, [7, 1007, 2007])


def test_batch_is_full_when_every_expected_env_is_in_it(make_batcher):
    """With 6 envs connected, a batch of 6 is complete: no waiting for the 64 of the size limit.
    Two more actors of 2 envs connect and send while that batch is inferred: the next one is 10."""
    policy = RecordingPolicy()
    later = []

    def policy_while_two_actors_connect(slot_ids, steps):
        if not later:  # in the inference thread, so all of it is queued before the next batch forms
            batcher.expect_envs(4)
            later.extend(batcher.submit(np.arange(2) + 2 * i, steps_for(i, 2)) for i in range(5))
        return policy(slot_ids, steps)

    batcher = make_batcher(64, 60_000, policy_while_two_actors_connect)
    batcher.expect_envs(6)
    futures = [batcher.submit(np.arange(2) + 2 * i, steps_for(i, 2)) for i in range(3)]
    for f in futures:
        f.result(timeout=10)  # a 60 s timeout would fail this
    for f in later:  # submitted before the first batch was answered
        f.result(timeout=10)
    assert policy.batch_sizes == [6, 10]


def test_stragglers_are_awaited_no_longer_than_a_policy_call(make_batcher):
    """Once calls are known to be quick, a partial batch goes out after about one call's time,
    not after batch_timeout_ms: a request that misses it is served by the next call anyway."""
    policy = RecordingPolicy()
    batcher = make_batcher(64, 60_000, policy)
    batcher.expect_envs(8)
    batcher.submit(np.arange(8), steps_for(0, 8)).result(timeout=10)  # full: goes out at once, timing a call
    actions = batcher.submit(np.arange(4), steps_for(1, 4)).result(timeout=10)  # a 60 s wait would fail this
    np.testing.assert_array_equal(actions, 1000 * np.arange(4) + 1)
    assert policy.batch_sizes == [8, 4]
    assert batcher.call_s < 10


def test_without_a_timeout_everything_already_queued_is_one_batch():
    """batch_timeout_ms=0 waits for nothing but still batches what arrived during the last call."""
    policy = RecordingPolicy()
    batcher = InferenceBatcher(policy, lambda ids: None, 8, 0)
    futures = [batcher.submit(np.arange(2) + 2 * i, steps_for(i, 2)) for i in range(5)]  # queued before start
    batcher.start()
    try:
        for f in futures:
            f.result(timeout=10)
    finally:
        batcher.stop()
    assert policy.batch_sizes == [8, 2]


def test_answers_reach_the_right_actor_and_env(make_batcher):
    policy = RecordingPolicy()
    batcher = make_batcher(16, 20, policy)
    results = {}

    def actor(i):
        ids = np.arange(3) + 10 * i
        for step in range(20):
            got = batcher.submit(ids, steps_for(step, 3)).result(timeout=10)
            results.setdefault(i, []).append(np.array_equal(got, 1000 * ids + step))

    threads = [threading.Thread(target=actor, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(all(ok) and len(ok) == 20 for ok in results.values()) and len(results) == 5
    assert max(policy.batch_sizes) > 3  # several actors really shared batches


def test_release_runs_after_the_slots_last_step(make_batcher):
    order = []
    policy = RecordingPolicy()
    batcher = make_batcher(4, 1, lambda ids, s: (order.append(("infer", tuple(ids))), policy(ids, s))[1],
                           release=lambda ids: order.append(("release", tuple(ids))))
    f = batcher.submit(np.array([5]), steps_for(0, 1))
    batcher.release(np.array([5]))
    f.result(timeout=10)
    deadline = time.monotonic() + 10
    while len(order) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order == [("infer", (5,)), ("release", (5,))]


def test_stop_fails_waiting_requests():
    batcher = InferenceBatcher(RecordingPolicy(), lambda ids: None, 4, 1)
    batcher.start()
    batcher.stop()
    with pytest.raises(LearnerStopped):
        batcher.submit(np.array([0]), steps_for(0, 1)).result(timeout=10)


def test_stop_before_start_fails_what_was_submitted():
    batcher = InferenceBatcher(RecordingPolicy(), lambda ids: None, 4, 1)
    waiting = batcher.submit(np.array([0]), steps_for(0, 1))
    batcher.stop()
    with pytest.raises(LearnerStopped):
        waiting.result(timeout=10)
