"""Env slots: the ids the learner hands out to actors' envs, and the per-slot state it keeps between
an actor's steps.


Every table is indexed by slot id and updated with index arrays, so the cost
per batch does not grow with Python work per env. A slot's previous `done`
flag tells whether its current step is the first of an episode: with
next-step autoreset that step carries the reset observation, and the frame
stack, recurrent state and previous action start afresh there. After a lost
life (an end whose game goes on) the same holds for learning, while the
return, length and count of episodes go on with the game.
"""
import threading
from typing import NamedTuple

import numpy as np

from learner.data.frames import push_frames
from learner.rewards import clip_rewards
from seed.codec import EnvStepBatch


class SlotAllocator:
    """Hands out env slot ids; freed ids are reused lowest first."""

    def __init__(self, max_slots: int):
        self.max_slots = max_slots
        self._free = list(range(max_slots - 1, -1, -1))
        self._lock = threading.Lock()

    def allocate(self, n: int) -> np.ndarray | None:
        with self._lock:
            if n > len(self._free):
                return None
            ids = [self._free.pop() for _ in range(n)]
        return np.asarray(ids, np.int64)

    def free(self, slot_ids: np.ndarray) -> None:
        with self._lock:
            self._free.extend(int(i) for i in slot_ids)
            self._free.sort(reverse=True)

    @property
    def num_free(self) -> int:
        return len(self._free)


class Step(NamedTuple):
    """One step of a batch of slots, as an agent gets it: what its policy sees (the learner's
    per-slot view: stacked frames, clipped reward, previous action, recurrent state) and what its
    adder keeps of the env's own step (the newest single frame and the end flags)."""
    first: np.ndarray  # [B] bool: the step starts an episode (or a life)
    observation: np.ndarray  # [B, *obs_shape, K] stacked frames
    reward: np.ndarray  # [B] float32, clipped
    prev_action: np.ndarray  # [B] int32, or [B, *action_shape] float32 for continuous actions
    core_state: np.ndarray  # [B, S] float32
    frame: np.ndarray  # [B, *obs_shape] the env's newest frame, unstacked
    terminated: np.ndarray  # [B] bool: the episode ended here (its final observation)
    truncated: np.ndarray  # [B] bool: the episode was cut off here


class FinishedEpisode(NamedTuple):
    slot: int
    raw_return: float
    clipped_return: float
    length: int  # agent steps


class SlotTable:
    def __init__(self, max_slots: int, observation_shape: tuple[int, ...], observation_dtype: str,
                 num_stacked_frames: int, state_size: int, reward_clipping: str,
                 action_shape: tuple[int, ...] = (), action_dtype=np.int32):
        self.frames = np.zeros((max_slots, *observation_shape, num_stacked_frames), observation_dtype)
        self.core_state = np.zeros((max_slots, state_size), np.float32)
        self.prev_action = np.zeros((max_slots, *action_shape), action_dtype)
        self.prev_done = np.ones(max_slots, bool)  # a fresh slot starts an episode
        self.prev_life_lost = np.zeros(max_slots, bool)  # its end was a lost life: the game goes on
        self.raw_return = np.zeros(max_slots, np.float64)
        self.clipped_return = np.zeros(max_slots, np.float64)
        self.episode_length = np.zeros(max_slots, np.int64)
        self._reward_clipping = reward_clipping

    def observe(self, slot_ids: np.ndarray, steps: EnvStepBatch) -> tuple[Step, list[FinishedEpisode]]:
        """Takes one step for each slot; returns it as the agent gets it and the episodes that ended."""
        first = self.prev_done[slot_ids]
        frames = self.frames[slot_ids]
        push_frames(frames, first, steps.observations)
        self.frames[slot_ids] = frames

        reward = clip_rewards(steps.rewards, self._reward_clipping)
        # A first step's reward belongs to no transition (it is the reset step's, 0 for gym envs), but
        # after a lost life it is the game's and counts towards its return.
        in_game = ~first | self.prev_life_lost[slot_ids]
        # A new game's sums restart with np.where, not a product with in_game: inf * 0 = nan would stay in
        # the slot for every later episode.
        raw_return = np.where(in_game, self.raw_return[slot_ids] + steps.rewards, 0.0)
        clipped_return = np.where(in_game, self.clipped_return[slot_ids] + reward, 0.0)
        length = np.where(in_game, self.episode_length[slot_ids] + 1, 0)
        self.raw_return[slot_ids], self.clipped_return[slot_ids] = raw_return, clipped_return
        self.episode_length[slot_ids] = length
        done = steps.terminated | steps.truncated
        life_lost = steps.life_lost & ~steps.truncated  # a cut-off game restarts whatever its last code said
        game_over = done & ~life_lost
        finished = [FinishedEpisode(int(s), float(r), float(c), int(n)) for s, r, c, n in
                    zip(slot_ids[game_over], raw_return[game_over], clipped_return[game_over], length[game_over])]

        step = Step(first, frames, reward, self.prev_action[slot_ids], self.core_state[slot_ids], steps.observations,
                    steps.terminated, steps.truncated)
        self.prev_done[slot_ids] = done
        self.prev_life_lost[slot_ids] = life_lost
        return step, finished

    def act(self, slot_ids: np.ndarray, actions: np.ndarray, core_state: np.ndarray) -> None:
        self.prev_action[slot_ids] = actions
        self.core_state[slot_ids] = core_state

    def reset(self, slot_ids: np.ndarray) -> None:
        """Forgets everything about these slots (their actor left)."""
        self.prev_done[slot_ids] = True
        self.prev_life_lost[slot_ids] = False
        self.core_state[slot_ids] = 0
        self.prev_action[slot_ids] = 0
