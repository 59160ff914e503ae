"""One SAC update: the twin critics toward the soft Bellman target, the actor, the temperature, then
the Polyak-averaged target critics; all skipped together when anything is not finite."""

import gin
import keras
import numpy as np
import tensorflow as tf

from learner.agents.sac import maths as sac
from learner.distributions import TanhGaussian
from seed.settings import require_fraction, require_positive


@gin.configurable(denylist=["actor", "critics", "target_critics", "action_size"])
class SACTrainer:
    """Owns the update's tf.function and the three optimizers; the actor's variables are the ones
    inference reads.

    Settings:
        `discount`: gamma per agent step (0.99); 0 past a termination, a truncation bootstraps.
        `actor_learning_rate`: Adam's step size for the policy (3e-4).
        `critic_learning_rate`: Adam's step size for the Q-networks (1e-3, CleanRL's).
        `alpha_learning_rate`: Adam's step size for log alpha (1e-3).
        `initial_alpha`: the entropy temperature at the start (1.0).
        `target_entropy`: the entropy the temperature steers the policy to (None: -|A|, SAC's default).
        `tau`: the Polyak factor of the target critics per update (0.005).
        `max_gradient_norm`: the global norm each network's gradient is clipped to (0: no clipping).
    """

    METRICS = ("loss/critic", "loss/actor", "loss/alpha", "alpha", "entropy", "q_mean")

    def __init__(self, actor, critics, target_critics, action_size: int, discount: float = 0.99,
                 actor_learning_rate: float = 3e-4, critic_learning_rate: float = 1e-3,
                 alpha_learning_rate: float = 1e-3, initial_alpha: float = 1.0, target_entropy: float = None,
                 tau: float = 0.005, max_gradient_norm: float = 0.0):
        require_fraction("SACTrainer", discount=discount, tau=tau)
        require_positive("SACTrainer", actor_learning_rate=actor_learning_rate,
                         critic_learning_rate=critic_learning_rate, alpha_learning_rate=alpha_learning_rate,
                         initial_alpha=initial_alpha)
        self.actor, self.critics, self.target_critics = actor, critics, target_critics
        self.distribution = TanhGaussian(-np.ones(action_size), np.ones(action_size))
        self.discount, self.tau, self.max_gradient_norm = discount, tau, max_gradient_norm
        self.target_entropy = float(-action_size if target_entropy is None else target_entropy)
        self.log_alpha = tf.Variable(np.log(initial_alpha), dtype=tf.float32, name="log_alpha")
        self.actor_optimizer = keras.optimizers.Adam(actor_learning_rate, name="actor_adam")
        self.critic_optimizer = keras.optimizers.Adam(critic_learning_rate, name="critic_adam")
        self.alpha_optimizer = keras.optimizers.Adam(alpha_learning_rate, name="alpha_adam")
        self._critic_variables = [v for q in critics for v in q.trainable_variables]
        self._groups = ((self.critic_optimizer, self._critic_variables),
                        (self.actor_optimizer, list(actor.trainable_variables)),
                        (self.alpha_optimizer, [self.log_alpha]))
        for optimizer, variables in self._groups:  # slots exist before a checkpoint restores them
            optimizer.build(variables)
        for target, source in zip(target_critics, critics):
            for t, s in zip(target.variables, source.variables):
                t.assign(s)
        self._update = tf.function(self._update_impl)

    def _sample(self, observations):
        params = self.actor.params(observations)
        u = self.distribution.sample(params)
        return tf.tanh(u), self.distribution.log_prob(params, u)

    def _update_impl(self, batch):
        observations, actions = batch["observation"], batch["action"]
        rewards = batch["reward"]
        discounts = self.discount * (1.0 - tf.cast(batch["terminated"], tf.float32))
        alpha = tf.exp(self.log_alpha)
        next_actions, next_log_probs = self._sample(batch["next_observation"])
        targets = sac.soft_q_target(rewards, discounts,
                                    self.target_critics[0](batch["next_observation"], next_actions),
                                    self.target_critics[1](batch["next_observation"], next_actions),
                                    next_log_probs, alpha)
        with tf.GradientTape(persistent=True) as tape:
            q1, q2 = (q(observations, actions) for q in self.critics)
            critic_loss = sac.critic_loss(q1, q2, targets)
            new_actions, log_probs = self._sample(observations)
            actor_loss = sac.actor_loss(log_probs, self.critics[0](observations, new_actions),
                                        self.critics[1](observations, new_actions), tf.stop_gradient(alpha))
            alpha_loss = sac.temperature_loss(self.log_alpha, log_probs, self.target_entropy)
        gradients = [tape.gradient(critic_loss, self._critic_variables),
                     tape.gradient(actor_loss, self.actor.trainable_variables),
                     tape.gradient(alpha_loss, [self.log_alpha])]
        del tape
        if self.max_gradient_norm:
            gradients = [tf.clip_by_global_norm(g, self.max_gradient_norm)[0] for g in gradients]
        finite = tf.reduce_all([tf.math.is_finite(x) for x in (critic_loss, actor_loss, alpha_loss)])
        for g in gradients:
            finite &= tf.math.is_finite(tf.linalg.global_norm(g))
        if finite:  # the actor's gradient went through the critics as they were before this step
            for (optimizer, variables), g in zip(self._groups, gradients):
                optimizer.apply_gradients(zip(g, variables))
            for target, source in zip(self.target_critics, self.critics):
                sac.polyak_update(target.variables, source.variables, self.tau)
        return {"loss/critic": critic_loss, "loss/actor": actor_loss, "loss/alpha": alpha_loss, "alpha": alpha,
                "entropy": -tf.reduce_mean(log_probs), "q_mean": tf.reduce_mean(q1), "update_applied": finite}

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        return {k: v.numpy() for k, v in self._update(batch).items()}
