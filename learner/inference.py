"""What happens to one batch of env steps on the learner: per-slot state,
one batched policy call, and unroll assembly from the very same data."""
import collections
import threading
from typing import Deque, Tuple

import numpy as np
import tensorflow as tf

from learner.slots import FinishedEpisode, SlotTable
from learner.unrolls import UnrollQueue, UnrollStore
from seed.codec import EnvStepBatch
from seed.networks import ActorCriticNetwork, EnvOutput
from seed.specs import EnvSpec
from learner.batcher import LearnerStopped


def make_policy(agent: ActorCriticNetwork, spec: EnvSpec, num_stacked_frames: int):
    """A tf.function traced once for any batch size: sample actions from the current weights."""
    signature = (
        tf.TensorSpec([None], tf.int32),
        EnvOutput(tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.bool),
                  tf.TensorSpec([None, *spec.observation_shape, num_stacked_frames], spec.observation_dtype)),
        tf.TensorSpec([None, agent.state_size], tf.float32),
    )

    @tf.function(input_signature=signature)
    def policy(prev_actions, env_outputs, core_state):
        outputs, new_state = agent(prev_actions, env_outputs, core_state)
        actions = tf.random.categorical(outputs.policy_logits, 1, dtype=tf.int32)[:, 0]
        return actions, outputs.policy_logits, new_state

    return policy


class InferencePipeline:
    """Runs on the inference thread only, so its tables need no locks."""

    def __init__(self, agent: ActorCriticNetwork, spec: EnvSpec, *, max_slots: int, num_stacked_frames: int,
                 unroll_length: int, reward_clipping: str, unroll_queue: UnrollQueue, stop: threading.Event):
        self._policy = make_policy(agent, spec, num_stacked_frames)
        self.slots = SlotTable(max_slots, spec.observation_shape, spec.observation_dtype,
                               num_stacked_frames, agent.state_size, reward_clipping)
        stacked_shape = (*spec.observation_shape, num_stacked_frames)
        self.unrolls = UnrollStore(max_slots, unroll_length, {
            "observation": (stacked_shape, spec.observation_dtype),
            "reward": ((), "float32"),
            "first": ((), "bool"),
            "terminated": ((), "bool"),
            "truncated": ((), "bool"),
            "prev_action": ((), "int32"),
            "action": ((), "int32"),
            "behaviour_logits": ((spec.num_actions,), "float32"),
            "core_state": ((agent.state_size,), "float32"),
        })
        self._queue = unroll_queue
        self._stop = stop
        # (env steps seen so far, episode); the main thread drains it for reporting.
        self.finished_episodes: Deque[Tuple[int, FinishedEpisode]] = collections.deque(maxlen=10_000)
        self.env_steps = 0

    def __call__(self, slot_ids: np.ndarray, steps: EnvStepBatch) -> np.ndarray:
        inputs, finished = self.slots.observe(slot_ids, steps)
        actions, logits, new_state = self._policy(
            inputs.prev_action, EnvOutput(inputs.reward, inputs.first, inputs.observation), inputs.core_state)
        actions, logits, new_state = actions.numpy(), logits.numpy(), new_state.numpy()
        complete = self.unrolls.append(slot_ids, {
            "observation": inputs.observation, "reward": inputs.reward, "first": inputs.first,
            "terminated": steps.terminated, "truncated": steps.truncated,
            "prev_action": inputs.prev_action, "action": actions, "behaviour_logits": logits,
            "core_state": inputs.core_state,
        })
        self.slots.act(slot_ids, actions, new_state)
        self.env_steps += len(slot_ids)
        self.finished_episodes.extend((self.env_steps, episode) for episode in finished)
        if complete is not None and not self._queue.put(complete, self._stop):
            raise LearnerStopped()
        return actions

    def release(self, slot_ids: np.ndarray) -> None:
        self.slots.reset(slot_ids)
        self.unrolls.reset(slot_ids)
