"""The replay sources of a V-trace mix: prioritised, elite and attentive sampling, and mixes of
all of them, on crafted unrolls whose right answer is known."""

import numpy as np
import pytest

from learner.data.elite import EliteSampler, off_policy_distances, select_elite
from learner.data.replay_samplers import AttentiveSampler, PrioritisedSampler, annealed_multiplier
from learner.data.unroll_replay import SOURCE_KINDS, UnrollMix, UnrollRing, split_counts
from learner.data.unrolls import UnrollQueue

T = 3  # steps per unroll (T+1 stored)
F = 4  # feature width


def unrolls(ids, features=None):
    """Unrolls named by `ids` (the `id` field), with `features` [n, F] repeated over their steps."""
    ids = np.asarray(ids)
    features = np.zeros((len(ids), F)) if features is None else np.asarray(features, np.float64)
    return {"id": np.repeat(ids[:, None], T + 1, 1).astype(np.int32),
            "features": np.repeat(features[:, None, :], T + 1, 1).astype(np.float32)}


def ring_of(n, features=None):
    ring = UnrollRing(n)
    ring.add(unrolls(np.arange(n), features), update=0)
    return ring


# Elite sampling

def test_select_elite_picks_what_each_strategy_says_on_crafted_distances_and_counts():
    distances = np.array([0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8, 0.4, 0.6])  # sorted: 1 5 3 7 2 8 4 6 0
    counts = np.array([0, 5, 0, 0, 0, 1, 0, 0, 0])
    assert list(select_elite(distances, counts, 3, "lowest")) == [1, 5, 3]
    # Three strata of the sorted order, [1 5 3] [7 2 8] [4 6 0]: each one's lowest.
    assert list(select_elite(distances, counts, 3, "strata")) == [1, 7, 4]
    # The least sampled first (counts 0 before 1 before 5), by distance among equals.
    assert list(select_elite(distances, counts, 3, "lowest_least_sampled")) == [3, 7, 2]
    # Per stratum, the least sampled: [1 5 3] -> 3 (count 0), [7 2 8] -> 7, [4 6 0] -> 4.
    assert list(select_elite(distances, counts, 3, "strata_least_sampled")) == [3, 7, 4]
    with pytest.raises(ValueError, match="9 candidates cannot give 10 distinct unrolls"):
        select_elite(distances, counts, 10, "lowest")


def test_off_policy_distances_match_their_definitions():
    rng = np.random.default_rng(0)
    stored, current = rng.normal(size=(5, T, F)), rng.normal(size=(5, T, F))
    np.testing.assert_allclose(off_policy_distances(stored, current, "ln_norm", 2.0),
                               np.linalg.norm(stored - current, axis=-1).mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(off_policy_distances(stored, current, "ln_norm", 1.0),
                               np.abs(stored - current).sum(axis=-1).mean(axis=1), rtol=1e-6)
    cosine = np.einsum("ntf,ntf->nt", stored, current) / (
        np.linalg.norm(stored, axis=-1) * np.linalg.norm(current, axis=-1))
    np.testing.assert_allclose(off_policy_distances(stored, current, "cos_dist"), (1 - cosine).mean(axis=1), rtol=1e-6)
    p = np.exp(stored) / np.exp(stored).sum(-1, keepdims=True)
    q = np.exp(current) / np.exp(current).sum(-1, keepdims=True)
    np.testing.assert_allclose(off_policy_distances(stored, current, "kl_div"),
                               (p * np.log(p / q)).sum(-1).mean(axis=1), rtol=1e-6)
    # The same features: no distance under any of them (a policy that has not moved).
    for kind in ("ln_norm", "cos_dist", "kl_div"):
        np.testing.assert_allclose(off_policy_distances(stored, stored, kind), 0.0, atol=1e-9)


def test_the_candidate_multiplier_anneals_from_lambda_to_one():
    assert annealed_multiplier(4.0, 0, 100, 0.5) == 4.0
    assert annealed_multiplier(4.0, 25, 100, 0.5) == pytest.approx(2.5)
    assert annealed_multiplier(4.0, 50, 100, 0.5) == 1.0 and annealed_multiplier(4.0, 90, 100, 0.5) == 1.0


def drift_encoder(unrolls):
    """The 'current policy': each unroll's features moved by its id, so unroll i has drifted i."""
    return unrolls["features"] + unrolls["id"][..., None].astype(np.float32) / 2.0


@pytest.mark.parametrize("prefetch", [0, 2])
def test_elite_sampling_replays_the_unrolls_the_policy_has_drifted_from_least(prefetch):
    ring = ring_of(8, np.random.default_rng(1).normal(size=(8, F)))
    sampler = EliteSampler(ring, 3, np.random.default_rng(0), drift_encoder, total_updates=1000,
                           lambda_batch_multiplier=8 / 3, prefetch=prefetch)  # 8 candidates: all of them
    try:
        drawn = sampler.draw(0, {})
        assert sorted(drawn.unrolls["id"][:, 0]) == [0, 1, 2] and sorted(drawn.positions) == [0, 1, 2]
        # ln_norm of a shift of id/2 in each of F features: id/2 * sqrt(F), averaged over the three.
        assert drawn.metrics["distance"] == pytest.approx(np.mean([0, 0.5, 1.0]) * np.sqrt(F), rel=1e-5)
        assert drawn.metrics["lambda"] == pytest.approx(8 / 3)
        for _ in range(3):  # prepared ahead or not, every batch makes the same choice here
            assert sorted(sampler.draw(1, {}).positions) == [0, 1, 2]
        if not prefetch:  # (prepared batches would still hold the choice made before the counts changed)
            # Sampled counts steer the least-sampled strategies: 0-2 taken, then 3-5 come first.
            ring.mark_sampled(np.array([0, 1, 2]), ring.generation[[0, 1, 2]])
            sampler.strategy = "lowest_least_sampled"
            assert sorted(sampler.draw(2, {}).unrolls["id"][:, 0]) == [3, 4, 5]
    finally:
        sampler.close()
    assert sampler._thread is None or not sampler._thread.is_alive(), "the candidate thread outlived its close"


def test_a_choice_made_ahead_does_not_count_towards_the_unroll_that_replaced_it():
    ring = ring_of(4)
    _, inserted_at, generations = ring.take(np.array([0, 1]))
    ring.add(unrolls([9]), update=5)  # overwrites place 0
    first = ring.mark_sampled(np.array([0, 1]), generations)
    assert list(ring.times_sampled) == [0, 1, 0, 0] and list(inserted_at) == [0, 0]
    # Only unroll 1 counts as replayed for the first time: place 0 holds another unroll now.
    assert list(first) == [False, True]
    assert list(ring.mark_sampled(np.array([1, 2]), ring.generation[[1, 2]])) == [False, True]


def test_elite_settings_are_refused_with_the_fix():
    ring = ring_of(4)
    with pytest.raises(ValueError, match="distance='kl_div' compares policies: set VTraceAgent.replay_features"):
        EliteSampler(ring, 2, np.random.default_rng(0), drift_encoder, 10, distance="kl_div")
    with pytest.raises(ValueError, match="EliteSampler.strategy='best' is unknown; use lowest, strata"):
        EliteSampler(ring, 2, np.random.default_rng(0), drift_encoder, 10, strategy="best")
    with pytest.raises(ValueError, match="lambda_batch_multiplier=0.5 draws fewer candidates than unrolls"):
        EliteSampler(ring, 2, np.random.default_rng(0), drift_encoder, 10, lambda_batch_multiplier=0.5)


def test_a_failing_candidate_thread_is_raised_on_the_training_thread():
    def broken(unrolls):
        raise FloatingPointError("encoder broke")

    sampler = EliteSampler(ring_of(4), 2, np.random.default_rng(0), broken, 10, prefetch=1)
    try:
        with pytest.raises(RuntimeError, match="candidate thread failed: encoder broke"):
            sampler.draw(0, {})
    finally:
        sampler.close()


# Attentive and prioritised sampling

def test_attentive_sampling_prefers_the_stored_states_nearest_the_ones_visited_now():
    # Unroll i sits at distance i from the origin; the fresh unrolls visit the origin and (10, 0, 0, 0).
    features = np.zeros((8, F))
    features[:, 1] = np.arange(8)
    sampler = AttentiveSampler(ring_of(8, features), 3, np.random.default_rng(0), total_updates=100,
                               lambda_batch_multiplier=8 / 3)
    fresh = unrolls([100, 101], [[0, 0, 0, 0], [10, 0, 0, 0]])
    drawn = sampler.draw(0, fresh)
    assert sorted(drawn.unrolls["id"][:, 0]) == [0, 1, 2]
    assert drawn.metrics["distance"] == pytest.approx(1.0)


def test_prioritised_sampling_follows_the_errors_and_weights_the_loss_by_them():
    ring = ring_of(4)
    sampler = PrioritisedSampler(ring, 1000, np.random.default_rng(0), priority_exponent=1.0,
                                 importance_exponent=1.0, min_priority=1e-9)
    sampler.inserted(np.arange(4))
    sampler.feedback(np.arange(4), np.array([1.0, 1.0, 2.0, 4.0]))
    drawn = sampler.draw(0, {})
    shares = np.bincount(drawn.positions, minlength=4) / 1000
    np.testing.assert_allclose(shares, [1 / 8, 1 / 8, 2 / 8, 4 / 8], atol=0.01)
    # (N P)^-1 scaled to a largest weight of 1: the rarest unrolls weigh 1, the most frequent 1/4.
    np.testing.assert_allclose(drawn.weights[drawn.positions == 0], 1.0)
    np.testing.assert_allclose(drawn.weights[drawn.positions == 3], 0.25)
    sampler.feedback(np.array([3]), np.array([np.nan]))  # a skipped update keeps the old priority
    assert sampler.priorities.tree.get([3])[0] == pytest.approx(4.0)
    sampler.inserted(np.array([0]))  # a new unroll gets the largest priority seen
    assert sampler.priorities.tree.get([0])[0] == pytest.approx(4.0)


# Mixes

def queue_of(n):
    queue = UnrollQueue(1000)
    assert queue.put(unrolls(np.arange(n), np.random.default_rng(2).normal(size=(n, F))))
    return queue


def identity_encoder(unrolls):
    return unrolls["features"]


@pytest.mark.parametrize("batch_size, sources, counts", [
    # Ratios that divide the batch: exact.
    (10, {k: 0.2 for k in SOURCE_KINDS}, [2, 2, 2, 2, 2]),
    # One that does not: the largest remainders, within one unroll of ratio x batch.
    (8, {"queue": 0.4, "uniform": 0.3, "elite": 0.3}, [3, 3, 2]),
])
def test_a_mix_draws_every_source_in_its_ratio(batch_size, sources, counts):
    mix = UnrollMix(queue_of(400), sources, batch_size, replay_capacity=64, min_replay_unrolls=8, seed=0,
                    encode=identity_encoder, total_fresh_unrolls=1000)
    assert list(mix.counts.values()) == counts == list(split_counts(batch_size, list(sources.values())))
    assert all(abs(c - sources[k] * batch_size) < 1 for k, c in mix.counts.items())
    for i in range(5):
        batch = mix.next_batch()
        got = np.bincount(batch["source"][0], minlength=len(SOURCE_KINDS))
        assert [got[SOURCE_KINDS.index(k)] for k in sources] == counts
        first_replays = [mix.metrics()[f"data/{k}_first_replays"] for k in sources if k != "queue"]
        if i == 0:  # nothing was replayed before the first source's draw (later ones may share its unrolls)
            assert first_replays[0] == 1.0
        assert all(0.0 <= share <= 1.0 for share in first_replays)
    mix.close()


def test_a_mix_that_cannot_choose_among_enough_stored_unrolls_is_refused():
    with pytest.raises(ValueError, match="takes 4 unrolls from one elite or attentive source but min_replay_unrolls "
                                         "is 2; raise min_replay_unrolls to at least 4"):
        UnrollMix(queue_of(10), {"queue": 0.5, "attentive": 0.5}, 8, replay_capacity=64, min_replay_unrolls=2)


def test_prioritised_feedback_reaches_the_unrolls_of_the_last_batch():
    mix = UnrollMix(queue_of(100), {"queue": 0.5, "prioritised": 0.5}, 4, replay_capacity=16, min_replay_unrolls=4,
                    seed=0)
    keys = mix.next_batch()["key"]
    fresh, drawn = keys[:2] % 16, keys[2:] % 16  # 2 fresh rows, then the 2 prioritised ones
    mix.feedback(keys, np.array([0.5, 1.5, 7.0, 9.0]))
    tree, alpha = mix.samplers["prioritised"].priorities.tree, mix.samplers["prioritised"].priorities.exponent
    np.testing.assert_allclose(tree.get(fresh), np.array([0.5, 1.5]) ** alpha, rtol=1e-2)
    np.testing.assert_allclose(tree.get(drawn), np.array([7.0, 9.0]) ** alpha, rtol=1e-2)


def test_prioritised_feedback_skips_a_drawn_unroll_whose_place_the_fresh_ones_took():
    # A full ring of 4: each batch's 2 fresh unrolls overwrite the 2 oldest, which it may have drawn.
    mix = UnrollMix(queue_of(100), {"queue": 0.5, "prioritised": 0.5}, 4, replay_capacity=4, min_replay_unrolls=4,
                    seed=0)
    for _ in range(20):
        keys = mix.next_batch()["key"]
        fresh, drawn = keys[:2] % 4, keys[2:] % 4
        mix.feedback(keys, np.array([1.0, 2.0, 50.0, 60.0]))
        tree, alpha = mix.samplers["prioritised"].priorities.tree, mix.samplers["prioritised"].priorities.exponent
        # The fresh unrolls get their own errors even where a drawn (evicted) one sat in their place.
        np.testing.assert_allclose(tree.get(fresh), np.array([1.0, 2.0]) ** alpha, rtol=1e-2)
        assert all(p in fresh or tree.get([p])[0] >= 50.0 ** alpha * 0.99 for p in drawn)


def test_late_feedback_reaches_only_the_unrolls_its_keys_still_name():
    """Feedback goes by the batch's keys, not by the last batch's rows: errors that come back after a
    later batch overwrote some of the unrolls leave those places' new unrolls alone."""
    mix = UnrollMix(queue_of(100), {"queue": 0.5, "prioritised": 0.5}, 4, replay_capacity=4, min_replay_unrolls=4,
                    seed=0)
    first = mix.next_batch()["key"]
    second = mix.next_batch()["key"]  # its 2 fresh unrolls overwrite 2 of the ring's 4 places
    tree, alpha = mix.samplers["prioritised"].priorities.tree, mix.samplers["prioritised"].priorities.exponent
    overwritten = set((second[:2] % 4).tolist())
    before = tree.get(np.arange(4)).copy()
    mix.feedback(first, np.full(4, 100.0))
    after = tree.get(np.arange(4))
    for position in range(4):
        if position in overwritten:
            assert after[position] == before[position]
        elif position in (first % 4):
            assert after[position] == pytest.approx(100.001 ** alpha, rel=1e-3)


def test_prioritised_sampling_resumed_from_a_ring_saved_without_it_starts_every_unroll_equal():
    sampler = PrioritisedSampler(ring_of(4), 100, np.random.default_rng(0))
    sampler.load_state({})
    assert len(set(sampler.draw(0, {}).positions)) == 4


def test_prioritised_feedback_reaches_unrolls_the_other_sources_replayed():
    mix = UnrollMix(queue_of(100), {"queue": 0.25, "uniform": 0.5, "prioritised": 0.25}, 4, replay_capacity=16,
                    min_replay_unrolls=4, seed=0)
    keys = mix.next_batch()["key"]
    uniform, fresh = keys[1:3] % 16, keys[:1] % 16
    errors = np.array([0.5, 3.0, 5.0, 7.0])  # 1 fresh row, 2 uniform ones, 1 prioritised
    mix.feedback(keys, errors)
    tree, alpha = mix.samplers["prioritised"].priorities.tree, mix.samplers["prioritised"].priorities.exponent
    checked = [(p, e) for p, e in zip(uniform, errors[1:3]) if p not in fresh and (uniform == p).sum() == 1]
    assert checked  # (a position drawn twice keeps its later row's error)
    for position, error in checked:
        assert tree.get([position])[0] == pytest.approx(error ** alpha, rel=1e-2)


def test_prioritised_sampling_never_lands_past_the_stored_unrolls():
    ring = UnrollRing(8)
    ring.add(unrolls([0, 1]), update=0)
    sampler = PrioritisedSampler(ring, 3, np.random.default_rng(0))
    sampler.inserted(np.arange(2))
    sampler.priorities.tree.sample = lambda n, rng: np.array([0, 1, 7])  # round-off's worst case: the far right leaf
    drawn = sampler.draw(0, {})
    assert list(drawn.positions) == [0, 1, 1] and np.isfinite(drawn.weights).all()


def test_a_source_whose_share_rounds_to_no_unroll_is_refused():
    with pytest.raises(ValueError, match="a 'prioritised' share of 0.05 of batch_size 8 rounds to no unroll per batch; "
                                         "raise the share or the batch size"):
        UnrollMix(queue_of(10), {"queue": 0.85, "uniform": 0.1, "prioritised": 0.05}, 8, replay_capacity=64,
                  min_replay_unrolls=8)


def test_a_ring_saved_before_its_first_unroll_resumes_empty():
    def mix():
        return UnrollMix(queue_of(100), {"queue": 0.5, "uniform": 0.5}, 4, replay_capacity=16, min_replay_unrolls=4,
                         seed=0)

    saved, resumed = mix(), mix()
    resumed.load_state(saved.state(), fields={"id": ((T + 1,), "int32"), "features": ((T + 1, F), "float32")})
    assert len(resumed.ring) == 0
    batch = resumed.next_batch()  # fills and trains as a fresh run does
    assert batch["id"].shape[1] == 4 and len(resumed.ring) == 6
