import threading

import numpy as np

from learner.data import RateLimit
from learner.data.sequence_replay import RateLimitedSampler
from tests.learner.data.test_sequence_replay import FRAME, make_replay, sequence


def test_rate_limit_waits_for_the_minimum_fill_then_keeps_the_ratio():
    rate = RateLimit(min_size=2, samples_per_insert=1.5)
    assert not rate.allows(size=1, inserted=1, sampled=0, batch=1)
    assert rate.allows(size=2, inserted=2, sampled=0, batch=3)
    assert not rate.allows(size=2, inserted=2, sampled=3, batch=1)  # 4 > 1.5 x 2
    assert RateLimit(min_size=2).allows(size=2, inserted=2, sampled=10 ** 6, batch=64)  # no ratio: fresh data paces


def test_sampler_hands_out_batches_only_as_inserts_allow_and_none_once_closed():
    replay = make_replay(16, sequence_steps=3, k=1)
    sampler = RateLimitedSampler(replay, batch_size=2, rate=RateLimit(min_size=2, samples_per_insert=1.0))

    def insert():
        replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8))))
        sampler.inserted()

    insert()
    assert sampler.next_batch(timeout_s=0) is None  # one stored, two needed
    insert()
    assert len(sampler.next_batch(timeout_s=0).indices) == 2 and sampler.sampled == 2
    assert sampler.next_batch(timeout_s=0) is None  # 2 sampled per 2 inserted: the ratio is spent
    insert()
    assert sampler.next_batch(timeout_s=0) is None  # 4 > 1.0 x 3
    insert()
    assert sampler.next_batch(timeout_s=0) is not None and sampler.sampled == 4
    insert(), insert()
    sampler.close()
    assert sampler.next_batch() is None and sampler.sampled == 4  # allowed, but closed


def test_inserts_wait_while_training_lags_the_ratio_and_go_on_once_it_samples():
    replay = make_replay(64, sequence_steps=3, k=1)
    sampler = RateLimitedSampler(replay, batch_size=2, rate=RateLimit(min_size=2, samples_per_insert=2.0))
    assert sampler.wait_for_training(max_lag_updates=0)  # before the minimum fill nothing is owed
    for _ in range(3):
        replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8))))
    assert sampler.updates_owed() == 3.0  # (2 x 3 inserted - 0 sampled) / batch 2
    assert sampler.wait_for_training(max_lag_updates=None)  # no limit: never waits
    # 3 batches behind: an insert with a limit of 1 waits until training on another thread has taken two.
    went_on = []
    waiting = threading.Thread(target=lambda: went_on.append(sampler.wait_for_training(max_lag_updates=1)))
    waiting.start()
    trainer = threading.Thread(target=lambda: [sampler.next_batch() for _ in range(2)])
    trainer.start()
    trainer.join(10)
    waiting.join(10)
    assert not trainer.is_alive() and went_on == [True] and sampler.updates_owed() == 1.0
    # 1 behind with a limit of 0: it waits, and closing the source ends the wait with False.
    gave_up = []
    waiting = threading.Thread(target=lambda: gave_up.append(sampler.wait_for_training(max_lag_updates=0)))
    waiting.start()
    sampler.close()
    waiting.join(10)
    assert gave_up == [False]
