import threading

import numpy as np
import pytest

from learner.data.unroll_replay import SOURCE_KINDS, UnrollMix, UnrollRing, check_sources, split_counts
from learner.data.unrolls import UnrollQueue, UnrollStore

T = 4


def test_split_counts_sum_to_the_batch_and_follow_the_ratios():
    assert list(split_counts(32, [0.5, 0.5])) == [16, 16]
    assert list(split_counts(32, [0.25, 0.75])) == [8, 24]
    assert list(split_counts(10, [1 / 3, 1 / 3, 1 / 3])) == [4, 3, 3]
    assert split_counts(7, [0.7, 0.3]).sum() == 7


@pytest.mark.parametrize("sources, message", [
    ({"queue": 0.5, "uniform": 0.4}, "must sum to 1, got 0.9"),
    ({"queue": 0.5, "elit": 0.5}, "unknown source 'elit'"),
    ({"uniform": 1.0}, "needs a 'queue' share above 0"),
    ({"queue": 1.2, "uniform": -0.2}, "must not be negative"),
])
def test_bad_sources_are_refused_with_what_is_wrong(sources, message):
    with pytest.raises(ValueError, match=message):
        check_sources(sources, "VTraceAgent.sources")


def slot_steps(store, slot_ids, steps, episode_length=7):
    """Steps every slot `steps` times through the real unroll store; each step records its slot,
    its time index and whether it starts an episode, and the behaviour logits say the same.
    Returns the complete unrolls in the order the store cut them."""
    unrolls = []
    for t in range(steps):
        n = len(slot_ids)
        logits = np.stack([slot_ids * 1000.0 + t, np.full(n, t % episode_length == 0, np.float32)], axis=-1)
        out = store.append(slot_ids, {"slot": slot_ids.astype(np.int32), "t": np.full(n, t, np.int32),
                                      "first": np.full(n, t % episode_length == 0),
                                      "behaviour_logits": logits.astype(np.float32)})
        if out is not None:
            unrolls.append(out)
    return unrolls


def make_store(max_slots=8):
    return UnrollStore(max_slots, T, {"slot": ((), "int32"), "t": ((), "int32"), "first": ((), "bool"),
                                      "behaviour_logits": ((2,), "float32")})


def fill_queue(queue, groups):
    for group in groups:
        assert queue.put(group)


def test_a_mix_fills_its_replay_first_then_draws_its_sources_in_the_configured_ratio():
    queue = UnrollQueue(1000)
    fill_queue(queue, slot_steps(make_store(), np.arange(8), 41))  # 10 unrolls per slot
    mix = UnrollMix(queue, {"queue": 0.25, "uniform": 0.75}, batch_size=8, replay_capacity=64,
                    min_replay_unrolls=8, seed=0)
    first = mix.next_batch()
    # Four takes of 2 fill the replay to 8, then the batch takes 2 fresh and samples 6.
    assert mix.last_fresh == 8 + 2 and mix.shares == {"queue": 0.25, "uniform": 0.75}
    assert first["t"].shape == (T + 1, 8) and len(mix.ring) == 10  # time-major
    # Every unroll says where it came from, per step: the fresh ones first, then the replayed ones.
    np.testing.assert_array_equal(first["source"][0], [0] * 2 + [SOURCE_KINDS.index("uniform")] * 6)
    assert (first["source"] == first["source"][:1]).all() and (first["sample_weight"] == 1).all()
    for _ in range(5):
        batch = mix.next_batch()
        assert mix.last_fresh == 2 and mix.shares == {"queue": 0.25, "uniform": 0.75}
        assert batch["t"].shape == (T + 1, 8)
    assert len(mix.ring) == 10 + 5 * 2
    assert len(queue) == 80 - 10 - 5 * 2


def test_replayed_unrolls_are_whole_unrolls_of_one_slot_with_the_logits_they_were_acted_with():
    store = make_store()
    cut = [u for group in slot_steps(store, np.array([1, 5, 6]), 4 * T + 1) for u in
           ({k: v[i] for k, v in group.items()} for i in range(len(group["t"])))]
    queue = UnrollQueue(1000)
    fill_queue(queue, slot_steps(make_store(), np.array([1, 5, 6]), 4 * T + 1))
    mix = UnrollMix(queue, {"queue": 0.5, "uniform": 0.5}, batch_size=2, replay_capacity=100,
                    min_replay_unrolls=1, seed=1)
    replayed = []
    for _ in range(5):
        batch = mix.next_batch()
        batch.pop("key")  # per unroll; the rest is time-major [T+1, B, ...]
        replayed.append({k: v[:, 1] for k, v in batch.items()})  # fresh first, then replayed
    for unroll in replayed:
        assert len(set(unroll["slot"])) == 1, "a replayed unroll spans two slots"
        assert list(np.diff(unroll["t"])) == [1] * T, "a replayed unroll's steps are not consecutive"
        # The logits are the ones recorded when that slot acted at that step.
        np.testing.assert_array_equal(unroll["behaviour_logits"][:, 0], unroll["slot"] * 1000.0 + unroll["t"])
        np.testing.assert_array_equal(unroll["behaviour_logits"][:, 1], unroll["first"])
        np.testing.assert_array_equal(unroll["first"], unroll["t"] % 7 == 0)
        assert any(all(np.array_equal(unroll[k], c[k]) for k in c) for c in cut), "not an unroll the store cut"


def test_the_ring_evicts_its_oldest_unrolls_and_reports_their_age():
    ring = UnrollRing(capacity=3)
    for update in range(5):
        ring.add({"t": np.array([[update] * 2])}, update)
    assert len(ring) == 3
    rng = np.random.default_rng(0)
    positions = ring.uniform_positions(50, rng)
    sample, inserted_at, _ = ring.take(positions)
    assert set(sample["t"][:, 0]) == {2, 3, 4}
    np.testing.assert_array_equal(inserted_at, sample["t"][:, 0])  # each came in at its own update
    ring.add({"t": np.arange(10)[:, None].repeat(2, 1)}, 6)  # more at once than it holds: the newest stay
    assert set(ring.gather(ring.uniform_positions(50, rng))["t"][:, 0]) == {7, 8, 9}
    assert len(ring.uniform_positions(50, rng, replace=False)) == 3  # distinct: no more than it holds


def test_a_mix_waiting_for_fresh_unrolls_returns_none_after_its_timeout_and_once_closed():
    mix = UnrollMix(UnrollQueue(4), {"queue": 1.0}, batch_size=2, replay_capacity=4, min_replay_unrolls=1)
    assert mix.next_batch(timeout_s=0.05) is None
    batches = []
    waiting = threading.Thread(target=lambda: batches.append(mix.next_batch()), daemon=True)
    waiting.start()
    mix.close()
    waiting.join(10)
    assert batches == [None]
    assert not mix.queue.put({"t": np.zeros((1, T + 1))})  # inference gives up too
