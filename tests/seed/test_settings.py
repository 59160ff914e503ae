import math

import pytest

from seed.settings import require_fraction, require_non_negative, require_positive


def test_values_in_range_pass():
    require_positive("run_learner", inference_batch_size=1, checkpoint_interval_s=0.5)
    require_non_negative("run_learner", batch_timeout_ms=0, total_environment_frames=10)
    require_fraction("VTraceLoss", discount=0.0, lambda_=1.0)


@pytest.mark.parametrize("check, value, wanted", [
    (require_positive, 0, "positive"), (require_positive, -3.5, "positive"),
    (require_non_negative, -1, "0 or more"), (require_fraction, 1.01, "between 0 and 1"),
    (require_fraction, math.nan, "between 0 and 1"), (require_positive, math.nan, "positive"),
    (require_positive, "64", "positive"), (require_positive, True, "positive"), (require_positive, None, "positive")])
def test_the_first_bad_value_is_named_as_its_binding(check, value, wanted):
    with pytest.raises(ValueError) as raised:
        check("Some", fine=1, bad=value)
    assert str(raised.value) == f"Some.bad must be {wanted}, got {value!r}"
