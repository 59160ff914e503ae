"""What happens to one batch of env steps on the learner: per-slot state,
then the agent's batched policy call, which also records the steps it needs
for training (unrolls or replay sequences) from the very same data."""
import collections

import numpy as np

from learner.frame_counter import FrameCounter
from learner.slots import FinishedEpisode, SlotTable
from seed.codec import EnvStepBatch
from seed.specs import EnvSpec


class InferencePipeline:
    """Runs on the inference thread only, so its tables need no locks."""

    def __init__(self, agent, spec: EnvSpec, *, max_slots: int, num_stacked_frames: int, reward_clipping: str,
                 frames: FrameCounter | None = None):
        self.agent = agent
        self.frames = frames or FrameCounter(spec.frames_per_step)
        self.slots = SlotTable(max_slots, spec.observation_shape, spec.observation_dtype,
                               num_stacked_frames, agent.state_size, reward_clipping,
                               spec.action.wire_shape, spec.action.wire_dtype)
        # (env steps seen so far, evaluation env?, episode); the main thread drains it for reporting.
        self.finished_episodes: collections.deque[tuple[int, bool, FinishedEpisode]] = collections.deque(maxlen=10_000)

    def __call__(self, slot_ids: np.ndarray, steps: EnvStepBatch) -> np.ndarray:
        step, finished = self.slots.observe(slot_ids, steps)
        actions, new_state = self.agent.act(slot_ids, step)
        self.slots.act(slot_ids, actions, new_state)
        self.frames.env_steps += len(slot_ids)
        if finished:
            evaluation = self.agent.evaluation_slots
            self.finished_episodes.extend(
                (self.frames.env_steps, evaluation is not None and bool(evaluation[e.slot]), e) for e in finished)
        return actions

    def counters(self) -> dict[str, int]:
        return {"env_steps": self.frames.env_steps}

    def take_finished_episodes(self) -> list[tuple[int, bool, FinishedEpisode]]:
        """The episodes finished since the last call, as (env steps then, evaluation env?, episode)."""
        taken = []
        while self.finished_episodes:
            taken.append(self.finished_episodes.popleft())
        return taken

    def release(self, slot_ids: np.ndarray) -> None:
        self.slots.reset(slot_ids)
        self.agent.release(slot_ids)
