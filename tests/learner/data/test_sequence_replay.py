import numpy as np
import pytest

from learner.data.sequence_replay import STEP_FIELDS, SequenceReplay

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
    seq["core_state"] = np.full((1, replay.sequences.arrays["core_state"].shape[1]), state, np.float32)
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
    obs = batch.sequences["observation"][:, 0, 0, 0]  # [steps after history, K], time-major
    assert obs.tolist() == [[10, 11, 12], [0, 0, 13], [0, 13, 14]]
    assert batch.sequences["reward"][:, 0].tolist() == [2, 3, 4]  # history rows are dropped
    assert batch.weights.max() == 1.0


def test_priorities_steer_sampling_and_importance_weights_correct_for_it():
    replay = make_replay(8, sequence_steps=3, k=1, priority_exponent=1.0, importance_exponent=1.0)
    for i in range(8):
        replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8)), state=i))
    replay.update_priorities(replay.keys, np.array([1, 1, 1, 1, 1, 1, 1, 9.0]))
    batch = replay.sample(4000)
    share = (batch.indices == 7).mean()
    assert 0.5 < share < 0.7  # 9 / 16
    assert batch.weights[batch.indices == 7].max() == pytest.approx(1 / 9)
    assert batch.weights[batch.indices != 7].max() == pytest.approx(1.0)


def test_a_non_finite_priority_keeps_the_old_one_and_sampling_goes_on():
    replay = make_replay(4, sequence_steps=3, k=1, priority_exponent=1.0)
    for i in range(4):
        replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8)), state=i))
    replay.update_priorities(replay.keys, np.array([1, 3, np.nan, np.inf]))
    # The same rule as PrioritisedSampler's (learner.data.sum_tree.Priorities): inserted at 1, kept at 1.
    assert replay.priorities.max_priority == 3.0
    np.testing.assert_allclose(replay.priorities.probabilities(np.arange(4)), np.array([1, 3, 1, 1]) / 6)
    assert np.isfinite(replay.sample(64).weights).all()


def test_priorities_come_back_by_key_and_skip_a_sequence_overwritten_since_it_was_sampled():
    replay = make_replay(4, sequence_steps=3, k=1, priority_exponent=1.0)
    for i in range(4):
        replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8)), state=i))
    batch = replay.sample(64)
    sampled = {int(i): int(key) for i, key in zip(batch.indices, batch.keys)}
    assert len(sampled) == 4 and all(key % 4 == i for i, key in sampled.items())
    replay.insert(sequence(replay, replay.add_frames(np.zeros((3, *FRAME), np.uint8)), state=9))  # takes index 0
    keys = np.array([sampled[0], sampled[1]])
    replay.update_priorities(keys, np.array([5.0, 3.0]))
    # Index 0 holds the newer sequence at its insert priority (1); index 1 got its feedback.
    np.testing.assert_allclose(replay.priorities.probabilities(np.arange(4)), np.array([1, 3, 1, 1]) / 6)
    assert replay.keys[0] != sampled[0] and replay.priorities.max_priority == 3.0


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


def filled_replay(seed=1):
    rng = np.random.default_rng(seed)
    replay = make_replay(6, sequence_steps=5, k=2)
    for i in range(9):  # more sequences than it holds: the ring and the FIFO have wrapped
        positions = replay.add_frames(rng.integers(0, 255, (3, *FRAME), dtype=np.uint8))
        replay.insert(sequence(replay, np.concatenate([positions, positions[-2:]]), state=float(i)))
    replay.update_priorities(replay.keys, rng.random(6) * 3)
    return replay


def test_a_saved_replay_loads_back_equal_and_samples_the_same(tmp_path):
    from learner.data.saved_state import write_arrays_atomically

    replay = filled_replay()
    write_arrays_atomically(str(tmp_path / "replay.npz"), replay.state())
    loaded = make_replay(6, sequence_steps=5, k=2)
    with np.load(tmp_path / "replay.npz") as arrays:
        loaded.load_state(arrays)
    for name, value in replay.state().items():
        np.testing.assert_array_equal(loaded.state()[name], value, err_msg=name)
    replay._rng, loaded._rng = np.random.default_rng(7), np.random.default_rng(7)
    a, b = replay.sample(16), loaded.sample(16)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.weights, b.weights)
    for name in a.sequences:
        np.testing.assert_array_equal(a.sequences[name], b.sequences[name], err_msg=name)


def test_a_saved_replay_of_other_sizes_is_refused_naming_the_field(tmp_path):
    state = filled_replay().state()
    with pytest.raises(ValueError, match="saved replay's frame is uint8\\[27, 84, 84\\] of 32 rows, this run's is "
                                         "uint8\\[84, 84\\] of 34 rows: the replay settings changed"):
        make_replay(6, sequence_steps=7, k=2).load_state(state)
