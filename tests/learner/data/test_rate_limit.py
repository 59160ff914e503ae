import threading

import numpy as np

from learner.data import RateLimit, RateLimiter
from learner.data.sequence_replay import RateLimitedSampler
from tests.learner.data.test_sequence_replay import FRAME, make_replay, sequence


def test_rate_limiter_waits_for_the_minimum_fill_then_keeps_the_ratio_counted_from_zero():
    limiter = RateLimiter(RateLimit(min_size=2, samples_per_insert=1.5), batch_size=3)
    limiter.add_inserted(1, size=1)
    assert not limiter.may_sample() and limiter.updates_owed() == 0.0
    limiter.add_inserted(1, size=2)
    assert limiter.may_sample() and limiter.updates_owed() == 1.0  # 1.5 x 2 inserts = 3 samples
    limiter.add_sampled()
    assert not limiter.may_sample() and not limiter.lags(0)
    limiter.add_inserted(4, size=6)
    assert limiter.updates_owed() == 2.0 and limiter.lags(1) and not limiter.lags(2) and not limiter.lags(None)
    assert limiter.take_inserted() == 6 and limiter.take_inserted() == 0


def test_rate_limiter_counted_from_the_fill_owes_nothing_for_the_prefill():
    limiter = RateLimiter(RateLimit(min_size=100, samples_per_insert=4.0), batch_size=8, count_from_fill=True)
    limiter.add_inserted(100, size=100)
    assert not limiter.may_sample() and limiter.updates_owed() == 0.5  # 4 x 1 counted insert / 8, not 4 x 100
    limiter.add_inserted(1, size=101)
    assert limiter.may_sample() and limiter.updates_owed() == 1.0
    limiter.add_sampled()
    assert not limiter.may_sample()


def test_a_restored_rate_limiter_goes_on_and_counts_nothing_restored_as_new():
    limiter = RateLimiter(RateLimit(min_size=2, samples_per_insert=1.0), batch_size=2, count_from_fill=True)
    limiter.add_inserted(5, size=5)
    limiter.add_sampled()
    restored = RateLimiter(RateLimit(min_size=2, samples_per_insert=1.0), batch_size=2, count_from_fill=True)
    restored.load_state(limiter.state())
    assert (restored.inserted, restored.sampled, restored.inserted_at_fill) == (5, 2, 5)
    assert restored.take_inserted() == 0 and restored.updates_owed() == limiter.updates_owed()


def test_without_a_ratio_the_fill_alone_paces_sampling():
    limiter = RateLimiter(RateLimit(min_size=2), batch_size=64)
    limiter.add_inserted(2, size=2)
    for _ in range(10):
        limiter.add_sampled()
    assert limiter.may_sample() and limiter.updates_owed() == 0.0


def test_sampler_hands_out_batches_only_as_inserts_allow_and_none_once_closed():
    replay = make_replay(16, sequence_steps=3, k=1)
    sampler = RateLimitedSampler(replay, batch_size=2, rate=RateLimit(min_size=2, samples_per_insert=1.0))

    def insert():
        sampler.inserted(replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8)))))

    insert()
    assert sampler.next_batch(timeout_s=0) is None  # one stored, two needed
    insert()
    assert len(sampler.next_batch(timeout_s=0).indices) == 2 and sampler.limiter.sampled == 2
    assert sampler.next_batch(timeout_s=0) is None  # 2 sampled per 2 inserted: the ratio is spent
    insert()
    assert sampler.next_batch(timeout_s=0) is None  # 4 > 1.0 x 3
    insert()
    assert sampler.next_batch(timeout_s=0) is not None and sampler.limiter.sampled == 4
    insert(), insert()
    sampler.close()
    assert sampler.next_batch() is None and sampler.limiter.sampled == 4  # allowed, but closed


def test_inserts_wait_while_training_lags_the_ratio_and_go_on_once_it_samples():
    replay = make_replay(64, sequence_steps=3, k=1)
    sampler = RateLimitedSampler(replay, batch_size=2, rate=RateLimit(min_size=2, samples_per_insert=2.0))
    assert sampler.wait_for_training(max_lag_updates=0)  # before the minimum fill nothing is owed
    for _ in range(3):
        sampler.inserted(replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8)))))
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
