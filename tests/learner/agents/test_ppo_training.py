"""PPO's advantages recomputed before every epoch (`PPOAgent.recompute_advantages`): GAE from the
values the network gives now, against the numpy reference, and one recomputation per epoch."""
import numpy as np

from learner.networks import EnvOutput
from tests.learner.agents.test_contract import SMALL, first_batch, make
from tests.learner.agents.test_ppo_maths import numpy_gae


def test_current_values_give_the_gae_of_the_networks_values_now():
    agent, pipeline = make("PPOAgent")
    batch = first_batch(agent, pipeline, np.random.default_rng(7))
    rng = np.random.default_rng(8)
    for variable in agent.network.trainable_variables:  # the network moves on after acting
        variable.assign_add(0.3 * rng.normal(size=variable.shape).astype(np.float32))
    stored, current = agent.trainer.prepare(batch), agent.trainer.prepare(batch, current_values=True)

    time_major = {k: np.swapaxes(v, 0, 1) for k, v in batch.items()}
    outputs, _ = agent.network.unroll(time_major["prev_action"], EnvOutput(
        time_major["reward"], time_major["first"], time_major["observation"]), time_major["core_state"][0])
    values = outputs.baseline.numpy()
    terminated, done = time_major["terminated"], time_major["terminated"] | time_major["truncated"]
    discount, lambda_ = agent.trainer.loss.discount, agent.trainer.loss.lambda_
    expected = numpy_gae(time_major["reward"][1:], values[:-1], values[-1], discount * (1 - terminated[1:]),
                         1.0 - done[:-1], lambda_)
    np.testing.assert_allclose(current["advantages"], expected.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(current["returns"], (expected + values[:-1]).T, rtol=1e-4, atol=1e-4)
    assert not np.allclose(stored["advantages"], current["advantages"], atol=1e-3)
    np.testing.assert_array_equal(current["value"], batch["value"][:, :-1])  # value clipping's reference


def test_recomputing_advantages_prepares_every_epoch_afresh_and_trains():
    agent, pipeline = make("PPOAgent", recompute_advantages=True)
    batch = first_batch(agent, pipeline, np.random.default_rng(9))
    prepared = []
    prepare = agent.trainer.prepare
    agent.trainer.prepare = lambda b, current_values=False: prepared.append(current_values) or prepare(
        b, current_values)
    before = [v.numpy().copy() for v in agent.network.trainable_variables]
    metrics, new_frames = agent.update(batch)
    assert prepared == [True] * SMALL["PPOAgent"]["epochs"]
    assert metrics.pop("update_applied") and metrics.pop("skipped_steps") == 0
    assert all(np.isfinite(v) for v in metrics.values()) and new_frames > 0
    assert any(not np.array_equal(b, a.numpy()) for b, a in zip(before, agent.network.trainable_variables))
