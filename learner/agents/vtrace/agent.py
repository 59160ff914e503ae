"""The V-trace (IMPALA) agent on the central-inference learner: sample from the
policy, assemble unrolls from the same steps, train on batches of them."""
import logging
import threading
from typing import Dict, Optional, Tuple

import gin
import numpy as np
import tensorflow as tf

from learner.agents.base import AgentContext, EvaluationPolicy, numpy_seed, register
from learner.agents.minibatches import train_in_minibatches
from learner.agents.vtrace.training import VTraceTrainer
from learner.batcher import LearnerStopped
from learner.checkpoints import write_arrays_atomically
from learner.data.unroll_replay import UnrollMix
from learner.data.unrolls import UnrollQueue, UnrollStore
from learner.inference import batched_policy
from learner.networks import ActorCriticNetwork, EnvOutput
from learner.optimizers import create_optimizer
from learner.slots import StepInputs
from seed.codec import EnvStepBatch
from seed.settings import require_positive
from seed.specs import EnvSpec

log = logging.getLogger(__name__)


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
            whose ratios sum to 1, kinds 'queue' (fresh unrolls, each used once) and 'uniform' (a FIFO
            replay of whole unrolls, sampled uniformly) (None: `{'queue': 1.0}`, fresh unrolls only).
            `{'queue': 0.5, 'uniform': 0.5}` trains every environment step about twice.
        `replay_capacity`: unrolls each replay holds, the oldest overwritten (1024; about 0.6 MB each on
            Atari); unused without a replay source.
        `min_replay_unrolls`: unrolls every replay holds before training starts (64); at most
            `replay_capacity`.
        `epochs`: passes over each batch (1; 2 in atari_vtrace.gin); pair several with
            `VTraceLoss.clip_epsilon`.
        `minibatches`: shuffled minibatches of whole unrolls per pass, each one gradient step (1; 8 in
            atari_vtrace.gin). A batch makes epochs x minibatches gradient steps, as PPO does, and the
            learning-rate schedule counts those steps.
        `checkpoint_replay`: save the replays of a mix beside every checkpoint and restore them on resume
            (as R2D2Agent's), instead of refilling them (False).
    """

    supports_strategy = True
    action_kinds = ("discrete",)
    evaluation_slots = None

    def __init__(self, context: AgentContext, unroll_length: int = 20, batch_size: int = 32,
                 unroll_queue_capacity: int = 64, sources: Optional[Dict[str, float]] = None,
                 replay_capacity: int = 1024, min_replay_unrolls: int = 64, epochs: int = 1,
                 minibatches: int = 1, checkpoint_replay: bool = False):
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
            raise ValueError(f"VTraceAgent minibatches of {batch_size // minibatches} unrolls (batch_size={batch_size} / "
                             f"minibatches={minibatches}) do not split over {replicas} replicas; make "
                             "batch_size / minibatches a multiple of the replica count")
        self.queue = UnrollQueue(unroll_queue_capacity)
        self.data = UnrollMix(self.queue, sources or {"queue": 1.0}, batch_size, replay_capacity, min_replay_unrolls,
                              seed=numpy_seed())
        self.frames_per_unroll = unroll_length * spec.frames_per_step
        # The fresh frames of a mixed batch (the learning-rate schedule and benchmarks count by it).
        self.frames_per_update = self.data.fresh_per_batch * self.frames_per_unroll
        with strategy.scope():  # mirrored variables when training on several replicas
            self.network = self.build_network(spec, context.num_stacked_frames)
            self.optimizer = create_optimizer(
                num_training_steps=context.total_environment_frames // self.frames_per_update * epochs * minibatches)
        self.trainer = VTraceTrainer(self.network, self.optimizer, strategy=strategy)
        self.batch_size = batch_size
        self.epochs = epochs
        self.minibatches = minibatches
        self._shuffle = np.random.default_rng(numpy_seed())  # run_learner.seed seeds numpy
        fields = {
            "observation": (self.network.observation_shape, spec.observation_dtype),
            "reward": ((), "float32"), "first": ((), "bool"), "terminated": ((), "bool"),
            "truncated": ((), "bool"), "prev_action": ((), "int32"), "action": ((), "int32"),
            "behaviour_logits": ((spec.num_actions,), "float32"),
            "core_state": ((self.network.state_size,), "float32"),
        }
        self.unrolls = UnrollStore(context.max_slots, unroll_length, fields)
        self.checkpoint_replay = checkpoint_replay
        self._unroll_nbytes = (unroll_length + 1) * sum(int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
                                                        for shape, dtype in fields.values())
        self._stop = context.stop
        self.state_size = self.network.state_size

        @batched_policy(self.network)
        def policy(prev_actions, env_outputs, core_state):
            outputs, new_state = self.network(prev_actions, env_outputs, core_state)
            actions = tf.random.categorical(outputs.policy_logits, 1, dtype=tf.int32)[:, 0]
            return actions, outputs.policy_logits, new_state

        self.policy = policy

    @classmethod
    def evaluation_policy(cls, spec: EnvSpec, num_stacked_frames: int) -> EvaluationPolicy:
        """The policy's most likely action."""
        return EvaluationPolicy(cls.build_network(spec, num_stacked_frames), lambda outputs: outputs.policy_logits)

    @staticmethod
    def build_network(spec: EnvSpec, num_stacked_frames: int) -> ActorCriticNetwork:
        return ActorCriticNetwork(spec.num_actions, (*spec.observation_shape, num_stacked_frames),
                                  spec.observation_dtype)

    def act(self, slot_ids: np.ndarray, inputs: StepInputs, steps: EnvStepBatch):
        actions, logits, new_state = (x.numpy() for x in self.policy(
            inputs.prev_action, EnvOutput(inputs.reward, inputs.first, inputs.observation), inputs.core_state))
        complete = self.unrolls.append(slot_ids, {
            "observation": inputs.observation, "reward": inputs.reward, "first": inputs.first,
            "terminated": steps.terminated, "truncated": steps.truncated, "prev_action": inputs.prev_action,
            "action": actions, "behaviour_logits": logits, "core_state": inputs.core_state})
        if complete is not None and not self.queue.put(complete, self._stop):
            raise LearnerStopped()
        return actions, new_state

    def release(self, slot_ids: np.ndarray) -> None:
        self.unrolls.reset(slot_ids)

    def next_batch(self, stop: threading.Event) -> Optional[Dict[str, np.ndarray]]:
        return self.data.next_batch(stop)

    def update(self, batch) -> Tuple[Dict[str, float], int]:
        """Returns the update's metrics (averaged over its gradient steps) and the environment frames it
        consumed (its fresh unrolls'; counted also when a non-finite step was skipped, as R2D2Agent
        counts what it inserted: the budget counts frames collected)."""
        metrics = train_in_minibatches(self.trainer.update, batch, self.epochs, self.minibatches, self._shuffle)
        return metrics, self.data.last_fresh * self.frames_per_unroll

    def trackables(self) -> Dict[str, object]:
        return {"agent": self.network, "optimizer": self.optimizer}

    def checkpoint_sidecars(self) -> Dict[str, object]:
        return {"replay": self} if self.checkpoint_replay and self.data.replays else {}

    @property
    def state_nbytes(self) -> int:
        return sum(r.capacity for r in self.data.replays.values()) * self._unroll_nbytes

    def save_state(self, path: str) -> None:
        """The mix's replays and its update count (the replay ages count from it), to `path`.
        Called from the training thread (or after it stopped), the only one that touches them."""
        arrays = {"mix_updates": np.asarray(self.data.updates)}
        for kind, replay in self.data.replays.items():
            arrays.update({f"{kind}/{k}": v for k, v in replay.state().items()})
        write_arrays_atomically(path, arrays)

    def load_state(self, path: str) -> None:
        with np.load(path) as arrays:
            for kind, replay in self.data.replays.items():
                replay.load_state(arrays, prefix=f"{kind}/")
            self.data.updates = int(arrays["mix_updates"])
        log.info("restored replays %s from %s", {k: len(r) for k, r in self.data.replays.items()}, path)

    def data_metrics(self) -> Dict[str, float]:
        return {"unroll_queue/depth": len(self.queue), **self.data.metrics()}

    def describe_data(self) -> str:
        replays = "".join(f" | {kind} replay {len(r)}/{r.capacity}" for kind, r in self.data.replays.items())
        return f"queue {len(self.queue)}/{self.queue.capacity}{replays}"
