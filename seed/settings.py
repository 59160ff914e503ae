"""Start-up checks of numeric gin settings, shared by both roles.

A value out of range stops the role at once with one line that names the
binding, rather than a division by zero, a batcher that spins on empty
batches or a learner that waits for a batch no actor can fill.
"""
import math
from collections.abc import Callable


def _require(configurable: str, values: dict, ok: Callable[[float], bool], wanted: str) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or not ok(value):
            raise ValueError(f"{configurable}.{name} must be {wanted}, got {value!r}")


def require_positive(configurable: str, **values) -> None:
    _require(configurable, values, lambda v: v > 0, "positive")


def require_non_negative(configurable: str, **values) -> None:
    _require(configurable, values, lambda v: v >= 0, "0 or more")


def require_fraction(configurable: str, **values) -> None:
    _require(configurable, values, lambda v: 0 <= v <= 1, "between 0 and 1")
