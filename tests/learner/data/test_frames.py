import numpy as np
import pytest

from learner.data.adders import UnrollAdder
from learner.data.frames import HISTORY, stack_frames, stack_unrolls
from learner.data.unrolls import UnrollQueue
from learner.slots import SlotTable
from seed.codec import EnvStepBatch

FRAME = (3, 2)


def random_steps(rng, num_slots, num_steps):
    """Per step: distinct frames [n, *FRAME] and episode ends (terminated or a lost life) now and then."""
    for _ in range(num_steps):
        frames = rng.integers(1, 255, (num_slots, *FRAME), dtype=np.uint8)
        ends = rng.random(num_slots) < 0.15
        codes = np.where(ends, rng.choice([1, 2], num_slots), 0).astype(np.uint8)  # 2: a lost life
        yield EnvStepBatch.from_env(frames, np.zeros(num_slots, np.float32), codes, np.zeros(num_slots, bool))


@pytest.mark.parametrize("k,unroll_length", [(1, 3), (2, 3), (4, 3), (4, 1)])
def test_batches_stack_exactly_the_observations_the_policy_saw(k, unroll_length):
    """The acting side pushes frames onto each slot's stack; the adder keeps the steps' single frames
    and the batch stacks them again: across episode starts, lost lives and unroll boundaries (also
    unrolls shorter than the stack) they agree, time-major, over groups of unrolls."""
    rng = np.random.default_rng(k)
    slots = 5
    table = SlotTable(slots, FRAME, "uint8", k, state_size=0, reward_clipping="none")
    queue = UnrollQueue(capacity=1000)
    adder = UnrollAdder(slots, unroll_length, {"observation": (FRAME, "uint8"), "first": ((), "bool"),
                                               "t": ((), "int64")}, queue, num_stacked_frames=k)
    ids = np.arange(slots)
    seen = {}  # (slot, step) -> the stack the policy got
    for t, steps in enumerate(random_steps(rng, slots, 40)):
        inputs, _ = table.observe(ids, steps)
        for slot in ids:
            seen[slot, t] = inputs.observation[slot].copy()
        adder.add(ids, {"observation": steps.observations, "first": inputs.first, "t": np.full(slots, t)})
    groups = queue.take(len(queue))
    assert len(groups) == 39 // unroll_length  # all slots complete an unroll together
    assert all(g["observation"].shape[2:] == FRAME for g in groups)  # single frames, each once
    assert all((HISTORY in g) == (k > 1) for g in groups)
    batch = stack_unrolls(groups)
    assert batch["t"].shape == (unroll_length + 1, len(groups) * slots)
    assert batch["observation"].shape == (unroll_length + 1, len(groups) * slots, *FRAME, k)
    for column, slot in enumerate(np.tile(ids, len(groups))):
        for j, t in enumerate(batch["t"][:, column]):
            np.testing.assert_array_equal(batch["observation"][j, column], seen[slot, t], err_msg=f"slot {slot} t {t}")


def test_stacks_start_from_zeros_at_each_episode_start():
    frames = np.arange(1, 6, dtype=np.uint8).reshape(1, 5, 1)
    stacked = stack_frames(frames, np.array([[False, False, True, False, False]]), 3)
    assert stacked.shape == (3, 1, 1, 3)  # time-major
    assert stacked[:, 0, 0].tolist() == [[0, 0, 3], [0, 3, 4], [3, 4, 5]]


def test_a_history_read_where_it_lies_stacks_as_the_concatenated_window():
    rng = np.random.default_rng(2)
    window = rng.integers(1, 255, (3, 9, *FRAME), dtype=np.uint8)
    first = rng.random((3, 9)) < 0.3
    first[:, :3] = False  # a history holds no episode start
    whole = stack_frames(window, first, 4)
    np.testing.assert_array_equal(stack_frames(window[:, 3:], first[:, 3:], 4, history=window[:, :3]), whole)
    np.testing.assert_array_equal(stack_frames(window[:, 2:], first[:, 2:], 4, history=window[:, :2]), whole)


def test_a_fresh_slot_after_release_starts_with_an_empty_history():
    table = SlotTable(1, FRAME, "uint8", 3, state_size=0, reward_clipping="none")
    queue = UnrollQueue(capacity=10)
    adder = UnrollAdder(1, 2, {"observation": (FRAME, "uint8"), "first": ((), "bool")}, queue, num_stacked_frames=3)
    ids = np.array([0])
    steps = list(random_steps(np.random.default_rng(0), 1, 6))
    for step in steps[:2]:  # a partial unroll, then the actor leaves
        inputs, _ = table.observe(ids, step)
        adder.add(ids, {"observation": step.observations, "first": inputs.first})
    adder.release(ids)
    table.reset(ids)
    for step in steps[2:5]:
        inputs, _ = table.observe(ids, step)
        adder.add(ids, {"observation": step.observations, "first": inputs.first})
    unroll = queue.get_batch(1)
    assert not unroll[HISTORY].any()
    np.testing.assert_array_equal(stack_unrolls([unroll])["observation"][-1, 0], inputs.observation[0])
