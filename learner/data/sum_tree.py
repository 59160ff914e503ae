"""Prioritised sampling: a sum tree over priorities (O(log N) sampling and updates for batches of
indices, vectorised with numpy, no Python loop per item) and the priorities both prioritised replays keep in it."""
import numpy as np


class SumTree:
    def __init__(self, capacity: int):
        self.capacity = capacity
        self._leaves = 1 << max(0, int(np.ceil(np.log2(max(capacity, 1)))))
        self._depth = int(np.log2(self._leaves))
        self._tree = np.zeros(2 * self._leaves, np.float64)  # node i has children 2i, 2i+1; root 1
        self.node_visits = 0  # nodes read or written, to check the O(log N) cost in tests

    @property
    def total(self) -> float:
        return float(self._tree[1])

    @property
    def nodes(self) -> np.ndarray:
        """The whole tree as one array (for saving it); `load` puts such an array back."""
        return self._tree

    def load(self, nodes: np.ndarray) -> None:
        if nodes.shape != self._tree.shape:
            raise ValueError(f"a sum tree of {nodes.shape[0]} nodes does not fit one of {self._tree.shape[0]}")
        self._tree[:] = nodes

    def get(self, indices: np.ndarray) -> np.ndarray:
        return self._tree[self._leaves + np.asarray(indices)]

    def set(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        nodes = self._leaves + np.asarray(indices, np.int64)
        self._tree[nodes] = priorities
        self.node_visits += len(nodes)
        for _ in range(self._depth):
            nodes = np.unique(nodes // 2)
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]
            self.node_visits += len(nodes)

    def sample(self, batch_size: int, rng: np.random.Generator) -> np.ndarray:
        """Indices drawn with probability priority / total (stratified over the total)."""
        if self.total <= 0:
            raise ValueError("cannot sample from a sum tree whose priorities are all zero")
        targets = (np.arange(batch_size) + rng.random(batch_size)) * (self.total / batch_size)
        nodes = np.ones(batch_size, np.int64)
        for _ in range(self._depth):
            left = self._tree[2 * nodes]
            go_right = targets >= left
            targets = np.where(go_right, targets - left, targets)
            nodes = 2 * nodes + go_right
            self.node_visits += batch_size
        indices = nodes - self._leaves
        # Float round-off can step onto a zero-priority leaf at the far right; step back left.
        return np.minimum(indices, self.capacity - 1)


class Priorities:
    """Prioritised replay's priorities (Schaul et al. 2016) over `capacity` items: priority^exponent in
    a sum tree, a new item at the largest priority seen so far, and one rule for a non-finite priority
    (a diverged loss, a skipped update): the item keeps the one it had, since a NaN in the tree would make
    every later draw fail and the largest priority would over-sample what the NaN came from."""

    def __init__(self, capacity: int, exponent: float):
        self.tree = SumTree(capacity)
        self.exponent = exponent
        self.max_priority = 1.0

    def insert(self, indices: np.ndarray) -> None:
        self.tree.set(indices, np.full(len(indices), self.max_priority ** self.exponent))

    def update(self, indices: np.ndarray, priorities: np.ndarray, where: np.ndarray | None = None) -> None:
        """New priorities for `indices` (where `where` holds, if given); non-finite ones are ignored."""
        priorities = np.asarray(priorities, np.float64)
        keep = np.isfinite(priorities) if where is None else np.isfinite(priorities) & where
        if keep.any():
            self.tree.set(np.asarray(indices)[keep], priorities[keep] ** self.exponent)
            self.max_priority = max(self.max_priority, float(priorities[keep].max()))

    def remove(self, indices: np.ndarray) -> None:
        """Makes items undrawable (priority 0) until they are inserted again."""
        self.tree.set(indices, np.zeros(len(indices)))

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """`count` indices drawn with probability proportional to priority^exponent."""
        return self.tree.sample(count, rng)

    def probabilities(self, indices: np.ndarray) -> np.ndarray:
        """Each index's probability of being drawn."""
        return self.tree.get(indices) / self.tree.total

    def drawable(self, indices: np.ndarray) -> np.ndarray:
        return self.tree.get(indices) > 0

    def state(self) -> dict[str, np.ndarray]:
        return {"tree": self.tree.nodes, "max_priority": np.asarray(self.max_priority)}

    def load_state(self, arrays) -> None:
        self.tree.load(arrays["tree"])
        self.max_priority = float(arrays["max_priority"])
