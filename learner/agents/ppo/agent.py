"""The PPO agent on the central-inference learner (Schulman et al. 2017): sample from the policy,
keep each step's behaviour params and value, assemble unrolls from the same steps, and train
several epochs of minibatches on each batch with GAE advantages. Discrete actions (a categorical
policy, Atari, CartPole) and continuous ones (a Gaussian, MuJoCo, Pendulum)."""
import gin
import numpy as np

from learner.agents.base import (
    AgentContext,
    EvaluationPolicy,
    action_kind,
    batched_policy,
    bound_setting,
    numpy_seed,
    register,
)
from learner.agents.minibatches import PER_UNROLL_VALUES, train_in_minibatches
from learner.agents.ppo.training import PPOTrainer
from learner.data.adders import UnrollAdder
from learner.data.unrolls import FreshUnrolls, UnrollQueue
from learner.distributions import for_action_spec
from learner.networks import ActorCriticNetwork, ContinuousActorCriticNetwork, EnvOutput
from learner.normalization import RewardScaler
from learner.optimizers import create_optimizer
from seed.settings import require_positive
from seed.specs import EnvSpec


@register
@gin.configurable(denylist=["context"])
class PPOAgent:
    """On-policy: each unroll is trained on in one batch only, its `epochs` passes, then dropped. The
    queue's back-pressure bounds how stale a batch is (at most `unroll_queue_capacity` unrolls
    behind the policy); the clipped ratio pi/mu against the stored behaviour params corrects that lag
    as it corrects the lag of later epochs.

    Settings:
        `unroll_length`: agent steps per unroll (128); each unroll also holds the step after its last, whose
            stored value bootstraps GAE.
        `batch_size`: unrolls per batch (8; with an LSTM core a multiple of `minibatches`).
        `unroll_queue_capacity`: fresh unrolls the queue holds (16); at least `batch_size`.
        `epochs`: passes over each batch (4; 10 in mujoco_ppo.gin).
        `minibatches`: shuffled minibatches per pass, each one gradient step (4; 32 in mujoco_ppo.gin): of
            single steps for a feed-forward network (as CleanRL's), of whole unrolls for a recurrent one.
        `squash_actions`: continuous actions only: a tanh-Gaussian scaled to the bounds instead of a
            Gaussian whose samples are clipped to them (False).
        `scale_rewards`: divide rewards by the running standard deviation of each env's discounted return,
            over all actors, after `training.reward_clipping`, and clip the result to +-10 as CleanRL does
            (False; True in mujoco_ppo.gin).
        `recompute_advantages`: compute GAE again before every epoch after the first, from the values the
            network gave each step in the previous epoch's minibatches (and its values now for the
            unrolls' bootstrap steps), instead of once per batch from the values stored when acting
            (False, as CleanRL and the PPO paper do). Andrychowicz et al. (2021) recommend it; V-trace
            here recomputes its targets with the current values in every minibatch. Costs a forward pass
            over the batch's B bootstrap observations per epoch (a forward pass over the whole batch
            before every epoch cost Pong a fifth of its frames/s).
    """

    supports_strategy = False
    action_kinds = ("discrete", "continuous")
    evaluation_slots = None

    def __init__(self, context: AgentContext, unroll_length: int = 128, batch_size: int = 8,
                 unroll_queue_capacity: int = 16, epochs: int = 4, minibatches: int = 4,
                 squash_actions: bool = False, scale_rewards: bool = False, recompute_advantages: bool = False):
        require_positive("PPOAgent", unroll_length=unroll_length, batch_size=batch_size,
                         unroll_queue_capacity=unroll_queue_capacity, epochs=epochs, minibatches=minibatches)
        if unroll_queue_capacity < batch_size:
            raise ValueError(f"PPOAgent.unroll_queue_capacity={unroll_queue_capacity} cannot hold one batch of "
                             f"batch_size={batch_size} unrolls; make it at least batch_size")
        spec = context.spec
        self.distribution = for_action_spec(spec.action, squash_actions)
        self.data = FreshUnrolls(UnrollQueue(unroll_queue_capacity), batch_size)
        self.batch_size, self.epochs, self.minibatches = batch_size, epochs, minibatches
        self.recompute_advantages = recompute_advantages
        self.frames_per_update = batch_size * unroll_length * spec.frames_per_step
        self.network = self.build_network(spec, context.num_stacked_frames)
        num_training_steps = context.schedule_frames // self.frames_per_update * epochs * minibatches
        self.optimizer = create_optimizer(num_training_steps=num_training_steps)
        if self.network.state_size and batch_size % minibatches:
            raise ValueError(f"PPOAgent.batch_size={batch_size} does not split into minibatches={minibatches} "
                             "equal minibatches of whole unrolls; make batch_size a multiple of minibatches")
        if (batch_size * unroll_length) % minibatches:
            raise ValueError(f"PPOAgent: a batch of {batch_size} x {unroll_length} steps does not split into "
                             f"minibatches={minibatches} equal minibatches; make batch_size x unroll_length a "
                             "multiple of minibatches")
        self.trainer = PPOTrainer(self.network, self.distribution, self.optimizer,
                                  num_training_steps=num_training_steps)
        self.reward_scaler = RewardScaler(context.max_slots, self.trainer.loss.discount) if scale_rewards else None
        self._shuffle = np.random.default_rng(numpy_seed())
        action = self.distribution
        fields = {
            "observation": (spec.observation_shape, spec.observation_dtype),
            "reward": ((), "float32"), "first": ((), "bool"), "terminated": ((), "bool"), "truncated": ((), "bool"),
            "prev_action": (spec.action.wire_shape, spec.action.wire_dtype),
            "action": (action.action_shape, action.action_dtype.name),
            "behaviour_logits": ((action.param_size,), "float32"), "value": ((), "float32"),
            "core_state": ((self.network.state_size,), "float32"),
        }
        self.adder = UnrollAdder(context.max_slots, unroll_length, fields, self.data.queue,
                                 context.num_stacked_frames)
        self.state_size = self.network.state_size
        self._normalizer = self.network.observation_normalizer

        @batched_policy(self.network)
        def policy(prev_actions, env_outputs, core_state):
            outputs, new_state = self.network(prev_actions, env_outputs, core_state)
            actions = action.sample(outputs.policy_logits)
            return actions, action.env_action(actions), outputs.policy_logits, outputs.baseline, new_state

        self.policy = policy

    @classmethod
    def evaluation_policy(cls, spec: EnvSpec, num_stacked_frames: int) -> EvaluationPolicy:
        """The policy's most likely action (the Gaussian's mean, within the bounds)."""
        distribution = for_action_spec(spec.action, bound_setting("PPOAgent.squash_actions", False))
        network = cls.build_network(spec, num_stacked_frames)
        if spec.action.is_discrete:
            return EvaluationPolicy(network, lambda outputs: outputs.policy_logits)
        return EvaluationPolicy(network, None,
                                lambda outputs: distribution.env_action(distribution.mode(outputs.policy_logits)))

    @staticmethod
    def build_network(spec: EnvSpec, num_stacked_frames: int):
        shape = (*spec.observation_shape, num_stacked_frames)
        if action_kind(spec) == "discrete":
            return ActorCriticNetwork(spec.num_actions, shape, spec.observation_dtype)
        if len(spec.action.shape) != 1:
            raise ValueError(f"continuous actions of shape {spec.action.shape}; PPOAgent takes a vector (A,)")
        return ContinuousActorCriticNetwork(spec.action.shape[0], shape, spec.observation_dtype)

    def act(self, slot_ids: np.ndarray, step):
        if self._normalizer is not None:
            self._normalizer.update(step.observation)
        reward = step.reward
        if self.reward_scaler is not None:
            reward = self.reward_scaler(slot_ids, reward, step.first)
        actions, env_actions, params, values, new_state = (x.numpy() for x in self.policy(
            step.prev_action, EnvOutput(reward, step.first, step.observation), step.core_state))
        self.adder.add(slot_ids, {
            "observation": step.frame, "reward": reward, "first": step.first,
            "terminated": step.terminated, "truncated": step.truncated, "prev_action": step.prev_action,
            "action": actions, "behaviour_logits": params, "value": values, "core_state": step.core_state})
        return env_actions, new_state

    def release(self, slot_ids: np.ndarray) -> None:
        self.adder.release(slot_ids)
        if self.reward_scaler is not None:
            self.reward_scaler.reset(slot_ids)

    def update(self, batch) -> tuple[dict[str, float], int]:
        """GAE once per batch from the stored values (as PPO computes it before its epochs), or before
        every later epoch from the values the previous epoch's minibatches computed, then the epochs of
        minibatches. Returns the averaged metrics and the batch's environment frames."""
        stored = batch["value"][:-1]

        def epoch_batch(per_unroll: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            values = per_unroll.get(PER_UNROLL_VALUES) if self.recompute_advantages else None
            if values is not None:  # a skipped (non-finite) step's rows keep the stored values
                values = values.reshape(stored.shape)
                values = np.where(np.isfinite(values), values, stored)
            steps = self.trainer.prepare(batch, values)
            if not self.state_size:  # feed-forward: minibatches of shuffled single steps, one-step unrolls
                steps = {k: v.reshape(1, v.shape[0] * v.shape[1], *v.shape[2:]) for k, v in steps.items()}
            return steps

        metrics = train_in_minibatches(self.trainer.update, epoch_batch if self.recompute_advantages
                                       else epoch_batch({}), self.epochs, self.minibatches, self._shuffle)
        metrics.pop(PER_UNROLL_VALUES, None)
        return metrics, self.frames_per_update

    def trackables(self) -> dict[str, object]:
        tracked = {"agent": self.network, "optimizer": self.optimizer}
        if self.reward_scaler is not None:
            tracked["reward_scaler"] = self.reward_scaler
        return tracked
