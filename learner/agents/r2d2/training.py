"""One R2D2 update: burn-in, n-step double-Q targets on rescaled values,
importance-weighted loss, new priorities, periodic target-network copy."""

import gin
import numpy as np
import tensorflow as tf

from learner.agents.gradient_step import GradientStep
from learner.agents.r2d2 import maths as r2d2
from learner.networks import DuelingQNetwork, EnvOutput
from seed.settings import require_fraction, require_positive


@gin.configurable(denylist=["online", "target", "optimizer", "burn_in"])
class R2D2Trainer:
    """Owns the update's tf.function and the target network, which it copies from the online one.

    Settings:
        `discount`: gamma per agent step (0.997, also in classic_r2d2.gin: with 0.99 one CartPole run in
            several settled on ~150-step episodes).
        `n_steps`: agent steps of discounted rewards in each target before it bootstraps from the target
            network (5; 3 in classic_r2d2.gin).
        `target_update_period`: gradient steps between copies of the online weights to the target network
            (2500; 100 in classic_r2d2.gin).
        `max_gradient_norm`: the global norm the gradient is clipped to (80; 40 in classic_r2d2.gin).
        `priority_eta`: a sequence's new priority is eta * max |TD error| + (1 - eta) * mean |TD error|
            over its steps (0.9).
        `jit_compile`: have XLA compile the whole update (False, as for V-trace: slower on CPU);
            learner/agents/gradient_step.py says when that pays.
    """

    def __init__(self, online: DuelingQNetwork, target: DuelingQNetwork, optimizer, burn_in: int,
                 discount: float = 0.997, n_steps: int = 5, target_update_period: int = 2500,
                 max_gradient_norm: float = 80.0, priority_eta: float = 0.9, jit_compile: bool = False):
        require_fraction("R2D2Trainer", discount=discount, priority_eta=priority_eta)
        require_positive("R2D2Trainer", n_steps=n_steps, target_update_period=target_update_period)
        self.online, self.target, self.optimizer = online, target, optimizer
        self.burn_in, self.discount, self.n_steps = burn_in, discount, n_steps
        self.target_update_period = target_update_period
        self.priority_eta = priority_eta
        self.step = GradientStep("R2D2Trainer", optimizer, online.trainable_variables, max_gradient_norm, jit_compile)
        self.copy_to_target()
        self._update = self.step.compile(self._update_impl)

    def copy_to_target(self) -> None:
        for target, online in zip(self.target.variables, self.online.variables):
            target.assign(online)

    def _unroll(self, network, sequences, start_state):
        """Q-values after the burn-in, from a state warmed up on the burn-in steps without gradient."""
        b = self.burn_in
        env_outputs = EnvOutput(sequences["reward"], sequences["first"], sequences["observation"])
        state = start_state
        if b:
            burn = EnvOutput(*(x[:b] for x in env_outputs))
            _, state = network.unroll(sequences["prev_action"][:b], burn, state)
            state = tf.stop_gradient(state)
        rest = EnvOutput(*(x[b:] for x in env_outputs))
        q_values, _ = network.unroll(sequences["prev_action"][b:], rest, state)
        return q_values

    def _update_impl(self, sequences, weights):
        b = self.burn_in
        target_q = self._unroll(self.target, sequences, sequences["core_state"])
        variables = self.online.trainable_variables
        with tf.GradientTape() as tape:
            q = self._unroll(self.online, sequences, sequences["core_state"])
            best = tf.argmax(q, axis=-1, output_type=tf.int32)  # double Q: online picks, target evaluates
            bootstrap = tf.gather(target_q, best, batch_dims=2)
            targets = tf.stop_gradient(r2d2.n_step_targets(
                sequences["reward"][b:], sequences["terminated"][b:], sequences["truncated"][b:], bootstrap,
                self.discount, self.n_steps))
            taken = tf.gather(q[:-1], sequences["action"][b:-1], batch_dims=2)
            done = tf.cast(sequences["terminated"][b:-1] | sequences["truncated"][b:-1], tf.float32)
            valid = 1.0 - done
            td = (targets - taken) * valid
            per_sequence = 0.5 * tf.reduce_sum(tf.square(td), 0) / tf.maximum(tf.reduce_sum(valid, 0), 1.0)
            loss = tf.reduce_mean(weights * per_sequence)
        applied = self.step.apply(loss, tape.gradient(loss, variables))
        abs_td = tf.abs(td)
        mean_abs_td = tf.reduce_sum(abs_td, 0) / tf.maximum(tf.reduce_sum(valid, 0), 1.0)
        priorities = self.priority_eta * tf.reduce_max(abs_td, 0) + (1 - self.priority_eta) * mean_abs_td
        return {"loss/td": loss, "mean_abs_td": tf.reduce_mean(mean_abs_td), **applied}, priorities

    def update(self, sequences: dict[str, np.ndarray], weights: np.ndarray):
        """`sequences` time-major [L, B, ...] (their `core_state` [B, S]); returns (metrics, new priorities [B])."""
        metrics, priorities = self._update(sequences, weights)
        if int(self.optimizer.iterations.numpy()) % self.target_update_period == 0:
            self.copy_to_target()
        return {k: v.numpy() for k, v in metrics.items()}, priorities.numpy()
