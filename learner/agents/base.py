"""The contract between the learner and an agent, and the registry of agents.

An agent is parts: a network and its batched `policy` (acting), an `adder` that turns the steps it
acted on into training data (learner/data/adders.py: unrolls, sequences, transitions), a `data` source
that owns that data and its checkpointing (learner/data: `DataSource`), and an `update` (a loss and
the shared gradient step, learner/agents/gradient_step.py). One training loop serves every agent; the
learner drives those parts from three threads:

    # inference thread, for each batch of env steps the actors sent:
    actions, new_core_state = agent.act(slot_ids, step)            # the policy, then agent.adder.add(...)
    agent.release(slot_ids)                                          # when an actor's envs leave

    # training thread (learner.training_loop.TrainingLoop):
    while frames < total_environment_frames and not stop:
        batch = agent.data.next_batch()         # blocks on the source's rate limit; None once closed
        metrics, new_frames = agent.update(batch)
        frames += new_frames                    # env frames collected, also for a skipped update
        if checkpoint due: save agent.trackables() and agent.data.checkpoint_sidecars()

    # main thread, every progress interval:
    agent.data.metrics(), agent.data.describe(), agent.optimizer's learning rate
    # and when the learner stops, agent.data.close(), which wakes both threads' waits for good

So a new agent is a network, a loss and a choice of adder and data source. It is one folder under
learner/agents/ whose `agent.py` defines a class that satisfies `Agent` and is decorated with
`@register` (learner/agents/__init__.py imports every folder's agent.py, which registers it and its
gin configurables), and one gin file under seed/configs/. An agent imports the data kit
(learner/data), networks, optimizers and this package; never the learner's plumbing (the service,
batcher, inference pipeline, slots, checkpointer or training loop).
"""
import dataclasses
from collections.abc import Callable
from typing import ClassVar, Protocol, runtime_checkable

import gin
import numpy as np
import tensorflow as tf

from learner.networks import EnvOutput
from seed.specs import EnvSpec


@dataclasses.dataclass(frozen=True)
class AgentContext:
    """What the learner gives every agent; the agent's own settings come from gin.

    `spec`: the env family's observation and action spec. `num_stacked_frames`: frames the
    learner stacks into each observation. `max_slots`: env slots (rows of every per-env table).
    `schedule_frames`: the env frames the agent's schedules (learning rate, entropy, replay exponents)
    span: training.schedule_frames, else the run's budget; never the stop itself.
    `strategy`: the tf.distribute strategy to create variables under (only agents that
    declare `supports_strategy` get one with several replicas)."""
    spec: EnvSpec
    num_stacked_frames: int
    max_slots: int
    schedule_frames: int
    strategy: tf.distribute.Strategy | None = None

    def distribution_strategy(self) -> tf.distribute.Strategy:
        return self.strategy or tf.distribute.get_strategy()


@dataclasses.dataclass(frozen=True)
class EvaluationPolicy:
    """What `seed-eval` plays greedily: `network` is restored from the checkpoint's 'agent' entry
    and called as the learner calls it; `scores(outputs)` gives [B, num_actions] scores whose
    argmax is the greedy action, or for continuous actions `greedy(outputs)` gives the actions
    [B, *shape] themselves."""
    network: object
    scores: Callable[[object], tf.Tensor] | None
    greedy: Callable[[object], tf.Tensor] | None = None

    def actions(self, outputs) -> np.ndarray:
        if self.greedy is not None:
            return np.asarray(self.greedy(outputs))
        return np.argmax(np.asarray(self.scores(outputs)), axis=-1).astype(np.int32)


@runtime_checkable
class Agent(Protocol):
    """An agent on the central-inference learner (see the module docstring for the loop)."""

    #: Trains under a tf.distribute strategy with several replicas (create_strategy.kind).
    supports_strategy: ClassVar[bool]
    #: The action kinds it acts in: 'discrete' and/or 'continuous' (seed.specs.ActionSpec).
    action_kinds: ClassVar[tuple[str, ...]]
    #: Size of the per-env recurrent state the learner keeps between steps (0: none).
    state_size: int
    #: The optimizer whose learning rate the progress line shows, or None for an agent that never trains.
    optimizer: object | None
    #: Per-slot bool: slots whose episodes are evaluation episodes (reported apart), or None.
    evaluation_slots: np.ndarray | None
    #: The batched policy act() calls, a tf.function traced once for every batch size
    #: (`batched_policy`), or None for an agent without a network.
    policy: Callable | None
    #: Where the training loop takes its batches from (learner.data.DataSource).
    data: object

    def __init__(self, context: AgentContext): ...

    @classmethod
    def evaluation_policy(cls, spec: EnvSpec, num_stacked_frames: int) -> EvaluationPolicy | None:
        """The policy `seed-eval` restores and plays greedily, or None when there is none."""

    def act(self, slot_ids: np.ndarray, step) -> tuple[np.ndarray, np.ndarray]:
        """One batched policy call: actions [B] and new core state [B, state_size] for the slots'
        `step` (learner.slots.Step: what the policy sees, frames stacked, and the env's single frame and
        end flags), handing what training needs from the same data to the adder."""

    def release(self, slot_ids: np.ndarray) -> None:
        """Forgets the slots' partial training data (their actor left): the adder's release."""

    def update(self, batch) -> tuple[dict[str, float], int]:
        """Trains on `batch`. Returns metrics, including 'update_applied' (False when a non-finite
        loss or gradient was skipped), and the environment frames newly collected that this update
        accounts for, whether or not it was applied: the fresh frames its batch took from the queue,
        or the frames inserted into replay since the last update; the learner's frame budget
        counts them."""

    def trackables(self) -> dict[str, object]:
        """TensorFlow objects the checkpoint holds, by name ('agent': the network acting uses)."""


def batched_policy(network, *extra_input_specs):
    """Decorates an agent's policy step as a tf.function traced once for every batch size.

    The function takes (prev_actions [B] (or [B, A] for a continuous-action network), EnvOutput,
    core_state [B, S], *extra inputs).
    """
    signature = (
        network.prev_action_spec,
        EnvOutput(tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.bool),
                  tf.TensorSpec([None, *network.observation_shape], network.observation_dtype)),
        tf.TensorSpec([None, network.state_size], tf.float32),
        *extra_input_specs,
    )
    return lambda fn: tf.function(fn, input_signature=signature)


AGENTS: dict[str, type] = {}


def agents_that(predicate: Callable[[type], bool]) -> str:
    """'@A, @B': the registered agents for which `predicate(cls)` holds, for error messages."""
    return ", ".join(f"@{name}" for name, cls in sorted(AGENTS.items()) if predicate(cls))


def numpy_seed() -> int:
    """A seed for an agent's own generator, drawn from numpy's global one, which training.seed
    seeds: a seeded run samples its replays and minibatches the same way again."""
    return int(np.random.randint(2 ** 31))


def bound_setting(name: str, default):
    """A gin binding ('Configurable.parameter') as the run's configs set it, or `default` where they do
    not: for the classmethods `seed-eval` calls, which build no agent to ask."""
    try:
        return gin.query_parameter(name)
    except ValueError:  # not bound
        return default


def action_kind(spec: EnvSpec) -> str:
    return "discrete" if spec.action.is_discrete else "continuous"


def register(cls):
    """Class decorator: adds an agent class to the registry, after checking it declares the contract."""
    missing = [name for name in ("supports_strategy", "action_kinds", "evaluation_policy", "act", "release",
                                 "update", "trackables") if not hasattr(cls, name)]
    if missing:
        raise TypeError(f"{cls.__name__} does not implement the agent contract: missing {', '.join(missing)}")
    AGENTS[cls.__name__] = cls
    return cls
