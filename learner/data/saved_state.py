"""How a data source's state is saved beside a checkpoint: one .npz of named arrays, written whole
or not at all (the Checkpointer calls `save_state` and `load_state`; learner/checkpoints.py)."""
import os
import zipfile

import numpy as np

# The checkpoint a sidecar was saved with, stored in it: a sidecar is used only with that checkpoint.
CHECKPOINT_KEY = "_checkpoint"


def write_arrays_atomically(path: str, arrays: dict[str, np.ndarray]) -> None:
    """An .npz at `path`, whole or not at all (written beside it, flushed to the disk, then renamed)."""
    with open(path + ".tmp", "wb") as f:
        np.savez(f, **arrays)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def checkpoint_of(path: str) -> str:
    """ckpt-N of a sidecar path CKPT.NAME.npz."""
    return os.path.basename(path).split(".")[0]


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
            write_arrays_atomically(path, {**self._state(), CHECKPOINT_KEY: np.array(checkpoint_of(path))})

    def load_state(self, path: str) -> None:
        """Puts the saved arrays back; ValueError when the file is not the whole sidecar of its checkpoint."""
        try:
            with np.load(path) as arrays:
                saved_with = str(arrays[CHECKPOINT_KEY]) if CHECKPOINT_KEY in arrays.files else None
                if saved_with != checkpoint_of(path):
                    raise ValueError(f"it was saved with {saved_with}, not {checkpoint_of(path)}" if saved_with else
                                     "it names no checkpoint (a sidecar from before sidecars named theirs)")
                self._load(arrays)
        except (OSError, EOFError, KeyError, zipfile.BadZipFile) as e:
            raise ValueError(f"it cannot be read whole ({type(e).__name__}: {e})") from e
