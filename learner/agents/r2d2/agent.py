"""The R2D2 agent on the central-inference learner: epsilon-greedy acting on a
recurrent dueling Q-network, overlapping sequences into prioritised replay,
and a training thread that samples at a bounded replay ratio."""
import logging

import gin
import numpy as np
import tensorflow as tf

from learner.agents.base import AgentContext, EvaluationPolicy, batched_policy, numpy_seed, register
from learner.agents.r2d2.training import R2D2Trainer
from learner.data import RateLimit, require_memory
from learner.data.adders import SequenceAdder
from learner.data.sequence_replay import RateLimitedSampler, SampledBatch, SequenceReplay, sequence_bytes
from learner.networks import DuelingQNetwork, EnvOutput
from learner.optimizers import create_optimizer
from seed.settings import require_fraction, require_non_negative, require_positive
from seed.specs import EnvSpec

log = logging.getLogger(__name__)


def van_der_corput(n: np.ndarray) -> np.ndarray:
    """Base-2 radical inverse: any first k values spread evenly over [0, 1)."""
    n = np.asarray(n, np.int64).copy()
    result, scale = np.zeros(n.shape), 0.5
    while n.any():
        result += scale * (n & 1)
        n >>= 1
        scale /= 2
    return result


def exploration_epsilons(max_slots: int, num_eval_envs: int, eval_epsilon: float, base: float,
                         alpha: float) -> np.ndarray:
    """Ape-X's eps_i = base^(1 + alpha * i / (N - 1)), fixed per slot. The number of envs N
    is unknown while actors come and go, so the fraction i / (N - 1) is the slot's radical
    inverse: the slots in use at any time cover the schedule evenly."""
    training = np.arange(max_slots) - num_eval_envs
    epsilons = base ** (1 + alpha * van_der_corput(np.maximum(training, 0)))
    epsilons[:num_eval_envs] = eval_epsilon
    return epsilons.astype(np.float32)


@register
@gin.configurable(denylist=["context"])
class R2D2Agent:
    supports_strategy = False
    action_kinds = ("discrete",)

    def __init__(self, context: AgentContext, unroll_length: int = 80, burn_in: int = 40, batch_size: int = 64,
                 replay_capacity_steps: int = 250_000, min_replay_sequences: int = 500, replay_ratio: float = 4.0,
                 priority_exponent: float = 0.9, importance_exponent: float = 0.6, num_eval_envs: int = 1,
                 eval_epsilon: float = 0.001, epsilon_base: float = 0.4, epsilon_alpha: float = 7.0,
                 checkpoint_replay: bool = False, seed: int | None = None, max_lag_updates: int | None = None):
        """Acts epsilon-greedily per env slot, stores overlapping sequences, samples them by priority.

        Settings:
            `unroll_length`: agent steps each sequence trains on, after its burn-in (80; 10 in
                classic_r2d2.gin); an env's consecutive sequences overlap by burn_in + num_stacked_frames steps.
            `burn_in`: agent steps before each sequence's trained part that only warm up the LSTM state,
                without gradient (40; 5 in classic_r2d2.gin).
            `batch_size`: sequences per batch (64; 32 in classic_r2d2.gin).
            `replay_capacity_steps`: the replay's size in agent steps, held as that // `unroll_length`
                sequences (250k: about 2 GiB for Atari); refused at start above 80 % of available memory.
            `min_replay_sequences`: sequences the replay holds before training starts (500; 100 in
                classic_r2d2.gin).
            `replay_ratio`: sequences sampled per sequence inserted, so about that many trained steps per
                stored agent step (4.0); training waits for inserts to keep it.
            `priority_exponent`: alpha, sampling probability proportional to priority^alpha (0.9; 0: uniform).
            `importance_exponent`: beta, each sample's loss weighted by (N * probability)^-beta, scaled to
                a maximum of 1 in its batch (0.6; 0: unweighted).
            `num_eval_envs`: env slots (the lowest ids) that act with `eval_epsilon`, are reported apart and
                are not stored (1); below inference.max_env_slots.
            `eval_epsilon`: the evaluation envs' exploration epsilon (0.001).
            `epsilon_base`: Ape-X's base: each training slot explores with epsilon_base^(1 + epsilon_alpha * u),
                u its slot's base-2 radical inverse in [0, 1) (0.4).
            `epsilon_alpha`: Ape-X's alpha, the range of that exponent (7.0: epsilons from 0.4 down towards
                0.4^8).
            `checkpoint_replay`: write the replay's contents beside every checkpoint (its size is printed at
                start, and a disk that cannot hold the kept checkpoints is refused) and restore them on resume,
                so a restarted learner trains on where it stopped instead of refilling
                `min_replay_sequences` first (False: a resumed run starts with an empty replay; the replay is
                about 2 GiB at the Atari default).
            `max_lag_updates`: inserts (and so every actor) wait while training is more than this many batches
                behind `replay_ratio`, which then holds in both directions: a learner slower than the actors
                slows them instead of training less per env step (None: inserts never wait, and on a machine
                whose learner cannot keep up the ratio falls below `replay_ratio`; 16 in atari_r2d2.gin).
            `seed`: seed of the replay's sampling (None: drawn from numpy's global generator, which
                training.seed seeds).
        """
        spec, num_stacked_frames, max_slots = context.spec, context.num_stacked_frames, context.max_slots
        require_positive("R2D2Agent", unroll_length=unroll_length, batch_size=batch_size,
                         replay_capacity_steps=replay_capacity_steps, min_replay_sequences=min_replay_sequences,
                         replay_ratio=replay_ratio)
        require_non_negative("R2D2Agent", burn_in=burn_in, num_eval_envs=num_eval_envs,
                             priority_exponent=priority_exponent, importance_exponent=importance_exponent,
                             epsilon_alpha=epsilon_alpha)
        require_fraction("R2D2Agent", eval_epsilon=eval_epsilon, epsilon_base=epsilon_base)
        if num_eval_envs >= max_slots:
            raise ValueError(f"R2D2Agent.num_eval_envs ({num_eval_envs}) must be below inference.max_env_slots "
                             f"({max_slots}): evaluation envs take the lowest slots, the rest train")
        self.network = self.build_network(spec, num_stacked_frames)
        self.target_network = self.build_network(spec, num_stacked_frames)
        # The schedule's horizon: gradient steps over the run at the replay ratio (sequences sampled per
        # sequence inserted), each sampling batch_size sequences of unroll_length new agent steps.
        self.optimizer = create_optimizer(num_training_steps=int(
            context.schedule_frames / spec.frames_per_step / unroll_length * replay_ratio / batch_size))
        self.trainer = R2D2Trainer(self.network, self.target_network, self.optimizer, burn_in=burn_in)
        self.unroll_length = unroll_length
        self.frames_per_step = spec.frames_per_step
        history = num_stacked_frames - 1
        sequence_steps = history + burn_in + unroll_length + 1
        capacity = max(1, replay_capacity_steps // unroll_length)
        self._check_memory(capacity, sequence_steps, spec)
        replay = SequenceReplay(capacity, sequence_steps, unroll_length, spec.observation_shape,
                                spec.observation_dtype, num_stacked_frames, self.network.state_size,
                                priority_exponent, importance_exponent, seed=numpy_seed() if seed is None else seed)
        self.data = RateLimitedSampler(replay, batch_size, RateLimit(min_replay_sequences, replay_ratio),
                                       checkpoint=checkpoint_replay)
        if max_lag_updates is not None and max_lag_updates < 1:  # below one batch, both sides would wait for ever
            raise ValueError(f"R2D2Agent.max_lag_updates={max_lag_updates} must be at least 1 "
                             "(None: inserts never wait)")
        self.adder = SequenceAdder(max_slots, self.data, history, burn_in, self.network.state_size, max_lag_updates)
        self.epsilons = exploration_epsilons(max_slots, num_eval_envs, eval_epsilon, epsilon_base, epsilon_alpha)
        self.evaluation_slots = np.arange(max_slots) < num_eval_envs
        training = self.epsilons[~self.evaluation_slots]
        log.info("R2D2: exploration epsilons %.3g..%.3g over %d training envs, %d evaluation envs at %.3g",
                 training.min(), training.max(), len(training), num_eval_envs, eval_epsilon)
        self.state_size = self.network.state_size

        @batched_policy(self.network, tf.TensorSpec([None], tf.float32))
        def policy(prev_actions, env_outputs, core_state, epsilon):
            q_values, new_state = self.network(prev_actions, env_outputs, core_state)
            greedy = tf.argmax(q_values, axis=-1, output_type=tf.int32)
            random = tf.random.uniform(tf.shape(greedy), 0, self.network.num_actions, dtype=tf.int32)
            explore = tf.random.uniform(tf.shape(epsilon)) < epsilon
            return tf.where(explore, random, greedy), new_state

        self.policy = policy

    @classmethod
    def evaluation_policy(cls, spec: EnvSpec, num_stacked_frames: int) -> EvaluationPolicy:
        """The action of the highest Q-value."""
        return EvaluationPolicy(cls.build_network(spec, num_stacked_frames), lambda q_values: q_values)

    @staticmethod
    def build_network(spec: EnvSpec, num_stacked_frames: int) -> DuelingQNetwork:
        return DuelingQNetwork(spec.num_actions, (*spec.observation_shape, num_stacked_frames), spec.observation_dtype)

    def _check_memory(self, capacity: int, sequence_steps: int, spec: EnvSpec) -> None:
        frames = int(capacity * self.unroll_length * 1.125) + sequence_steps
        needed = frames * spec.observation_nbytes + capacity * sequence_bytes(sequence_steps, self.network.state_size)
        require_memory(needed, f"replay of {capacity * self.unroll_length:,} agent steps",
                       "lower R2D2Agent.replay_capacity_steps")

    def act(self, slot_ids: np.ndarray, step):
        actions, new_state = (x.numpy() for x in self.policy(
            step.prev_action, EnvOutput(step.reward, step.first, step.observation), step.core_state,
            self.epsilons[slot_ids]))
        train = ~self.evaluation_slots[slot_ids]  # evaluation envs' experience is not stored
        if train.any():
            self.adder.add(slot_ids[train], {
                "first": step.first[train], "terminated": step.terminated[train],
                "truncated": step.truncated[train], "reward": step.reward[train], "action": actions[train],
                "prev_action": step.prev_action[train], "core_state": step.core_state[train]},
                frames=step.frame[train])
        return actions, new_state

    def release(self, slot_ids: np.ndarray) -> None:
        self.adder.release(slot_ids)

    def update(self, batch: SampledBatch) -> tuple[dict[str, float], int]:
        metrics, priorities = self.trainer.update(batch.sequences, batch.weights)
        if metrics["update_applied"]:  # a skipped step's priorities are not finite: they would poison the tree
            self.data.replay.update_priorities(batch.keys, priorities)
        new_frames = self.data.take_inserted() * self.unroll_length * self.frames_per_step
        metrics.update({"priority/min": priorities.min(), "priority/mean": priorities.mean(),
                        "priority/max": priorities.max()})
        return metrics, new_frames

    def trackables(self) -> dict[str, object]:
        return {"agent": self.network, "target_agent": self.target_network, "optimizer": self.optimizer}
