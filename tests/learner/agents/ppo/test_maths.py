"""PPO's maths against numpy references: GAE over episode ends and truncations, the clipped
surrogate at known inputs, value clipping and advantage standardisation."""
import numpy as np

from learner.agents.policy_losses import clipped_surrogate_loss, normalize_advantages
from learner.agents.ppo import maths as ppo


def numpy_gae(rewards, values, bootstrap, discounts, valid, lambda_):
    """The textbook backward loop, one env at a time."""
    T, B = rewards.shape
    advantages = np.zeros((T, B))
    for b in range(B):
        next_advantage = 0.0
        for t in reversed(range(T)):
            next_value = values[t + 1, b] if t + 1 < T else bootstrap[b]
            if not valid[t, b]:
                next_advantage = 0.0  # a reset step: no transition, nothing carried across it
                continue
            delta = rewards[t, b] + discounts[t, b] * next_value - values[t, b]
            next_advantage = delta + discounts[t, b] * lambda_ * next_advantage
            advantages[t, b] = next_advantage
    return advantages


def test_gae_matches_the_backward_loop_across_terminations_and_truncations():
    rng = np.random.default_rng(0)
    T, B = 12, 5
    rewards, values, bootstrap = rng.normal(size=(T, B)), rng.normal(size=(T, B)), rng.normal(size=B)
    terminated = rng.random((T + 1, B)) < 0.15
    truncated = (rng.random((T + 1, B)) < 0.1) & ~terminated
    done = terminated | truncated
    discounts = 0.97 * (1 - terminated[1:])
    valid = 1.0 - done[:-1]
    result = ppo.gae(rewards, values, bootstrap, discounts, valid, 0.9)
    expected = numpy_gae(rewards, values, bootstrap, discounts, valid, 0.9)
    np.testing.assert_allclose(result.advantages.numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.returns.numpy(), expected + values,
                               rtol=1e-5, atol=1e-5)


def test_gae_with_lambda_1_and_no_episode_end_is_the_discounted_return_minus_the_value():
    T = 4
    rewards = np.ones((T, 1))
    values = np.zeros((T, 1))
    result = ppo.gae(rewards, values, np.array([10.0]), np.full((T, 1), 0.5), np.ones((T, 1)), 1.0)
    # from t=0: 1 + 0.5 + 0.25 + 0.125 + 0.0625 * 10
    np.testing.assert_allclose(result.advantages.numpy()[0, 0], 1.875 + 0.625, rtol=1e-6)


def test_the_clipped_surrogate_at_known_inputs():
    log_rhos = np.log(np.array([[1.5, 0.5, 1.05, 1.5]], np.float32))
    advantages = np.array([[1.0, -1.0, 2.0, -1.0]], np.float32)
    # rho A vs clip(rho, 0.8, 1.2) A, the smaller: min(1.5, 1.2)=1.2; min(-0.5, -0.8)=-0.8; 2.1; min(-1.5,-1.2)=-1.5
    loss = clipped_surrogate_loss(log_rhos, advantages, np.ones((1, 4), np.float32), 0.2)
    np.testing.assert_allclose(loss.numpy(), -np.mean([1.2, -0.8, 2.1, -1.5]), rtol=1e-5)


def test_value_clipping_takes_the_larger_error():
    values, returns, old = np.array([[2.0, 0.0]]), np.array([[0.0, 0.0]]), np.array([[0.0, 0.5]])
    unclipped = ppo.value_loss(values, returns, old, np.ones((1, 2)))
    clipped = ppo.value_loss(values, returns, old, np.ones((1, 2)), clip_epsilon=0.2)
    np.testing.assert_allclose(unclipped.numpy(), 0.5 * np.mean([4.0, 0.0]), rtol=1e-6)
    # first: V clipped to 0.2, error 0.04 < 4, keeps 4; second: V clipped to 0.3, error 0.09 > 0
    np.testing.assert_allclose(clipped.numpy(), 0.5 * np.mean([4.0, 0.09]), rtol=1e-5)


def test_standardize_uses_valid_steps_only():
    x = np.array([[1.0, 3.0, 100.0]])
    out = normalize_advantages(x, np.array([[1.0, 1.0, 0.0]]), center=True).numpy()
    np.testing.assert_allclose(out, [[-1.0, 1.0, 0.0]], atol=1e-6)
