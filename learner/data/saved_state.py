"""How a data source's state is saved beside a checkpoint: one .npz of named arrays, written whole
or not at all (the Checkpointer calls `save_state` and `load_state`; learner/checkpoints.py)."""
import os
import zipfile

import numpy as np

# The checkpoint a sidecar was saved with, stored in it: a sidecar is used only with that checkpoint.
CHECKPOINT_KEY = "_checkpoint"


class SidecarDamaged(ValueError):
    """A sidecar file that is not the whole one saved with its checkpoint (cut short, corrupted, another
    checkpoint's). A sidecar that is whole but does not fit this run's settings raises ValueError instead."""


def write_arrays_atomically(path: str, arrays: dict[str, np.ndarray]) -> None:
    """An .npz at `path`, whole or not at all (written beside it, flushed to the disk, then renamed)."""
    try:
        with open(path + ".tmp", "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)
    except OSError:
        if os.path.exists(path + ".tmp"):  # a full disk: leave no partial file to hold its space
            os.remove(path + ".tmp")
        raise


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
        """Puts the saved arrays back. SidecarDamaged when the file is not the whole sidecar of its checkpoint;
        ValueError (from the data source) when it is, but was saved with other replay settings."""
        try:
            arrays = np.load(path)
            saved_with = str(arrays[CHECKPOINT_KEY]) if CHECKPOINT_KEY in arrays.files else None
        except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as e:
            raise SidecarDamaged(f"it cannot be read whole ({type(e).__name__}: {e})") from e
        with arrays:
            if saved_with != checkpoint_of(path):
                raise SidecarDamaged(f"it was saved with {saved_with}, not {checkpoint_of(path)}" if saved_with else
                                     "it names no checkpoint (a sidecar from before sidecars named theirs)")
            try:
                self._load(arrays)
            except (OSError, EOFError, zipfile.BadZipFile) as e:  # an array cut short inside the archive
                raise SidecarDamaged(f"it cannot be read whole ({type(e).__name__}: {e})") from e
