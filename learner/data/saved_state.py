"""How a data source's state is saved beside a checkpoint: one .npz of named arrays, written whole
or not at all (the Checkpointer calls `save_state` and `load_state`; learner/checkpoints.py)."""
import os

import numpy as np


def write_arrays_atomically(path: str, arrays: dict[str, np.ndarray]) -> None:
    """An .npz at `path`, whole or not at all (written beside it, then renamed)."""
    with open(path + ".tmp", "wb") as f:
        np.savez(f, **arrays)
    os.replace(path + ".tmp", path)


class ArraySidecar:
    """A sidecar that is one .npz of named arrays: `state()` (views of live buffers, so written while
    `lock` is held: a consistent snapshot without a second copy in memory) and `load(arrays)`, which puts
    such arrays back. `nbytes()` is what one copy takes on disk."""

    def __init__(self, lock, state, load, nbytes):
        self._lock, self._state, self._load, self._nbytes = lock, state, load, nbytes

    @property
    def state_nbytes(self) -> int:
        return self._nbytes()

    def save_state(self, path: str) -> None:
        with self._lock:
            write_arrays_atomically(path, self._state())

    def load_state(self, path: str) -> None:
        with np.load(path) as arrays:
            self._load(arrays)
