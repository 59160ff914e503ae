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


def test_sampler_hands_out_batches_only_as_inserts_allow_and_returns_none_on_stop():
    replay = make_replay(16, sequence_steps=3, k=1)
    sampler = RateLimitedSampler(replay, batch_size=2, rate=RateLimit(min_size=2, samples_per_insert=1.0))
    stopped = threading.Event()
    stopped.set()

    def insert():
        replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8))))
        sampler.inserted()

    insert()
    assert sampler.next_batch(stopped) is None  # one stored, two needed
    insert()
    assert len(sampler.next_batch(stopped).indices) == 2 and sampler.sampled == 2
    assert sampler.next_batch(stopped) is None  # 2 sampled per 2 inserted: the ratio is spent
    insert()
    assert sampler.next_batch(stopped) is None  # 4 > 1.0 x 3
    insert()
    assert sampler.next_batch(stopped) is not None and sampler.sampled == 4


def test_inserts_wait_while_training_lags_the_ratio_and_go_on_once_it_samples():
    replay = make_replay(64, sequence_steps=3, k=1)
    sampler = RateLimitedSampler(replay, batch_size=2, rate=RateLimit(min_size=2, samples_per_insert=2.0))
    stopped = threading.Event()
    stopped.set()
    assert sampler.wait_for_training(stopped, max_lag_updates=0)  # before the minimum fill nothing is owed
    for _ in range(3):
        replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8))))
    assert sampler.updates_owed() == 3.0  # (2 x 3 inserted - 0 sampled) / batch 2
    assert not sampler.wait_for_training(stopped, max_lag_updates=1)  # 3 batches behind: the insert waits
    assert sampler.wait_for_training(stopped, max_lag_updates=None)  # no limit: never waits
    running = threading.Event()
    # Training takes two batches on another thread; the waiting insert goes on once it is 1 behind.
    trainer = threading.Thread(target=lambda: [sampler.next_batch(running) for _ in range(2)])
    trainer.start()
    assert sampler.wait_for_training(running, max_lag_updates=1)
    trainer.join(10)
    assert not trainer.is_alive() and sampler.updates_owed() == 1.0
