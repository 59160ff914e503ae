"""V-trace against a plain numpy reference written from the IMPALA paper."""
import numpy as np
import pytest
import tensorflow as tf

from learner.agents.policy_losses import normalize_advantages
from learner.agents.vtrace import maths as vtrace


def reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, valid, rho_bar, c_bar, pg_rho_bar, lam):
    """IMPALA eq. 1 as an explicit sum, eq. 4 for the advantages; loops, no recursion."""
    T, B = rewards.shape
    rhos = np.exp(log_rhos)
    next_values = np.concatenate([values[1:], bootstrap[None]])
    deltas = valid * np.minimum(rho_bar, rhos) * (rewards + discounts * next_values - values)
    cs = lam * np.minimum(c_bar, rhos)
    vs = np.zeros_like(values)
    for b in range(B):
        for s in range(T):
            total, weight = 0.0, 1.0
            for t in range(s, T):
                total += weight * deltas[t, b]
                weight *= valid[t, b] * discounts[t, b] * cs[t, b]  # gamma^{t-s} prod c_i, cut at episode ends
            vs[s, b] = values[s, b] + total
    next_vs = np.concatenate([vs[1:], bootstrap[None]])
    pg_adv = valid * np.minimum(pg_rho_bar, rhos) * (rewards + discounts * next_vs - values)
    return vs, pg_adv


def episode_masks(terminated, truncated, gamma):
    """terminated/truncated per step [T+1, B] -> (discounts, valid) per transition [T, B]."""
    done = (terminated | truncated).astype(np.float32)
    return gamma * (1.0 - terminated[1:].astype(np.float32)), 1.0 - done[:-1]


@pytest.mark.parametrize("lam", [1.0, 0.95, 0.5])
@pytest.mark.parametrize("clip", [(1.0, 1.0, 1.0), (2.0, 1.0, 1.5), (0.5, 0.5, 0.5)])
def test_vtrace_matches_numpy_reference_with_episode_ends(lam, clip):
    rng = np.random.default_rng(42)
    T, B, gamma = 9, 6, 0.97
    terminated = rng.random((T + 1, B)) < 0.12
    truncated = (rng.random((T + 1, B)) < 0.08) & ~terminated
    discounts, valid = episode_masks(terminated, truncated, gamma)
    assert (valid == 0).any() and (discounts == 0).any()
    log_rhos = rng.normal(0, 0.8, (T, B)).astype(np.float32)
    rewards = rng.normal(0, 1, (T, B)).astype(np.float32)
    values = rng.normal(0, 1, (T, B)).astype(np.float32)
    bootstrap = rng.normal(0, 1, B).astype(np.float32)

    got = vtrace.vtrace_returns(log_rhos, discounts, rewards, values, bootstrap, valid, *clip, lambda_=lam)
    want_vs, want_adv = reference_vtrace(log_rhos, discounts, rewards, values, bootstrap, valid, *clip, lam)
    np.testing.assert_allclose(got.vs.numpy(), want_vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.pg_advantages.numpy(), want_adv, rtol=1e-5, atol=1e-5)


def test_on_policy_vtrace_is_the_discounted_return():
    """With pi == mu and lambda 1, v_s is the n-step return bootstrapped from V(x_T)."""
    T, gamma = 5, 0.9
    rewards = np.arange(1, T + 1, dtype=np.float32)[:, None]
    values = np.full((T, 1), 3.0, np.float32)
    bootstrap = np.array([10.0], np.float32)
    got = vtrace.vtrace_returns(np.zeros((T, 1)), np.full((T, 1), gamma), rewards, values, bootstrap,
                                np.ones((T, 1))).vs.numpy()[:, 0]
    want = [sum(gamma ** (t - s) * rewards[t, 0] for t in range(s, T)) + gamma ** (T - s) * 10.0 for s in range(T)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_termination_stops_bootstrapping_and_truncation_bootstraps_from_final_observation():
    # Steps 0..4; the action at step 1 ends the episode at step 2 (its final observation);
    # step 3 is the reset observation. Column 0 terminates there, column 1 is truncated.
    gamma = 0.5
    terminated = np.array([[0, 0], [0, 0], [1, 0], [0, 0], [0, 0]], bool)
    truncated = np.array([[0, 0], [0, 0], [0, 1], [0, 0], [0, 0]], bool)
    discounts, valid = episode_masks(terminated, truncated, gamma)
    rewards = np.ones((4, 2), np.float32)
    values = np.array([[0, 0], [0, 0], [8, 8], [0, 0]], np.float32)  # V(final obs) = 8
    bootstrap = np.zeros(2, np.float32)
    vs = vtrace.vtrace_returns(np.zeros((4, 2)), discounts, rewards, values, bootstrap, valid).vs.numpy()
    assert vs[1, 0] == pytest.approx(1.0)  # terminated: r only
    assert vs[1, 1] == pytest.approx(1.0 + gamma * 8.0)  # truncated: r + gamma V(final observation)
    assert vs[2, 0] == pytest.approx(8.0) and vs[2, 1] == pytest.approx(8.0)  # the reset step is no transition
    assert vs[0, 1] == pytest.approx(1.0 + gamma * (1.0 + gamma * 8.0))


def test_losses_ignore_invalid_transitions():
    rng = np.random.default_rng(0)
    logits = tf.constant(rng.normal(size=(4, 3, 5)), tf.float32)
    actions = tf.constant(rng.integers(0, 5, (4, 3)), tf.int32)
    advantages = tf.constant(rng.normal(size=(4, 3)), tf.float32)
    valid = np.ones((4, 3), np.float32)
    valid[2, 1] = 0
    changed = advantages.numpy()
    changed[2, 1] = 1e6
    assert vtrace.policy_gradient_loss(logits, actions, advantages, valid).numpy() == pytest.approx(
        vtrace.policy_gradient_loss(logits, actions, tf.constant(changed), valid).numpy())
    uniform = vtrace.entropy(tf.zeros((1, 5))).numpy()[0]
    assert uniform == pytest.approx(np.log(5), rel=1e-6)


def test_normalize_scales_valid_advantages_to_unit_deviation_and_zeroes_the_rest():
    rng = np.random.default_rng(3)
    x = rng.normal(0.2, 0.01, (6, 4)).astype(np.float32)
    valid = (rng.random((6, 4)) > 0.3).astype(np.float32)
    out = normalize_advantages(tf.constant(x), tf.constant(valid), center=False).numpy()
    kept = out[valid == 1]
    assert np.std(kept) == pytest.approx(1.0, rel=1e-4)
    np.testing.assert_allclose(kept, x[valid == 1] / np.std(x[valid == 1]), rtol=1e-4)  # signs and mean kept
    assert np.all(out[valid == 0] == 0)


def test_pg_advantages_are_the_unweighted_advantages_times_the_clipped_ratio():
    rng = np.random.default_rng(4)
    log_rhos = rng.normal(0, 0.5, (5, 3)).astype(np.float32)
    got = vtrace.vtrace_returns(log_rhos, np.full((5, 3), 0.9, np.float32), rng.normal(size=(5, 3)),
                                rng.normal(size=(5, 3)), rng.normal(size=3), np.ones((5, 3), np.float32),
                                clip_pg_rho_threshold=1.0)
    np.testing.assert_allclose(got.pg_advantages.numpy(),
                               np.minimum(1.0, np.exp(log_rhos)) * got.advantages.numpy(), rtol=1e-5)


def test_clipped_surrogate_matches_ppo_and_stops_pushing_outside_the_clip_range():
    log_rhos = tf.constant(np.log([[0.5, 0.95, 1.05, 1.5], [0.5, 0.95, 1.05, 1.5]]), tf.float32)
    advantages = tf.constant([[1.0, 1.0, 1.0, 1.0], [-1.0, -1.0, -1.0, -1.0]])
    valid = tf.ones((2, 4))
    rho = np.exp(log_rhos.numpy())
    a = advantages.numpy()
    want = -np.mean(np.minimum(rho * a, np.clip(rho, 0.8, 1.2) * a))
    with tf.GradientTape() as tape:
        tape.watch(log_rhos)
        loss = vtrace.clipped_surrogate_loss(log_rhos, advantages, valid, 0.2)
    assert loss.numpy() == pytest.approx(want, rel=1e-6)
    grad = tape.gradient(loss, log_rhos).numpy()
    # A positive advantage stops pulling once rho > 1.2, a negative one once rho < 0.8; inside, both pull.
    assert grad[0, 3] == 0 and grad[1, 0] == 0
    assert grad[0, 0] < 0 and grad[0, 1] < 0 and grad[0, 2] < 0
    assert grad[1, 1] > 0 and grad[1, 2] > 0 and grad[1, 3] > 0
