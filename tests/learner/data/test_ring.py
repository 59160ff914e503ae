import numpy as np
import pytest

from learner.data.ring import ArrayRing

FIELDS = {"x": ((2,), "float32"), "n": ((), "int64")}


def items(start, n):
    return {"x": np.full((n, 2), start, np.float32) + np.arange(n)[:, None], "n": np.arange(start, start + n)}


def test_items_are_written_in_order_and_the_oldest_overwritten():
    ring = ArrayRing(4, FIELDS)
    assert ring.add(items(0, 3)).tolist() == [0, 1, 2] and len(ring) == 3
    positions = ring.add(items(3, 3))  # two overwrite the oldest rows
    assert positions.tolist() == [3, 4, 5] and len(ring) == 4 and ring.next_row == 2
    assert ring.gather(np.array([5, 2]))["n"].tolist() == [5, 2]  # by absolute position
    assert sorted(ring.arrays["n"].tolist()) == [2, 3, 4, 5]


def test_more_items_than_it_holds_keep_the_newest():
    ring = ArrayRing(3)  # allocated from the first items
    ring.add(items(0, 5))
    assert sorted(ring.arrays["n"].tolist()) == [2, 3, 4] and ring.written == 5


def test_a_ring_not_yet_full_saves_only_what_it_holds_and_loads_back():
    ring = ArrayRing(8, FIELDS)
    ring.add(items(0, 3))
    state = ring.state("r/")
    assert state["r/x"].shape == (3, 2) and int(state["r/written"]) == 3
    loaded = ArrayRing(8, FIELDS)
    loaded.load_state({k: np.array(v) for k, v in state.items()}, "r/")
    assert loaded.written == 3 and loaded.gather(np.arange(3))["n"].tolist() == [0, 1, 2]
    loaded.add(items(3, 1))
    assert loaded.next_row == 4


def test_a_saved_ring_of_another_capacity_or_shape_is_refused_naming_the_field():
    ring = ArrayRing(4, FIELDS)
    ring.add(items(0, 4))
    state = {k: np.array(v) for k, v in ring.state("r/").items()}
    with pytest.raises(ValueError, match="saved replay's x is float32\\[4, 2\\] of 4 rows, this run's is "
                                         "float32\\[2\\] of 5 rows: the replay settings changed"):
        ArrayRing(5, FIELDS).load_state(state, "r/")
    with pytest.raises(ValueError, match="saved replay has no 'y'"):
        ArrayRing(4, {**FIELDS, "y": ((), "bool")}).load_state(state, "r/")
