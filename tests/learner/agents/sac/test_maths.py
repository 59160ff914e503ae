"""SAC's maths against numpy references: the soft Bellman target, the policy and temperature
losses, and the Polyak update."""
import numpy as np
import tensorflow as tf

from learner.agents.sac import maths as sac

RNG = np.random.default_rng(0)
B = 6


def test_soft_q_target_takes_the_smaller_critic_and_the_entropy_bonus_and_stops_at_terminations():
    r, q1, q2, logp = (RNG.normal(size=B).astype(np.float32) for _ in range(4))
    discounts = np.array([0.99, 0.0, 0.99, 0.99, 0.0, 0.99], np.float32)
    y = sac.soft_q_target(r, discounts, q1, q2, logp, 0.2).numpy()
    np.testing.assert_allclose(y, r + discounts * (np.minimum(q1, q2) - 0.2 * logp), rtol=1e-6)
    np.testing.assert_allclose(y[[1, 4]], r[[1, 4]])


def test_critic_and_actor_losses():
    q1, q2, y, logp = (RNG.normal(size=B).astype(np.float32) for _ in range(4))
    np.testing.assert_allclose(sac.critic_loss(q1, q2, y).numpy(), np.mean((q1 - y) ** 2) + np.mean((q2 - y) ** 2),
                               rtol=1e-6)
    np.testing.assert_allclose(sac.actor_loss(logp, q1, q2, 0.5).numpy(), np.mean(0.5 * logp - np.minimum(q1, q2)),
                               rtol=1e-6)


def test_the_temperature_rises_while_the_entropy_is_below_its_target():
    log_alpha = tf.Variable(0.0)
    logp = tf.constant(np.full(B, 1.0, np.float32))  # entropy about -1, below a target of 0
    with tf.GradientTape() as tape:
        loss = sac.temperature_loss(log_alpha, logp, target_entropy=0.0)
    np.testing.assert_allclose(loss.numpy(), -1.0, rtol=1e-6)
    assert tape.gradient(loss, log_alpha).numpy() < 0  # gradient descent raises log alpha


def test_polyak_update_moves_targets_by_tau():
    target, source = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 6.0])
    sac.polyak_update([target], [source], 0.25)
    np.testing.assert_allclose(target.numpy(), [1.5, 3.0])
