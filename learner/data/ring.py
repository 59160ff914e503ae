"""The one ring every replay stores its items in: named arrays of `capacity` rows, written in order,
the oldest overwritten first.

Items are addressed by their absolute position, the count of items written before them: item p
lives in row p % capacity until item p + capacity takes that row. R2D2's frames, V-trace's unrolls,
R2D2's sequences and SAC's transitions are each one ArrayRing; what a replay keeps beside its items
(priorities, ages, keys) stays with the replay.
"""
import numpy as np

Fields = dict[str, tuple[tuple[int, ...], str]]  # name -> (per-item shape, dtype)


class ArrayRing:
    """`fields` allocate the arrays up front; without them the first `add` allocates them from its
    items' shapes. The owner's lock guards it."""

    def __init__(self, capacity: int, fields: Fields | None = None):
        self.capacity = capacity
        self.arrays: dict[str, np.ndarray] = {}
        if fields is not None:
            self.arrays = {name: np.zeros((capacity, *shape), dtype) for name, (shape, dtype) in fields.items()}
        self.written = 0  # items ever written

    def __len__(self) -> int:
        return min(self.written, self.capacity)

    @property
    def next_row(self) -> int:
        """The row the next item takes."""
        return self.written % self.capacity

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())

    def rows(self, positions: np.ndarray) -> np.ndarray:
        return np.asarray(positions) % self.capacity

    def add(self, items: dict[str, np.ndarray]) -> np.ndarray:
        """Writes `items` ([n, ...] per field; of more than `capacity` only the newest are kept) and
        returns their absolute positions."""
        n = len(next(iter(items.values())))
        if not self.arrays:
            self.arrays = {k: np.zeros((self.capacity, *v.shape[1:]), v.dtype) for k, v in items.items()}
        positions = self.written + np.arange(n)
        kept = slice(max(0, n - self.capacity), n)
        for name, array in self.arrays.items():
            array[positions[kept] % self.capacity] = items[name][kept]
        self.written += n
        return positions

    def gather(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """Copies of the items at `positions` (absolute positions or rows)."""
        rows = self.rows(positions)
        return {name: array[rows] for name, array in self.arrays.items()}

    def state(self, prefix: str) -> dict[str, np.ndarray]:
        """The ring as named arrays under `prefix`: views of the live arrays' filled rows, for the owner
        to write while it holds its lock (a replay not yet full saves only what it holds)."""
        rows = len(self)
        return {**{f"{prefix}{name}": array[:rows] for name, array in self.arrays.items()},
                f"{prefix}{WRITTEN}": np.asarray(self.written), f"{prefix}{CAPACITY}": np.asarray(self.capacity)}

    def check_state(self, arrays, prefix: str) -> None:
        """Refuses, naming the field, a saved ring (`state(prefix)`) with other fields, capacity or shapes."""
        names = saved_fields(arrays, prefix)
        if prefix + WRITTEN not in arrays or (self.arrays and set(names) != set(self.arrays)):
            missing = sorted(set(self.arrays) ^ set(names)) or [WRITTEN]
            raise ValueError(f"the saved replay has no {missing[0]!r} or an extra one: it was written by another "
                             "version or with other settings; restore them, or set checkpoint_replay=False")
        capacity = int(arrays[prefix + CAPACITY])
        rows = min(int(arrays[prefix + WRITTEN]), capacity)
        for name in names:
            saved, mine = arrays[prefix + name], self.arrays.get(name)
            shape = (rows, *(saved.shape[1:] if mine is None else mine.shape[1:]))
            dtype = saved.dtype if mine is None else mine.dtype
            if capacity != self.capacity or saved.shape != shape or saved.dtype != dtype:
                raise ValueError(f"the saved replay's {name} is {saved.dtype}{list(saved.shape)} of {capacity} rows, "
                                 f"this run's is {dtype}{list(shape[1:])} of {self.capacity} rows: the replay settings "
                                 "changed since it was saved; restore them, or set checkpoint_replay=False to start "
                                 "with an empty replay")

    def load_state(self, arrays, prefix: str) -> None:
        """Puts back what `state(prefix)` returned, into the arrays already allocated (no second copy of
        a large ring), after `check_state`."""
        self.check_state(arrays, prefix)
        for name in saved_fields(arrays, prefix):
            saved = arrays[prefix + name]
            if name not in self.arrays:
                self.arrays[name] = np.zeros((self.capacity, *saved.shape[1:]), saved.dtype)
            self.arrays[name][:len(saved)] = saved
        self.written = int(arrays[prefix + WRITTEN])


WRITTEN, CAPACITY = "written", "capacity"  # the counters a saved ring keeps beside its fields


def saved_fields(arrays, prefix: str) -> list[str]:
    """The field names of a ring saved under `prefix`."""
    return [k[len(prefix):] for k in arrays if k.startswith(prefix) and k[len(prefix):] not in (WRITTEN, CAPACITY)]
