"""The V-trace (IMPALA) agent on the central-inference learner: sample from the
policy, assemble unrolls from the same steps, train on batches of them."""
import logging

import gin
import numpy as np
import tensorflow as tf

from learner.agents.base import AgentContext, EvaluationPolicy, batched_policy, numpy_seed, register
from learner.agents.minibatches import PER_UNROLL_ERRORS
from learner.agents.vtrace.training import VTraceLoss, VTraceTrainer
from learner.data.adders import UnrollAdder
from learner.data.unroll_replay import SOURCE_KINDS, UnrollMix, needs_features
from learner.data.unrolls import UnrollQueue
from learner.networks import ActorCriticNetwork, EnvOutput
from learner.normalization import RewardScaler
from learner.optimizers import create_optimizer
from seed.settings import require_positive
from seed.specs import EnvSpec

log = logging.getLogger(__name__)

REPLAY_FEATURES = ("core", "policy_logits")


@register
@gin.configurable(denylist=["context"])
class VTraceAgent:
    """Unrolls go through a bounded queue: when training falls behind, inference blocks on it.
    The frame counter counts the fresh frames each update consumed (the first one's include the
    replays' fill).

    Settings:
        `unroll_length`: agent steps per unroll (20); each unroll also holds the step after its last,
            which the V-trace targets bootstrap from.
        `batch_size`: unrolls per batch (32; 8 in classic_vtrace.gin); a multiple of `minibatches`, and each
            minibatch a multiple of the replica count under a distribution strategy.
        `unroll_queue_capacity`: fresh unrolls the queue holds (64), which keeps the policy lag at most
            that many unrolls; at least the fresh unrolls of one batch.
        `sources`: where each batch comes from (learner/data/unroll_replay.py), a `{kind: ratio}` mapping
            whose ratios sum to 1, kinds 'queue' (fresh unrolls, each used once) and the replays of one
            shared FIFO ring of whole unrolls: 'uniform' (LASER's), 'prioritised' (by V-trace error,
            PrioritisedSampler), 'elite' (the least off-policy, EliteSampler) and 'attentive' (nearest
            the states visited now, AttentiveSampler) (None: `{'queue': 1.0}`, fresh unrolls only).
            `{'queue': 0.5, 'uniform': 0.5}` trains every environment step about twice.
        `replay_capacity`: unrolls the shared ring holds, the oldest overwritten (1024; about 0.17 MB each on
            Atari, plus 43 kB with elite or attentive sources); unused without a replay source. Its size is
            logged at start and refused above 80 % of the available memory.
        `min_replay_unrolls`: unrolls the ring holds before training starts (64); at most `replay_capacity`,
            at least an elite or attentive source's unrolls per batch.
        `replay_features`: the state features each step stores for elite and attentive sources, from the
            same policy call that acted: 'core' (what the policy head sees: the torso's or LSTM's output,
            512 floats with the Nature CNN) or 'policy_logits' (the logits; the one EliteSampler's 'kl_div'
            compares) ('core'); unused by the other sources.
        `epochs`: passes over each batch (1; 2 in atari_vtrace.gin); pair several with
            `VTraceLoss.clip_epsilon`.
        `minibatches`: shuffled minibatches of whole unrolls per pass, each one gradient step (1; 8 in
            atari_vtrace.gin). A batch makes epochs x minibatches gradient steps, as PPO does, and the
            learning-rate schedule counts those steps.
        `checkpoint_replay`: save the replays of a mix beside every checkpoint and restore them on resume
            (as R2D2Agent's), instead of refilling them (False).
        `scale_rewards`: divide each reward, after `training.reward_clipping`, by the running standard
            deviation of its env's discounted return (learner/normalization.py's RewardScaler, as
            `PPOAgent.scale_rewards`), so the value targets keep a scale near 1 (False). With
            `training.reward_clipping='none'` it replaces Atari's clipping to +-1, which makes every
            scoring event alike, by a scale that keeps rewards' relative sizes: a lever of the Atari-5
            search, not yet measured.
    """

    supports_strategy = True
    action_kinds = ("discrete",)
    evaluation_slots = None

    def __init__(self, context: AgentContext, unroll_length: int = 20, batch_size: int = 32,
                 unroll_queue_capacity: int = 64, sources: dict[str, float] | None = None,
                 replay_capacity: int = 1024, min_replay_unrolls: int = 64, epochs: int = 1,
                 minibatches: int = 1, checkpoint_replay: bool = False, replay_features: str = "core",
                 scale_rewards: bool = False):
        spec = context.spec
        require_positive("VTraceAgent", unroll_length=unroll_length, batch_size=batch_size,
                         unroll_queue_capacity=unroll_queue_capacity, replay_capacity=replay_capacity,
                         min_replay_unrolls=min_replay_unrolls, epochs=epochs, minibatches=minibatches)
        if batch_size % minibatches:
            raise ValueError(f"VTraceAgent.batch_size={batch_size} does not split into minibatches={minibatches} "
                             "equal minibatches of whole unrolls; make batch_size a multiple of minibatches")
        strategy = context.distribution_strategy()
        replicas = strategy.num_replicas_in_sync
        if minibatches > 1 and (batch_size // minibatches) % replicas:
            raise ValueError(f"VTraceAgent minibatches of {batch_size // minibatches} unrolls "
                             f"(batch_size={batch_size} / minibatches={minibatches}) do not split over {replicas} "
                             "replicas; make batch_size / minibatches a multiple of the replica count")
        if replay_features not in REPLAY_FEATURES:
            raise ValueError(f"VTraceAgent.replay_features={replay_features!r} is unknown; use "
                             f"{', '.join(REPLAY_FEATURES)}")
        with strategy.scope():  # mirrored variables when training on several replicas
            self.network = self.build_network(spec, context.num_stacked_frames)
        self.replay_features = replay_features
        self.frames_per_unroll = unroll_length * spec.frames_per_step
        sources = sources or {"queue": 1.0}
        self._stores_features = needs_features(sources)
        fields = {
            "observation": (spec.observation_shape, spec.observation_dtype),
            "reward": ((), "float32"), "first": ((), "bool"), "terminated": ((), "bool"),
            "truncated": ((), "bool"), "prev_action": ((), "int32"), "action": ((), "int32"),
            "behaviour_logits": ((spec.num_actions,), "float32"), "behaviour_value": ((), "float32"),
            "core_state": ((self.network.state_size,), "float32"),
        }
        if self._stores_features:
            fields["features"] = ((self._feature_size(spec),), "float32")
        queue = UnrollQueue(unroll_queue_capacity)
        self.adder = UnrollAdder(context.max_slots, unroll_length, fields, queue, context.num_stacked_frames)
        # The optimizer's steps say how many updates a run resumed without its replay made.
        self.data = UnrollMix(queue, sources, batch_size, replay_capacity, min_replay_unrolls,
                              seed=numpy_seed(), encode=self._encode,
                              total_fresh_unrolls=context.schedule_frames // self.frames_per_unroll,
                              features=replay_features, checkpoint=checkpoint_replay, fields=self.adder.unroll_fields,
                              updates_done=lambda: int(self.optimizer.iterations.numpy()) // (epochs * minibatches))
        # The fresh frames of a mixed batch (the learning-rate schedule and benchmarks count by it).
        self.frames_per_update = self.data.fresh_per_batch * self.frames_per_unroll
        num_training_steps = context.schedule_frames // self.frames_per_update * epochs * minibatches
        with strategy.scope():
            self.optimizer = create_optimizer(num_training_steps=num_training_steps)
        # The loss names the mix's sources by the index each batch row carries (SOURCE_KINDS' order).
        self.trainer = VTraceTrainer(self.network, self.optimizer, loss=VTraceLoss(sources=SOURCE_KINDS),
                                     strategy=strategy, num_training_steps=num_training_steps)
        self.reward_scaler = RewardScaler(context.max_slots, self.trainer.loss.discount) if scale_rewards else None
        self.batch_size = batch_size
        self.epochs = epochs
        self.minibatches = minibatches
        self._shuffle = np.random.default_rng(numpy_seed())  # training.seed seeds numpy
        self.state_size = self.network.state_size

        @batched_policy(self.network)
        def policy(prev_actions, env_outputs, core_state):
            outputs, new_state = self.network(prev_actions, env_outputs, core_state)
            actions = tf.random.categorical(outputs.policy_logits, 1, dtype=tf.int32)[:, 0]
            return actions, outputs.policy_logits, outputs.baseline, self._features_of(outputs), new_state

        self.policy = policy

        # Any number of candidates (lambda anneals) and steps, traced once.
        @tf.function(input_signature=(
            tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.float32),
            tf.TensorSpec([None, None], tf.bool),
            tf.TensorSpec([None, None, *self.network.observation_shape], self.network.observation_dtype),
            tf.TensorSpec([None, self.network.state_size], tf.float32)))
        def encode(prev_action, reward, first, observation, core_state):
            outputs, _ = self.network.unroll(prev_action, EnvOutput(reward, first, observation), core_state)
            return self._features_of(outputs)

        self._encode_unrolls = encode

    def _features_of(self, outputs):
        """The stored state features of a policy call's outputs (`replay_features`); none when unused."""
        if not self._stores_features:
            return tf.zeros([tf.shape(outputs.baseline)[0], 0])
        return outputs.policy_logits if self.replay_features == "policy_logits" else outputs.features

    def _feature_size(self, spec: EnvSpec) -> int:
        if self.replay_features == "policy_logits":
            return spec.num_actions
        outputs, _ = self.network(tf.zeros([1], tf.int32), EnvOutput(
            tf.zeros([1]), tf.zeros([1], tf.bool), tf.zeros([1, *self.network.observation_shape],
                                                              self.network.observation_dtype)),
            self.network.initial_state(1))
        return int(outputs.features.shape[-1])

    def _encode(self, batch) -> np.ndarray:
        """The current policy's features [T+1, n, F] of a time-major batch of unrolls (elite sampling)."""
        return self._encode_unrolls(batch["prev_action"], batch["reward"], batch["first"], batch["observation"],
                                    batch["core_state"][0]).numpy()

    @classmethod
    def evaluation_policy(cls, spec: EnvSpec, num_stacked_frames: int) -> EvaluationPolicy:
        """The policy's most likely action."""
        return EvaluationPolicy(cls.build_network(spec, num_stacked_frames), lambda outputs: outputs.policy_logits)

    @staticmethod
    def build_network(spec: EnvSpec, num_stacked_frames: int) -> ActorCriticNetwork:
        return ActorCriticNetwork(spec.num_actions, (*spec.observation_shape, num_stacked_frames),
                                  spec.observation_dtype)

    def act(self, slot_ids: np.ndarray, step):
        reward = step.reward if self.reward_scaler is None else self.reward_scaler(slot_ids, step.reward, step.first)
        actions, logits, values, features, new_state = (x.numpy() for x in self.policy(
            step.prev_action, EnvOutput(reward, step.first, step.observation), step.core_state))
        stored = {"observation": step.frame, "reward": reward, "first": step.first,
                  "terminated": step.terminated, "truncated": step.truncated, "prev_action": step.prev_action,
                  "action": actions, "behaviour_logits": logits, "behaviour_value": values,
                  "core_state": step.core_state, "features": features}
        self.adder.add(slot_ids, stored)
        return actions, new_state

    def release(self, slot_ids: np.ndarray) -> None:
        self.adder.release(slot_ids)
        if self.reward_scaler is not None:
            self.reward_scaler.reset(slot_ids)

    def update(self, batch) -> tuple[dict[str, float], int]:
        """Returns the update's metrics (averaged over its gradient steps) and the environment frames it
        consumed (its fresh unrolls'; counted also when a non-finite step was skipped, as R2D2Agent
        counts what it inserted: the budget counts frames collected)."""
        keys = batch.get("key")
        # Only the samplers compare features; the keys come back with the errors.
        batch = {k: v for k, v in batch.items() if k not in ("features", "key")}
        metrics = self.trainer.train(batch, self.epochs, self.minibatches, self._shuffle)
        errors = metrics.pop(PER_UNROLL_ERRORS)
        if keys is not None:
            self.data.feedback(keys, errors)
        if self.data.ring is None:  # fresh data only: CLEAR's terms are zero by construction
            metrics.pop("loss/policy_cloning")
            metrics.pop("loss/value_cloning")
        for kind in SOURCE_KINDS:  # each source's means over its steps, where it gave any
            sums = {part: metrics.pop(f"source/{kind}_{part}") for part in VTraceLoss.SOURCE_PARTS}
            if kind in self.data.counts and sums["steps"] > 0:
                for part, name in (("rho", "rho"), ("kl", "kl"), ("clipped", "clip_fraction")):
                    metrics[f"data/{kind}_{name}"] = self.data.source_means[f"data/{kind}_{name}"] = (
                        sums[part] / sums["steps"])
        return metrics, self.data.last_fresh * self.frames_per_unroll

    def trackables(self) -> dict[str, object]:
        tracked = {"agent": self.network, "optimizer": self.optimizer}
        if self.reward_scaler is not None:
            tracked["reward_scaler"] = self.reward_scaler
        return tracked
