"""PPO's advantages recomputed before every later epoch (`PPOAgent.recompute_advantages`): GAE from the
values the previous epoch's minibatches computed and the network's bootstrap values, against the numpy
reference; and the per-unroll arrays train_in_minibatches hands from one epoch to the next."""
import numpy as np

from learner.agents.minibatches import PER_UNROLL_VALUES, train_in_minibatches
from learner.networks import EnvOutput
from tests.learner.agents.ppo.test_maths import numpy_gae
from tests.learner.agents.test_contract import SMALL, first_batch, make


def test_step_values_give_the_gae_of_those_values_and_the_networks_bootstrap_values():
    agent, pipeline = make("PPOAgent")
    batch = first_batch(agent, pipeline, np.random.default_rng(7))
    rng = np.random.default_rng(8)
    for variable in agent.network.trainable_variables:  # the network moves on after acting
        variable.assign_add(0.3 * rng.normal(size=variable.shape).astype(np.float32))
    step_values = rng.normal(size=batch["value"][:-1].shape).astype(np.float32)
    stored, recomputed = agent.trainer.prepare(batch), agent.trainer.prepare(batch, step_values)

    outputs, _ = agent.network.unroll(batch["prev_action"], EnvOutput(
        batch["reward"], batch["first"], batch["observation"]), batch["core_state"][0])
    values = np.concatenate([step_values, outputs.baseline.numpy()[-1:]], 0)
    terminated, done = batch["terminated"], batch["terminated"] | batch["truncated"]
    discount, lambda_ = agent.trainer.loss.discount, agent.trainer.loss.lambda_
    expected = numpy_gae(batch["reward"][1:], values[:-1], values[-1], discount * (1 - terminated[1:]),
                         1.0 - done[:-1], lambda_)
    np.testing.assert_allclose(recomputed["advantages"], expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(recomputed["returns"], expected + values[:-1], rtol=1e-4, atol=1e-4)
    assert not np.allclose(stored["advantages"], recomputed["advantages"], atol=1e-3)
    np.testing.assert_array_equal(recomputed["value"], batch["value"][:-1])  # value clipping's reference


def test_later_epochs_take_the_values_the_previous_epochs_minibatches_computed():
    agent, pipeline = make("PPOAgent", recompute_advantages=True)
    batch = first_batch(agent, pipeline, np.random.default_rng(9))
    given, computed = [], []
    prepare, update = agent.trainer.prepare, agent.trainer.update
    agent.trainer.prepare = lambda b, step_values=None: given.append(step_values) or prepare(b, step_values)

    def recording_update(minibatch):
        result = update(minibatch)
        computed.append(result[PER_UNROLL_VALUES].copy())
        return result
    agent.trainer.update = recording_update
    before = [v.numpy().copy() for v in agent.network.trainable_variables]
    metrics, new_frames = agent.update(batch)

    epochs, minibatches = SMALL["PPOAgent"]["epochs"], SMALL["PPOAgent"]["minibatches"]
    assert len(given) == epochs and given[0] is None  # the first epoch: the values stored when acting
    stored = batch["value"][:-1]
    for values in given[1:]:
        assert values.shape == stored.shape and np.isfinite(values).all()
        assert not np.allclose(values, stored, atol=1e-4)
    # The second epoch's values are exactly what the first epoch's minibatches returned, in batch order.
    first_epoch = np.sort(np.concatenate([c.ravel() for c in computed[:minibatches]]))
    np.testing.assert_allclose(np.sort(given[1].ravel()), first_epoch, rtol=1e-6)
    assert PER_UNROLL_VALUES not in metrics
    assert metrics.pop("update_applied") and metrics.pop("skipped_steps") == 0
    assert all(np.isfinite(v) for v in metrics.values()) and new_frames > 0
    assert any(not np.array_equal(b, a.numpy()) for b, a in zip(before, agent.network.trainable_variables))


def test_per_unroll_arrays_come_back_in_batch_order_and_reach_the_next_epoch():
    batch = {"x": np.arange(6, dtype=np.float64)[None]}  # time-major [1, 6]: six one-step unrolls
    seen = []

    def epoch_batch(per_unroll):
        seen.append(per_unroll.get("per_unroll/double"))
        return batch

    def update(minibatch):  # each unroll's array: twice its value, two rows (the unrolls on the last axis)
        return {"update_applied": True, "loss": 1.0, "per_unroll/double": np.concatenate([2 * minibatch["x"]] * 2)}
    metrics = train_in_minibatches(update, epoch_batch, 3, 2, np.random.default_rng(0))
    expected = np.concatenate([2 * batch["x"]] * 2)
    assert seen[0] is None
    np.testing.assert_array_equal(seen[1], expected)
    np.testing.assert_array_equal(seen[2], expected)
    np.testing.assert_array_equal(metrics["per_unroll/double"], expected)
    assert metrics["loss"] == 1.0 and metrics["skipped_steps"] == 0


def test_the_entropy_weight_decays_linearly_over_the_runs_gradient_steps():
    import pytest

    from learner.agents.ppo.training import PPOLoss
    constant = PPOLoss(entropy_cost=0.01)
    decaying = PPOLoss(entropy_cost=0.01, entropy_decay="linear", final_entropy_cost=0.002)
    for progress, expected in ((0.0, 0.01), (0.25, 0.008), (1.0, 0.002), (1.5, 0.002)):
        assert float(constant.entropy_weight(progress)) == pytest.approx(0.01)
        assert float(decaying.entropy_weight(progress)) == pytest.approx(expected)
    with pytest.raises(ValueError, match="entropy_decay 'cosine'.*'linear'"):
        PPOLoss(entropy_decay="cosine")
    with pytest.raises(ValueError, match="final_entropy_cost"):
        PPOLoss(entropy_decay="linear", final_entropy_cost=-0.1)


def test_the_loss_weighs_the_entropy_by_the_decayed_cost_and_training_steps_advance_it():
    from learner.agents.ppo.training import PPOLoss
    agent, pipeline = make("PPOAgent")
    batch = first_batch(agent, pipeline, np.random.default_rng(11))
    trainer = agent.trainer
    trainer.loss = PPOLoss(entropy_cost=0.01, entropy_decay="linear", final_entropy_cost=0.0)
    trainer.num_training_steps = 8
    steps = trainer.prepare(batch)
    at_start, start_metrics = trainer.loss(agent.network, agent.distribution, steps, 0.0)
    at_half, half_metrics = trainer.loss(agent.network, agent.distribution, steps, 0.5)
    # total = policy + value - weight x entropy, and "loss/entropy" is -entropy.
    np.testing.assert_allclose(float(at_half) - float(at_start),
                               -(0.005 - 0.01) * -float(start_metrics["loss/entropy"]), rtol=1e-4, atol=1e-7)
    assert float(half_metrics["loss/entropy_cost"]) == np.float32(0.005)
    weights = []
    for _ in range(3):  # each gradient step takes 1/8 of the run
        weights.append(float(trainer.update(trainer.prepare(batch))["loss/entropy_cost"]))
    np.testing.assert_allclose(weights, [0.01, 0.01 * 7 / 8, 0.01 * 6 / 8], rtol=1e-6)
