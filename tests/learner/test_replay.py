import numpy as np
import pytest

from learner.replay import STEP_FIELDS, SequenceReplay

FRAME = (84, 84)


def make_replay(capacity, sequence_steps=7, new_steps=4, k=2, state_size=4, **kwargs):
    return SequenceReplay(capacity, sequence_steps, new_steps, FRAME, "uint8", k, state_size, seed=0, **kwargs)


def sequence(replay, positions, first=None, state=0.0):
    s = replay.sequence_steps
    seq = {k: np.zeros((1, s), d) for k, d in STEP_FIELDS.items()}
    seq["frame_pos"] = np.asarray(positions, np.int64)[None]
    if first is not None:
        seq["first"][0] = first
    seq["reward"][0] = np.arange(s)
    seq["core_state"] = np.full((1, replay.core_state.shape[1]), state, np.float32)
    return seq


def test_memory_per_stored_step_is_one_frame_plus_a_few_bytes():
    small = make_replay(100, sequence_steps=124, new_steps=80, k=4, state_size=1024)
    large = make_replay(300, sequence_steps=124, new_steps=80, k=4, state_size=1024)
    per_step = (large.nbytes - small.nbytes) / (200 * 80)
    frame = 84 * 84
    assert frame <= per_step <= 1.25 * frame + 64, per_step


def test_sampled_sequences_rebuild_stacks_that_restart_at_episode_starts():
    replay = make_replay(4, sequence_steps=5, k=3)
    positions = replay.add_frames(np.stack([np.full(FRAME, 10 + i, np.uint8) for i in range(5)]))
    replay.insert(sequence(replay, positions, first=[False, False, False, True, False]))
    batch = replay.sample(1)
    obs = batch.sequences["observation"][0, :, 0, 0]  # [steps after history, K]
    assert obs.tolist() == [[10, 11, 12], [0, 0, 13], [0, 13, 14]]
    assert batch.sequences["reward"][0].tolist() == [2, 3, 4]  # history rows are dropped
    assert batch.weights.max() == 1.0


def test_priorities_steer_sampling_and_importance_weights_correct_for_it():
    replay = make_replay(8, sequence_steps=3, k=1, priority_exponent=1.0, importance_exponent=1.0)
    for i in range(8):
        replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8)), state=i))
    replay.update_priorities(np.arange(8), np.array([1, 1, 1, 1, 1, 1, 1, 9.0]))
    batch = replay.sample(4000)
    share = (batch.indices == 7).mean()
    assert 0.5 < share < 0.7  # 9 / 16
    assert batch.weights[batch.indices == 7].max() == pytest.approx(1 / 9)
    assert batch.weights[batch.indices != 7].max() == pytest.approx(1.0)


def test_sequences_whose_frames_were_overwritten_are_never_sampled():
    replay = make_replay(4, sequence_steps=3, new_steps=2, k=1)
    first = replay.add_frames(np.zeros((3, *FRAME), np.uint8))
    replay.insert(sequence(replay, first, state=1.0))
    for _ in range(10):  # many more frames than the ring holds
        replay.add_frames(np.ones((3, *FRAME), np.uint8))
    fresh = replay.add_frames(np.full((3, *FRAME), 2, np.uint8))
    replay.insert(sequence(replay, fresh, state=2.0))
    batch = replay.sample(50)
    assert (batch.sequences["core_state"][:, 0] == 2.0).all()
    assert (batch.sequences["observation"] == 2).all()
    stale = sequence(replay, first)
    replay.insert(stale)  # a sequence whose frames are already gone is dropped at insertion
    assert replay.num_dropped == 1
