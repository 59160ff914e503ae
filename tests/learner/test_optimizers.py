import pytest

from learner.optimizers import create_optimizer, current_learning_rate


@pytest.mark.parametrize("decay, halfway", [("none", 1e-3), ("linear", 0.5e-3), ("polynomial", 0.25e-3)])
def test_learning_rate_decays_over_the_run(decay, halfway):
    optimizer = create_optimizer(100, learning_rate=1e-3, lr_decay=decay, lr_decay_power=2.0)
    optimizer.iterations.assign(50)
    assert current_learning_rate(optimizer) == pytest.approx(halfway, rel=1e-5)


def test_rmsprop_and_bad_names():
    assert type(create_optimizer(10, kind="rmsprop")).__name__ == "RMSprop"
    with pytest.raises(ValueError, match="unknown optimizer 'sgdd'"):
        create_optimizer(10, kind="sgdd")
    with pytest.raises(ValueError, match="unknown lr_decay"):
        create_optimizer(10, lr_decay="cosine")


@pytest.mark.parametrize("decay", ["none", "linear"])
def test_an_integer_learning_rate_is_taken_and_a_negative_one_refused(decay):
    # gin reads `learning_rate=1` as an int, which Keras refuses with a message about schedules.
    assert current_learning_rate(create_optimizer(10, learning_rate=1, lr_decay=decay)) == 1.0
    with pytest.raises(ValueError, match="create_optimizer.learning_rate must be positive, got -1"):
        create_optimizer(10, learning_rate=-1, lr_decay=decay)
