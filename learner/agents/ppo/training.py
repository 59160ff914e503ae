"""PPO's update: GAE once per batch (or before every epoch), then gradient steps on minibatches of its steps."""

import gin
import numpy as np
import tensorflow as tf

from learner.agents.gradient_step import GradientStep
from learner.agents.minibatches import PER_UNROLL_VALUES
from learner.agents.policy_losses import (
    check_entropy_decay,
    clipped_surrogate_loss,
    entropy_weight,
    episode_masks,
    masked_mean,
    normalize_advantages,
)
from learner.agents.ppo import maths as ppo
from learner.networks import EnvOutput
from seed.settings import require_fraction, require_non_negative


@gin.configurable
class PPOLoss:
    """The clipped surrogate, the value loss and the entropy bonus (Schulman et al. 2017)."""

    METRICS = ("loss/total", "loss/policy", "loss/value", "loss/entropy", "loss/entropy_cost", "policy/approx_kl",
               "policy/clip_fraction")

    def __init__(self, discount: float = 0.99, lambda_: float = 0.95, clip_epsilon: float = 0.2,
                 value_cost: float = 0.5, value_clip_epsilon: float = 0.0, entropy_cost: float = 0.01,
                 entropy_decay: str = "none", final_entropy_cost: float = 0.0, normalize_advantages: bool = True):
        """The loss's coefficients; rho = pi/mu is the ratio of the learner's policy to the one that acted.

        Settings:
            `discount`: gamma per agent step (0.99); 0 past a termination, a truncation bootstraps.
            `lambda_`: GAE's lambda (0.95).
            `clip_epsilon`: rho is clipped to 1 +- epsilon in the surrogate (0.2; 0.1 in atari_ppo.gin).
            `value_cost`: weight of the value loss 1/2 E[(V(x) - R)^2] in the total (0.5).
            `value_clip_epsilon`: above 0, the value loss also takes the error of V clipped to within this
                of the value the behaviour policy computed, the larger of the two (0.0: off; 0.2 in
                mujoco_ppo.gin). It is in the units of the rewards trained on (scaled ones with
                `PPOAgent.scale_rewards`), so it depends on the reward scale.
            `entropy_cost`: weight of the entropy bonus at the first gradient step (0.01; 0.0 in mujoco_ppo.gin).
            `entropy_decay`: how that weight goes to `final_entropy_cost` over the run's gradient steps (the
                ones the learning rate decays over: `training.schedule_frames`, else the budget): 'linear', or
                'none' (it stays at `entropy_cost`) ('none'). A wide policy explores early; a narrower one
                late plays closer to what it learned (PPO's sampled Pong play stays ~2 points under its greedy play).
            `final_entropy_cost`: the weight at the last gradient step with 'linear' (0.0).
            `normalize_advantages`: standardise the advantages over each minibatch's valid steps (True).
        """
        require_fraction("PPOLoss", discount=discount, lambda_=lambda_, clip_epsilon=clip_epsilon)
        require_non_negative("PPOLoss", value_cost=value_cost, value_clip_epsilon=value_clip_epsilon,
                             entropy_cost=entropy_cost, final_entropy_cost=final_entropy_cost)
        check_entropy_decay("PPOLoss", entropy_decay)
        if clip_epsilon == 0:
            raise ValueError("PPOLoss.clip_epsilon must be above 0 (0.2 is PPO's usual value)")
        self.discount, self.lambda_ = discount, lambda_
        self.clip_epsilon, self.value_cost, self.value_clip_epsilon = clip_epsilon, value_cost, value_clip_epsilon
        self.entropy_cost, self.normalize_advantages = entropy_cost, normalize_advantages
        self.entropy_decay, self.final_entropy_cost = entropy_decay, final_entropy_cost

    def entropy_weight(self, progress):
        """The entropy bonus's weight once the share `progress` of the run's gradient steps is taken."""
        return entropy_weight(self.entropy_cost, self.final_entropy_cost, self.entropy_decay, progress)

    def advantages(self, reward, value, terminated, truncated):
        """(valid, GAE advantages, returns), [T, B], from time-major [T+1, B] rewards, the values stored
        when acting and the end flags."""
        discounts, valid = episode_masks(terminated, truncated, self.discount)
        result = ppo.gae(reward[1:], value[:-1], value[-1], discounts, valid, self.lambda_)
        return valid, result.advantages, result.returns

    def __call__(self, network, distribution, steps: dict[str, tf.Tensor], progress=0.0):
        """`steps`: time-major [T, B] steps as PPOTrainer.prepare returns them; T is 1 when a feed-forward
        network trains on shuffled single steps; `progress`: the share of the run's gradient steps taken
        (for `entropy_decay`). Besides the metrics, returns the values it computed, [T, B], as
        PER_UNROLL_VALUES (what recomputed advantages take)."""
        valid = steps["valid"]
        outputs, _ = network.unroll(steps["prev_action"], EnvOutput(steps["reward"], steps["first"],
                                                                    steps["observation"]), steps["core_state"][0])
        params, values = outputs.policy_logits, outputs.baseline
        log_rhos = (distribution.log_prob(params, steps["action"]) -
                    distribution.log_prob(steps["behaviour_logits"], steps["action"]))
        advantages = steps["advantages"]
        if self.normalize_advantages:
            advantages = normalize_advantages(advantages, valid, center=True)
        pg_loss = clipped_surrogate_loss(log_rhos, advantages, valid, self.clip_epsilon)
        v_loss = ppo.value_loss(values, steps["returns"], steps["value"], valid, self.value_clip_epsilon)
        entropy = masked_mean(distribution.entropy(params), valid)
        entropy_cost = self.entropy_weight(progress)
        total = pg_loss + self.value_cost * v_loss - entropy_cost * entropy
        rhos = tf.exp(log_rhos)
        return total, {"loss/total": total, "loss/policy": pg_loss, "loss/value": v_loss, "loss/entropy": -entropy,
                       "loss/entropy_cost": entropy_cost,
                       "policy/approx_kl": masked_mean(rhos - 1.0 - log_rhos, valid),
                       "policy/clip_fraction": masked_mean(
                           tf.cast(tf.abs(rhos - 1.0) > self.clip_epsilon, tf.float32), valid),
                       PER_UNROLL_VALUES: tf.stop_gradient(values)}


@gin.configurable(denylist=["network", "distribution", "optimizer", "num_training_steps"])
class PPOTrainer:
    """Owns the update's tf.function; the network's variables are the ones inference reads.

    Settings:
        `max_gradient_norm`: the global norm the gradient is clipped to (0.5).
        `jit_compile`: have XLA compile the update (False: slower on CPU; benchmarks/xla.py measures it).
    """

    def __init__(self, network, distribution, optimizer, max_gradient_norm: float = 0.5, jit_compile: bool = False,
                 num_training_steps: int = 1):
        self.network, self.distribution, self.optimizer = network, distribution, optimizer
        self.num_training_steps = max(1, num_training_steps)  # what PPOLoss.entropy_decay decays over
        self.loss = PPOLoss()
        self.step = GradientStep("PPOTrainer", optimizer, network.trainable_variables, max_gradient_norm, jit_compile)
        self._update = self.step.compile(self._update_impl)
        self._advantages = tf.function(self.loss.advantages)
        self._values = tf.function(self._values_impl)

    def _values_impl(self, prev_action, reward, first, observation, core_state):
        outputs, _ = self.network.unroll(prev_action, EnvOutput(reward, first, observation), core_state[0])
        return outputs.baseline

    def _update_impl(self, unrolls):
        progress = tf.cast(self.optimizer.iterations, tf.float32) / self.num_training_steps
        with tf.GradientTape() as tape:
            total, metrics = self.loss(self.network, self.distribution, unrolls, progress)
        gradients = tape.gradient(total, self.network.trainable_variables)
        return {**metrics, **self.step.apply(total, gradients)}

    def prepare(self, batch: dict[str, np.ndarray], step_values: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Time-major [T+1, B] unrolls to time-major [T, B] steps (the unrolls without their bootstrap
        step, as views) with 'valid', 'advantages' and 'returns'. GAE takes the values stored when
        acting, or `step_values` [T, B] for the steps with the network's values now for the bootstrap
        steps (one forward pass over B observations); 'value' stays the stored one either way, as value
        clipping needs. Only the fields GAE needs go through TensorFlow, not the observations."""
        value = batch["value"]
        if step_values is not None:
            last = [batch[k][-1:] for k in ("prev_action", "reward", "first", "observation", "core_state")]
            value = np.concatenate([step_values.astype(np.float32), self._values(*last).numpy()], 0)
        computed = self._advantages(batch["reward"], value, batch["terminated"], batch["truncated"])
        steps = {k: v[:-1] for k, v in batch.items() if k not in ("terminated", "truncated")}
        steps.update({k: v.numpy() for k, v in zip(("valid", "advantages", "returns"), computed)})
        return steps

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """`batch` holds time-major [T, B, ...] steps as `prepare` returns them."""
        return {k: v.numpy() for k, v in self._update(batch).items()}
