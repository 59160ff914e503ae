"""The SAC agent on the central-inference learner (Haarnoja et al. 2018): the learner samples
actions from its tanh-Gaussian policy for every actor, assembles transitions from the same steps
into a replay, and trains twin critics, the policy and the entropy temperature from it at a set
number of gradient steps per env step. Continuous actions only."""
import logging

import gin
import numpy as np
import tensorflow as tf

from learner.agents.base import AgentContext, EvaluationPolicy, batched_policy, bound_setting, numpy_seed, register
from learner.agents.sac.networks import QNetwork, SoftActor
from learner.agents.sac.training import SACTrainer
from learner.data import RateLimit
from learner.data.adders import TransitionAdder
from learner.data.transitions import TransitionReplay
from learner.distributions import scale_to_bounds
from learner.networks import EnvOutput
from seed.settings import require_positive
from seed.specs import EnvSpec

log = logging.getLogger(__name__)


@register
@gin.configurable(denylist=["context"])
class SACAgent:
    """Each env's consecutive steps (x_t, a_t) and (x_{t+1}, r_{t+1}, terminated) become one transition
    (a transition that starts at an episode's final observation is none and is dropped). Until the
    replay holds `min_replay_size` transitions the actions are uniform within the bounds.

    Settings:
        `batch_size`: transitions per gradient step (256).
        `replay_capacity`: transitions the replay holds, the oldest overwritten (1,000,000).
        `min_replay_size`: transitions in the replay before training starts, all acted uniformly at random
            (5,000; 1,000 in classic_sac.gin).
        `updates_per_step`: gradient steps per env step once training started (1.0): the replay ratio.
        `max_lag_updates`: how far training may fall behind that ratio, in gradient steps, before inference
            waits for it (100): a slow learner slows the actors instead of training less per step.
        `hidden_sizes`: widths of the actor's and each critic's ReLU layers ((256, 256)).
        `checkpoint_replay`: save the replay beside every checkpoint and restore it on resume (False).
    """

    supports_strategy = False
    action_kinds = ("continuous",)
    evaluation_slots = None
    state_size = 0

    def __init__(self, context: AgentContext, batch_size: int = 256, replay_capacity: int = 1_000_000,
                 min_replay_size: int = 5_000, updates_per_step: float = 1.0, max_lag_updates: int = 100,
                 hidden_sizes: tuple[int, ...] = (256, 256), checkpoint_replay: bool = False):
        require_positive("SACAgent", batch_size=batch_size, replay_capacity=replay_capacity,
                         min_replay_size=min_replay_size, updates_per_step=updates_per_step,
                         max_lag_updates=max_lag_updates)
        if min_replay_size > replay_capacity:
            raise ValueError(f"SACAgent.min_replay_size={min_replay_size} exceeds replay_capacity={replay_capacity}")
        spec = context.spec
        action = spec.action
        if len(action.shape) != 1:
            raise ValueError(f"continuous actions of shape {action.shape}; SACAgent takes a vector (A,)")
        size = action.shape[0]
        self._low, self._high = np.asarray(action.low, np.float32), np.asarray(action.high, np.float32)
        self.actor = self.build_network(spec, context.num_stacked_frames, hidden_sizes)
        shape = self.actor.observation_shape
        self.critics = [QNetwork(size, shape, hidden_sizes, f"q{i}") for i in (1, 2)]
        self.target_critics = [QNetwork(size, shape, hidden_sizes, f"target_q{i}") for i in (1, 2)]
        self.trainer = SACTrainer(self.actor, self.critics, self.target_critics, size)
        self.optimizer = self.trainer.actor_optimizer
        self.frames_per_step = spec.frames_per_step
        replay_fields = {"observation": (shape, spec.observation_dtype), "action": ((size,), "float32"),
                         "reward": ((), "float32"), "next_observation": (shape, spec.observation_dtype),
                         "terminated": ((), "bool")}
        self.data = TransitionReplay(replay_capacity, replay_fields, batch_size,
                                     RateLimit(min_replay_size, updates_per_step * batch_size), max_lag_updates,
                                     seed=numpy_seed(), checkpoint=checkpoint_replay)
        log.info("SAC replay: %d transitions, %.1f MB", replay_capacity, self.data.nbytes / 1e6)
        self.adder = TransitionAdder(context.max_slots, {
            "observation": (shape, spec.observation_dtype), "action": ((size,), "float32"),
            "reward": ((), "float32"), "terminated": ((), "bool"), "truncated": ((), "bool")}, self.data)
        self.min_replay_size = min_replay_size
        self._rng = np.random.default_rng(numpy_seed())
        distribution = self.trainer.distribution

        @batched_policy(self.actor)
        def policy(prev_actions, env_outputs, core_state):
            outputs, _ = self.actor(prev_actions, env_outputs, core_state)
            return tf.tanh(distribution.sample(outputs.policy_logits))

        self.policy = policy

    @staticmethod
    def build_network(spec: EnvSpec, num_stacked_frames: int, hidden_sizes=None) -> SoftActor:
        if hidden_sizes is None:
            hidden_sizes = bound_setting("SACAgent.hidden_sizes", (256, 256))
        return SoftActor(spec.action.shape[0], (*spec.observation_shape, num_stacked_frames),
                         spec.observation_dtype, hidden_sizes)

    @classmethod
    def evaluation_policy(cls, spec: EnvSpec, num_stacked_frames: int) -> EvaluationPolicy:
        """The squashed mean action, scaled to the bounds."""
        low, high = np.asarray(spec.action.low, np.float32), np.asarray(spec.action.high, np.float32)
        mean = lambda outputs: tf.split(outputs.policy_logits, 2, axis=-1)[0]
        return EvaluationPolicy(cls.build_network(spec, num_stacked_frames), None,
                                lambda outputs: scale_to_bounds(tf.tanh(mean(outputs)), low, high))

    def act(self, slot_ids: np.ndarray, step):
        n = len(slot_ids)
        if self.data.size < self.min_replay_size:
            actions = self._rng.uniform(-1.0, 1.0, (n, len(self._low))).astype(np.float32)
        else:
            actions = self.policy(step.prev_action, EnvOutput(step.reward, step.first, step.observation),
                                  step.core_state).numpy()
        self.adder.add(slot_ids, {"observation": step.observation, "action": actions, "reward": step.reward,
                                  "terminated": step.terminated, "truncated": step.truncated})
        return scale_to_bounds(actions, self._low, self._high), step.core_state

    def release(self, slot_ids: np.ndarray) -> None:
        self.adder.release(slot_ids)

    def update(self, batch) -> tuple[dict[str, float], int]:
        """Returns the metrics and the environment frames of the transitions inserted since the last update."""
        return self.trainer.update(batch), self.data.take_inserted() * self.frames_per_step

    def trackables(self) -> dict[str, object]:
        t = self.trainer
        return {"agent": self.actor, "optimizer": t.actor_optimizer, "critic_optimizer": t.critic_optimizer,
                "alpha_optimizer": t.alpha_optimizer, "log_alpha": t.log_alpha,
                "q1": self.critics[0], "q2": self.critics[1],
                "target_q1": self.target_critics[0], "target_q2": self.target_critics[1]}
