"""An agent that answers every env with action 0 and never trains: the
learner minus inference and training, for measuring the transport alone
(benchmarks/transport.py)."""
import threading

import gin
import numpy as np

from learner.agents.base import AgentContext, register
from seed.specs import EnvSpec


class NoData:
    """A data source that never has a batch: the training loop waits until the learner closes it."""

    def __init__(self):
        self._closed = threading.Event()

    def next_batch(self, timeout_s: float | None = None):
        self._closed.wait(timeout_s)
        return None

    def close(self) -> None:
        self._closed.set()

    def metrics(self) -> dict[str, float]:
        return {}

    def describe(self) -> str:
        return "no training (fixed actions)"

    def checkpoint_sidecars(self) -> dict[str, object]:
        return {}


@register
@gin.configurable(denylist=["context"])
class FixedActionAgent:
    """Answers action 0 to every env and never trains (see the module's docstring).

    Settings: none; gin can bind nothing here (its only argument, `context`, comes from the learner).
    """

    supports_strategy = False
    action_kinds = ("discrete",)
    state_size = 0
    evaluation_slots = None
    optimizer = None
    policy = None

    def __init__(self, context: AgentContext):
        self.data = NoData()

    @classmethod
    def evaluation_policy(cls, spec: EnvSpec, num_stacked_frames: int) -> None:
        return None  # nothing to restore: it has no weights

    def act(self, slot_ids, step):
        return np.zeros(len(slot_ids), np.int32), step.core_state

    def release(self, slot_ids) -> None:
        pass

    def update(self, batch):
        raise AssertionError("a FixedActionAgent never trains")

    def trackables(self) -> dict[str, object]:
        return {}
