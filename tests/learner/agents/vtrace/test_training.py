import keras
import numpy as np
import pytest

from learner.agents.minibatches import PER_UNROLL_ERRORS
from learner.agents.vtrace.training import VTraceTrainer
from learner.data.unroll_replay import SOURCE_KINDS
from learner.networks import ActorCriticNetwork
from learner.optimizers import create_optimizer


def random_unrolls(rng, batch, length, obs_shape, obs_dtype, num_actions, state_size, time_major=True):
    """Random unrolls as a training batch holds them, time-major [T+1, B, ...] (as stored, [B, T+1, ...],
    without `time_major`)."""
    steps = length + 1
    if obs_dtype == "uint8":
        observation = rng.integers(0, 255, (batch, steps, *obs_shape), dtype=np.uint8)
    else:
        observation = rng.normal(size=(batch, steps, *obs_shape)).astype(np.float32)
    unrolls = {
        "observation": observation,
        "reward": rng.normal(size=(batch, steps)).astype(np.float32),
        "first": rng.random((batch, steps)) < 0.1,
        "terminated": rng.random((batch, steps)) < 0.05,
        "truncated": rng.random((batch, steps)) < 0.05,
        "prev_action": rng.integers(0, num_actions, (batch, steps)).astype(np.int32),
        "action": rng.integers(0, num_actions, (batch, steps)).astype(np.int32),
        "behaviour_logits": rng.normal(size=(batch, steps, num_actions)).astype(np.float32),
        "behaviour_value": rng.normal(size=(batch, steps)).astype(np.float32),
        "core_state": rng.normal(size=(batch, steps, state_size)).astype(np.float32),
    }
    return {k: np.ascontiguousarray(np.swapaxes(v, 0, 1)) for k, v in unrolls.items()} if time_major else unrolls


@pytest.mark.parametrize("torso, obs_shape, obs_dtype, lstm_units", [
    ("mlp", (4, 1), "float32", 16),
    ("impala_resnet", (84, 84, 4), "uint8", 32),
])
def test_update_changes_weights_with_finite_losses(torso, obs_shape, obs_dtype, lstm_units):
    rng = np.random.default_rng(0)
    agent = ActorCriticNetwork(3, obs_shape, obs_dtype, torso=torso, lstm_units=lstm_units)
    trainer = VTraceTrainer(agent, create_optimizer(100, learning_rate=1e-3))
    before = [v.numpy().copy() for v in agent.trainable_variables]
    metrics = trainer.update(random_unrolls(rng, 3, 5, obs_shape, obs_dtype, 3, agent.state_size))
    assert metrics["update_applied"]
    assert all(np.isfinite(metrics[k]) for k in ("loss/total", "loss/policy", "loss/baseline", "loss/entropy",
                                                 "gradient_norm"))
    changed = [not np.array_equal(b, v.numpy()) for b, v in zip(before, agent.trainable_variables)]
    assert all(changed)
    assert int(trainer.optimizer.iterations.numpy()) == 1


def test_non_finite_batch_is_skipped_without_touching_weights():
    rng = np.random.default_rng(1)
    agent = ActorCriticNetwork(2, (4, 1), "float32", torso="mlp")
    trainer = VTraceTrainer(agent, create_optimizer(100))
    unrolls = random_unrolls(rng, 2, 4, (4, 1), "float32", 2, 0)
    unrolls["reward"][2, 0] = np.inf
    before = [v.numpy().copy() for v in agent.trainable_variables]
    metrics = trainer.update(unrolls)
    assert not metrics["update_applied"]
    assert all(np.array_equal(b, v.numpy()) for b, v in zip(before, agent.trainable_variables))


def test_normalized_advantages_make_the_policy_term_independent_of_the_reward_scale():
    """With `normalize_advantages` a game whose rewards are 10x larger (and so its values) gets
    the same policy gradient; without it the policy term grows 10x."""
    import tensorflow as tf

    from learner.agents.vtrace.training import VTraceLoss
    rng = np.random.default_rng(0)
    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp")
    unrolls = {k: tf.constant(v) for k, v in random_unrolls(rng, 4, 6, (4, 1), "float32", 3, agent.state_size).items()}
    scaled_head = lambda s: agent._baseline.kernel.assign(agent._baseline.kernel * s)  # values scale with rewards

    def policy_losses(normalize):
        loss = VTraceLoss(normalize_advantages=normalize)
        small = loss(agent, unrolls)[1]["loss/policy"].numpy()
        scaled_head(10.0)
        large = loss(agent, {**unrolls, "reward": unrolls["reward"] * 10.0})[1]["loss/policy"].numpy()
        scaled_head(0.1)
        return small, large

    small, large = policy_losses(normalize=True)
    assert large == pytest.approx(small, rel=1e-3)
    small, large = policy_losses(normalize=False)
    assert large == pytest.approx(10 * small, rel=1e-2)


def test_epochs_and_minibatches_take_that_many_gradient_steps_on_whole_unrolls_and_count_frames_once():

    from learner.agents import AgentContext, VTraceAgent
    from seed.specs import EnvSpec

    spec = EnvSpec((4,), "float32", 2, 1)
    agent = VTraceAgent(AgentContext(spec, 1, 4, 10 ** 6), unroll_length=5, batch_size=4,
                        epochs=3, minibatches=2)
    rng = np.random.default_rng(2)
    assert agent.data.queue.put(random_unrolls(rng, 4, 5, (4,), "float32", 2, 0, time_major=False))
    seen = []
    update = agent.trainer.update
    agent.trainer.update = lambda batch: seen.append(batch["reward"].shape) or update(batch)
    metrics, frames = agent.update(agent.data.next_batch())
    assert seen == [(6, 2)] * 6  # 3 epochs x 2 minibatches of 2 whole unrolls (T+1 = 6 steps), time-major
    assert int(agent.optimizer.iterations.numpy()) == 6
    assert frames == 4 * 5 and metrics["update_applied"] and np.isfinite(metrics["loss/total"])


def test_batch_that_does_not_split_into_minibatches_is_refused_with_the_fix():

    from learner.agents import AgentContext, VTraceAgent
    from seed.specs import EnvSpec

    with pytest.raises(ValueError, match="batch_size=6 does not split into minibatches=4.*multiple of minibatches"):
        VTraceAgent(AgentContext(EnvSpec((4,), "float32", 2, 1), 1, 4, 10 ** 6), batch_size=6,
                    minibatches=4)


def test_clipped_surrogate_loss_trains():
    from learner.agents.vtrace.training import VTraceLoss

    rng = np.random.default_rng(5)
    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp", initialization="orthogonal")
    trainer = VTraceTrainer(agent, create_optimizer(100), loss=VTraceLoss(clip_epsilon=0.2,
                                                                          normalize_advantages=True))
    metrics = trainer.update(random_unrolls(rng, 3, 5, (4, 1), "float32", 3, 0))
    assert metrics["update_applied"] and np.isfinite(metrics["loss/policy"])
    # Random behaviour logits are far from the new policy: most steps lie outside the clip range.
    assert metrics["policy/approx_kl"] > 0.1 and 0.5 < metrics["policy/clip_fraction"] <= 1.0


def test_vtrace_replay_mix_is_saved_and_restored_with_checkpoint_replay(tmp_path):
    """A resumed run with replay checkpointing sees the same ring, sample counts and priorities."""

    from learner.agents import AgentContext, VTraceAgent
    from seed.specs import EnvSpec

    def agent():
        return VTraceAgent(AgentContext(EnvSpec((4,), "float32", 2, 1), 1, 4, 10 ** 6),
                           unroll_length=5, batch_size=4,
                           sources={"queue": 0.5, "uniform": 0.25, "prioritised": 0.25}, replay_capacity=8,
                           min_replay_unrolls=4, checkpoint_replay=True)

    saved, rng = agent(), np.random.default_rng(3)
    for _ in range(5):
        assert saved.data.queue.put(random_unrolls(rng, 2, 5, (4,), "float32", 2, 0, time_major=False))
    for _ in range(3):
        saved.update(saved.data.next_batch())  # the updates give the prioritised unrolls their errors
    (name, sidecar), = saved.data.checkpoint_sidecars().items()
    # 8 unrolls x 6 steps x (observation 4 floats, reward, 3 flags, 2 actions, 2 logits, value; no core state)
    assert name == "replay" and sidecar.state_nbytes == 8 * 6 * (16 + 4 + 3 + 8 + 8 + 4)
    sidecar.save_state(str(tmp_path / "replay.npz"))

    restored = agent()
    restored.data.checkpoint_sidecars()["replay"].load_state(str(tmp_path / "replay.npz"))
    before, after = saved.data.state(), restored.data.state()
    assert len(restored.data.ring) == len(saved.data.ring) == 8 and restored.data.updates == saved.data.updates == 3
    # Two replayed unrolls per batch were counted (a count starts again when its place is overwritten).
    assert 0 < before["ring/times_sampled"].sum() <= 3 * 2
    assert len(set(before["prioritised/tree"][-8:])) > 2  # errors, not only the initial priority
    assert before.keys() == after.keys()
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)
    other = VTraceAgent(AgentContext(EnvSpec((4,), "float32", 2, 1), 1, 4, 10 ** 6),
                        unroll_length=5, batch_size=4, sources={"queue": 0.5, "attentive": 0.5}, replay_capacity=8,
                        min_replay_unrolls=4, checkpoint_replay=True)
    with pytest.raises(ValueError, match="saved replay stores other fields than this run's .*features.*the sources, "
                                         "replay_features or training.num_stacked_frames changed"):
        other.data.checkpoint_sidecars()["replay"].load_state(str(tmp_path / "replay.npz"))
    plain = VTraceAgent(AgentContext(EnvSpec((4,), "float32", 2, 1), 1, 4, 10 ** 6),
                        checkpoint_replay=True)
    assert plain.data.checkpoint_sidecars() == {}  # fresh unrolls only: nothing to save


def clear_terms(behaviour_logits, behaviour_value, source, rng):
    """CLEAR's two terms of VTraceLoss on random unrolls, with the network's own outputs for them."""
    import tensorflow as tf

    from learner.agents.vtrace.training import VTraceLoss
    from learner.networks import EnvOutput

    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp")
    major = random_unrolls(rng, 4, 5, (4, 1), "float32", 3, 0)
    outputs, _ = agent.unroll(major["prev_action"], EnvOutput(major["reward"], major["first"], major["observation"]),
                              major["core_state"][0])
    major["behaviour_logits"] = behaviour_logits(outputs.policy_logits.numpy())
    major["behaviour_value"] = behaviour_value(outputs.baseline.numpy())
    major["source"] = np.repeat(source[None], 6, 0).astype(np.int32)
    major["sample_weight"] = np.ones((6, 4), np.float32)
    loss = VTraceLoss(policy_cloning_cost=0.01, value_cloning_cost=0.005, sources=SOURCE_KINDS)
    _, metrics, _ = loss(agent, {k: tf.constant(v) for k, v in major.items()})
    valid = 1.0 - (major["terminated"] | major["truncated"])[:-1]
    return metrics, outputs, major, valid


def test_clear_terms_vanish_on_the_policy_that_acted():
    rng = np.random.default_rng(7)
    metrics, *_ = clear_terms(lambda logits: logits, lambda values: values, np.array([0, 1, 3, 4]), rng)
    assert abs(float(metrics["loss/policy_cloning"])) < 1e-6 and abs(float(metrics["loss/value_cloning"])) < 1e-10


def test_clear_terms_match_numpy_on_the_replayed_steps_only():
    rng = np.random.default_rng(8)
    other = np.random.default_rng(9)
    source = np.array([0, 1, 0, 2])  # two fresh unrolls (which CLEAR leaves alone) and two replayed
    metrics, outputs, major, valid = clear_terms(lambda logits: other.normal(size=logits.shape).astype(np.float32),
                                                 lambda values: other.normal(size=values.shape).astype(np.float32),
                                                 source, rng)
    mu = np.exp(major["behaviour_logits"][:-1]) / np.exp(major["behaviour_logits"][:-1]).sum(-1, keepdims=True)
    logits = outputs.policy_logits.numpy()[:-1]
    pi = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    mask = valid * (source > 0)[None]
    kl = (mu * np.log(mu / pi)).sum(-1)
    squared = (outputs.baseline.numpy()[:-1] - major["behaviour_value"][:-1]) ** 2
    # Summed over the replayed valid steps, averaged over all valid steps.
    assert float(metrics["loss/policy_cloning"]) == pytest.approx((kl * mask).sum() / valid.sum(), rel=1e-4)
    assert float(metrics["loss/value_cloning"]) == pytest.approx((squared * mask).sum() / valid.sum(), rel=1e-4)
    # Each source's importance ratios are reported apart: here the fresh unrolls' and the uniform one's.
    rhos_fresh = float(metrics["source/queue_rho"]) / float(metrics["source/queue_steps"])
    assert rhos_fresh > 0 and float(metrics["source/elite_steps"]) == 0.0


@pytest.mark.parametrize("features", ["core", "policy_logits"])
def test_the_acting_call_stores_the_features_the_policy_would_encode_and_an_elite_mix_trains(features):
    """Through the inference pipeline: each stored step's features are the ones the same weights give
    when elite sampling re-encodes the unroll (so before any update every distance is zero), and a
    batch of all five sources trains."""

    from learner.agents import AgentContext, VTraceAgent
    from learner.inference import InferencePipeline
    from seed.specs import EnvSpec
    from tests.learner.agents.test_contract import first_batch

    spec = EnvSpec((4,), "float32", 3)
    agent = VTraceAgent(AgentContext(spec, 1, 8, 10 ** 6), unroll_length=4, batch_size=5,
                        unroll_queue_capacity=400, replay_capacity=16, min_replay_unrolls=4, replay_features=features,
                        sources={"queue": 0.2, "uniform": 0.2, "prioritised": 0.2, "elite": 0.2, "attentive": 0.2})
    pipeline = InferencePipeline(agent, spec, max_slots=8, num_stacked_frames=1, reward_clipping="none")
    rng = np.random.default_rng(4)
    batch = first_batch(agent, pipeline, rng)
    width = 3 if features == "policy_logits" else 64
    assert batch["features"].shape == (5, 5, width)  # [T+1, B, F]
    np.testing.assert_allclose(agent._encode(batch), batch["features"], rtol=1e-4, atol=1e-5)
    assert agent.data.metrics()["data/elite_distance"] == pytest.approx(0.0, abs=1e-4)
    metrics, frames = agent.update(batch)
    # The fresh unroll and the 4 that filled the ring (over calls that gave up waiting) count as consumed.
    assert agent.data.last_fresh == 5 and frames == 5 * 4
    assert metrics["update_applied"] and all(f"data/{k}_rho" in metrics for k in
                                                             ("queue", "uniform", "prioritised", "elite", "attentive"))
    agent.data.close()


def test_the_progress_line_describes_each_replay_source():

    from learner.agents import AgentContext, VTraceAgent
    from seed.specs import EnvSpec

    agent = VTraceAgent(AgentContext(EnvSpec((4,), "float32", 2, 1), 1, 4, 10 ** 6),
                        unroll_length=5, batch_size=4, sources={"queue": 0.5, "uniform": 0.25, "prioritised": 0.25},
                        replay_capacity=8, min_replay_unrolls=4)
    assert agent.data.describe() == "queue 0/64 | replay 0/8 | uniform 0.25 | prioritised 0.25"
    rng = np.random.default_rng(3)
    for _ in range(4):
        assert agent.data.queue.put(random_unrolls(rng, 2, 5, (4,), "float32", 2, 0, time_major=False))
    agent.update(agent.data.next_batch())
    line = agent.data.describe()
    assert (line.startswith("queue 2/64 | replay 6/8 | uniform 0.25 age 0 rho ")
            and "| prioritised 0.25 age 0 rho " in line)
    assert line.count(" kl ") == 2  # each replay's KL(mu || pi): what its mean rho cannot show


def test_each_source_reports_its_own_kl_and_clipped_share_against_numpy():
    """The mean importance ratio is 1 in expectation however stale the data; KL(mu || pi), estimated by
    rho - 1 - log rho, and the share outside PPO's clip range show it, per source."""
    import tensorflow as tf

    from learner.agents.vtrace.training import VTraceLoss
    from learner.networks import EnvOutput

    rng, other = np.random.default_rng(10), np.random.default_rng(11)
    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp")
    major = random_unrolls(rng, 4, 5, (4, 1), "float32", 3, 0)
    outputs, _ = agent.unroll(major["prev_action"], EnvOutput(major["reward"], major["first"], major["observation"]),
                              major["core_state"][0])
    # Fresh unrolls acted by the policy itself, replayed ones by another.
    source = np.array([0, 0, 1, 3])
    logits = outputs.policy_logits.numpy()
    major["behaviour_logits"] = np.where((source > 0)[None, :, None],
                                         other.normal(size=logits.shape).astype(np.float32), logits)
    major["source"] = np.repeat(source[None], 6, 0).astype(np.int32)
    major["sample_weight"] = np.ones((6, 4), np.float32)
    loss = VTraceLoss(clip_epsilon=0.1, sources=SOURCE_KINDS)
    _, metrics, _ = loss(agent, {k: tf.constant(v) for k, v in major.items()})

    def log_softmax(x):
        return x - np.log(np.exp(x).sum(-1, keepdims=True))

    take = lambda lp: np.take_along_axis(lp[:-1], major["action"][:-1, :, None], -1)[..., 0]  # noqa: E731
    log_rhos = take(log_softmax(logits)) - take(log_softmax(major["behaviour_logits"]))
    valid = 1.0 - (major["terminated"] | major["truncated"])[:-1]
    for index, kind in ((0, "queue"), (1, "uniform"), (3, "elite")):
        mask = valid * (source == index)[None]
        steps = float(metrics[f"source/{kind}_steps"])
        assert steps == pytest.approx(mask.sum() / valid.sum())
        kl = (np.exp(log_rhos) - 1 - log_rhos) * mask
        clipped = (np.abs(np.exp(log_rhos) - 1) > 0.1) * mask
        assert float(metrics[f"source/{kind}_kl"]) / steps == pytest.approx(kl.sum() / mask.sum(), rel=1e-3, abs=1e-6)
        assert float(metrics[f"source/{kind}_clipped"]) / steps == pytest.approx(clipped.sum() / mask.sum())
    # The policy that acted: no KL and nothing clipped; another: both.
    assert abs(float(metrics["source/queue_kl"])) < 1e-5 and float(metrics["source/queue_clipped"]) == 0.0
    assert float(metrics["source/uniform_kl"]) > 0.01 and float(metrics["source/uniform_clipped"]) > 0.0


def test_a_mix_resumed_without_its_replay_counts_updates_from_the_restored_optimizer():
    """Elite and attentive candidate multipliers anneal by the mix's update count, which a resume without
    checkpoint_replay would otherwise restart at 0."""

    from learner.agents import AgentContext, VTraceAgent
    from seed.specs import EnvSpec

    agent = VTraceAgent(AgentContext(EnvSpec((4,), "float32", 2, 1), 1, 4, 10 ** 6),
                        unroll_length=5, batch_size=4, epochs=2, minibatches=2,
                        sources={"queue": 0.5, "uniform": 0.5}, replay_capacity=8, min_replay_unrolls=4)
    agent.optimizer.iterations.assign(2 * 2 * 30)  # as a checkpoint of 30 updates restores it
    rng = np.random.default_rng(3)
    for _ in range(4):
        assert agent.data.queue.put(random_unrolls(rng, 2, 5, (4,), "float32", 2, 0, time_major=False))
    agent.update(agent.data.next_batch())
    assert agent.data.updates == 31
    assert agent.data.metrics()["data/uniform_age_updates"] == 0.0  # the refilled ring's unrolls came in at 30


@pytest.mark.parametrize("epochs, minibatches", [(2, 3), (1, 2)])
def test_minibatch_loop_in_graph_makes_the_same_steps_as_the_python_loop(epochs, minibatches):
    """Same shuffles, so the same minibatches: the weights, the averaged metrics and the last pass's
    per-unroll errors (in batch order) must agree; one non-finite unroll makes its steps skipped in both."""
    rng = np.random.default_rng(3)
    nets = [ActorCriticNetwork(3, (36, 36, 2), "uint8", lstm_units=8) for _ in range(2)]
    for a, b in zip(nets[1].variables, nets[0].variables):
        a.assign(b.numpy())
    trainers = [VTraceTrainer(net, keras.optimizers.SGD(1e-2), minibatch_loop_in_graph=in_graph)
                for net, in_graph in zip(nets, (False, True))]
    batch = random_unrolls(rng, 6, 5, (36, 36, 2), "uint8", 3, nets[0].state_size)
    batch["reward"][2, 4] = np.inf
    for _ in range(2):
        python, graph = (trainer.train(batch, epochs, minibatches, np.random.default_rng(7)) for trainer in trainers)
        assert set(graph) == set(python)
        for key, value in python.items():
            np.testing.assert_allclose(graph[key], value, rtol=1e-4, atol=1e-5, err_msg=key)
        skipped = epochs  # the steps whose minibatch holds unroll 4, one a pass
        assert graph["skipped_steps"] == skipped and graph["update_applied"]
        assert graph[PER_UNROLL_ERRORS].shape == (6,)
    for a, b in zip(nets[0].trainable_variables, nets[1].trainable_variables):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-5)
    applied = 2 * (epochs * minibatches - skipped)  # two calls
    assert [int(t.optimizer.iterations.numpy()) for t in trainers] == [applied, applied]
    assert trainers[1]._update_steps.experimental_get_tracing_count() == 1  # the second call reused the graph


def test_minibatch_loop_in_graph_is_refused_with_several_replicas():
    class TwoReplicas:  # the refusal comes before the strategy is used
        num_replicas_in_sync = 2

    with pytest.raises(ValueError, match="minibatch_loop_in_graph works on one device only"):
        VTraceTrainer(ActorCriticNetwork(2, (4, 1), "float32", torso="mlp"), create_optimizer(10),
                      strategy=TwoReplicas(), minibatch_loop_in_graph=True)


def test_centred_advantages_remove_the_shared_push_on_sampled_actions():
    """Acting with the learner's own policy (rho = 1), the clipped surrogate is minus the mean of the
    normalised advantages: centred it is zero, scaled only it is their mean over their deviation."""
    import tensorflow as tf

    from learner.agents.vtrace.training import VTraceLoss
    from learner.networks import EnvOutput
    rng = np.random.default_rng(3)
    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp")
    unrolls = {k: tf.constant(v) for k, v in random_unrolls(rng, 4, 6, (4, 1), "float32", 3, agent.state_size).items()}
    outputs, _ = agent.unroll(unrolls["prev_action"], EnvOutput(unrolls["reward"], unrolls["first"],
                                                                unrolls["observation"]), unrolls["core_state"][0])
    on_policy = {**unrolls, "behaviour_logits": outputs.policy_logits,
                 "reward": unrolls["reward"] + 3.0}  # a shared offset the values have not learnt
    centred = VTraceLoss(normalize_advantages=True, center_advantages=True, clip_epsilon=0.1)(agent, on_policy)
    scaled = VTraceLoss(normalize_advantages=True, clip_epsilon=0.1)(agent, on_policy)
    assert abs(centred[1]["loss/policy"].numpy()) < 1e-5
    assert scaled[1]["loss/policy"].numpy() < -0.5  # advantages mostly positive: a push of size ~1


def test_a_decaying_entropy_cost_weighs_the_entropy_by_the_share_of_the_runs_gradient_steps_taken():
    """With entropy_decay='linear' the bonus's weight goes from entropy_cost to final_entropy_cost over
    the trainer's num_training_steps, one optimizer step at a time; the other terms do not move with it."""
    import tensorflow as tf

    from learner.agents.vtrace.training import VTraceLoss
    rng = np.random.default_rng(5)
    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp")
    unrolls = random_unrolls(rng, 4, 6, (4, 1), "float32", 3, agent.state_size)
    loss = VTraceLoss(entropy_cost=0.01, entropy_decay="linear", final_entropy_cost=0.002)
    tensors = {k: tf.constant(v) for k, v in unrolls.items()}
    (start, start_metrics, _), (half, half_metrics, _) = (loss(agent, tensors, p) for p in (0.0, 0.5))
    # entropy_loss is minus the entropy: the total moves by the change of weight times it, and only by that.
    np.testing.assert_allclose(float(half - start), (0.006 - 0.01) * float(start_metrics["loss/entropy"]),
                               rtol=1e-4, atol=1e-7)
    assert float(half_metrics["loss/entropy_cost"]) == pytest.approx(0.006)
    assert float(VTraceLoss(entropy_cost=0.01)(agent, tensors, 0.5)[1]["loss/entropy_cost"]) == pytest.approx(0.01)
    trainer = VTraceTrainer(agent, keras.optimizers.SGD(1e-3), loss=loss, num_training_steps=4)
    weights = [float(trainer.update(unrolls)["loss/entropy_cost"]) for _ in range(6)]
    np.testing.assert_allclose(weights, [0.01, 0.008, 0.006, 0.004, 0.002, 0.002], rtol=1e-5)
    with pytest.raises(ValueError, match="VTraceLoss.entropy_decay 'cosine'.*'linear'"):
        VTraceLoss(entropy_decay="cosine")
    with pytest.raises(ValueError, match="final_entropy_cost"):
        VTraceLoss(entropy_decay="linear", final_entropy_cost=-0.1)


def test_an_entropy_floor_weighs_only_the_shortfall_below_it_and_raises_a_narrow_policys_entropy():
    """entropy_floor: the loss grows by entropy_floor_cost x (floor - entropy) where the policy's mean
    entropy is below the floor, not at all above it; gradient steps on that term alone widen the policy."""
    import tensorflow as tf

    from learner.agents.vtrace.training import VTraceLoss
    rng = np.random.default_rng(11)
    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp")
    unrolls = random_unrolls(rng, 4, 6, (4, 1), "float32", 3, agent.state_size)
    tensors = {k: tf.constant(v) for k, v in unrolls.items()}
    plain, metrics, _ = VTraceLoss(entropy_cost=0.0)(agent, tensors)
    entropy = -float(metrics["loss/entropy"])
    assert 0.5 < entropy < np.log(3)
    below = VTraceLoss(entropy_cost=0.0, entropy_floor=np.log(3), entropy_floor_cost=2.0)(agent, tensors)[0]
    np.testing.assert_allclose(float(below - plain), 2.0 * (np.log(3) - entropy), rtol=1e-4)
    above = VTraceLoss(entropy_cost=0.0, entropy_floor=0.5, entropy_floor_cost=2.0)(agent, tensors)[0]
    assert float(above) == pytest.approx(float(plain))
    with pytest.raises(ValueError, match="entropy_floor_cost"):
        VTraceLoss(entropy_floor_cost=-1.0)
    # The floor's term alone (no policy, baseline or entropy terms) raises the entropy step by step.
    floor_only = VTraceLoss(entropy_cost=0.0, baseline_cost=0.0, entropy_floor=np.log(3), entropy_floor_cost=1.0)
    optimizer = keras.optimizers.SGD(0.5)
    entropies = []
    for _ in range(3):
        with tf.GradientTape() as tape:
            total, metrics, _ = floor_only(agent, tensors)
            pg = metrics["loss/policy"]
            objective = total - pg  # the floor's term only
        entropies.append(-float(metrics["loss/entropy"]))
        grads = tape.gradient(objective, agent.trainable_variables)
        optimizer.apply_gradients([(g, v) for g, v in zip(grads, agent.trainable_variables) if g is not None])
    assert entropies[0] < entropies[1] < entropies[2]


def test_a_batch_advantage_scale_is_the_whole_batchs_deviation_under_the_stored_values_in_every_minibatch():
    """advantage_scale='batch': the deviation of the advantages the behaviour values give (rho = 1,
    lambda-returns by hand here) rides along the batch, and the loss divides by it instead of the
    minibatch's own deviation, so the policy term scales as 1 / that deviation."""
    import tensorflow as tf

    from learner.agents.vtrace.training import ADVANTAGE_SCALE, VTraceLoss
    rng = np.random.default_rng(11)
    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp")
    batch = random_unrolls(rng, 4, 6, (4, 1), "float32", 3, agent.state_size)
    batch["terminated"][:] = batch["truncated"][:] = False
    loss = VTraceLoss(discount=0.9, lambda_=0.8, normalize_advantages=True, advantage_scale="batch")
    scaled = loss.with_batch_scale(batch)
    values, rewards = batch["behaviour_value"], batch["reward"]
    vs = values.astype(np.float64).copy()  # vs[T] = V[T], the bootstrap
    for t in reversed(range(6)):
        delta = rewards[t + 1] + 0.9 * values[t + 1] - values[t]
        vs[t] = values[t] + delta + 0.9 * 0.8 * (vs[t + 1] - values[t + 1])
    advantages = rewards[1:] + 0.9 * vs[1:] - values[:-1]
    assert scaled[ADVANTAGE_SCALE].shape == (7, 4)
    np.testing.assert_allclose(scaled[ADVANTAGE_SCALE], advantages.std(), rtol=1e-5)
    assert VTraceLoss(normalize_advantages=True).with_batch_scale(batch) is batch  # 'minibatch': nothing added

    def policy_loss(scale, kind="batch"):
        tensors = {k: tf.constant(v) for k, v in {**batch, ADVANTAGE_SCALE: np.full((7, 4), scale, np.float32)}.items()}
        return float(VTraceLoss(normalize_advantages=True, advantage_scale=kind)(agent, tensors)[1]["loss/policy"])
    assert policy_loss(0.5) == pytest.approx(4 * policy_loss(2.0), rel=1e-4)
    assert policy_loss(0.5, "minibatch") == pytest.approx(policy_loss(2.0, "minibatch"))  # the field is not read
    for in_graph in (False, True):
        trainer = VTraceTrainer(agent, create_optimizer(10), loss=loss, minibatch_loop_in_graph=in_graph)
        metrics = trainer.train(batch, epochs=2, minibatches=2, rng=np.random.default_rng(0))
        assert np.isfinite(metrics["loss/total"]) and metrics["update_applied"]
    with pytest.raises(ValueError, match="VTraceLoss.advantage_scale 'running'.*'batch'"):
        VTraceLoss(advantage_scale="running")


def test_scaled_rewards_are_the_same_whatever_the_reward_scale_and_checkpointed():
    """With `scale_rewards` the stored and fed rewards are the raw ones over the running deviation of the
    discounted return: a game scoring 1,000 per event trains on what a game scoring 1 does."""
    from learner.agents import VTraceAgent
    from tests.learner.agents.test_contract import first_batch, make

    stored = {}
    for reward in (1.0, 1000.0):
        agent, pipeline = make("VTraceAgent", scale_rewards=True)
        stored[reward] = first_batch(agent, pipeline, np.random.default_rng(3), reward=reward)["reward"]
        assert "reward_scaler" in agent.trackables()
        agent.data.close()
    np.testing.assert_allclose(stored[1000.0], stored[1.0], rtol=1e-5)
    # The first step's returns all agree (deviation 0): clipped at 10. Later ones vary with the episodes'
    # lengths, so their deviation scales a constant reward to something other than itself.
    np.testing.assert_array_equal(stored[1.0][0], 10.0)
    assert (0.0 < stored[1.0][1:]).all() and (stored[1.0][1:] < 10.0).all() and not np.allclose(stored[1.0][1:], 1.0)
    plain, pipeline = make("VTraceAgent")
    assert (first_batch(plain, pipeline, np.random.default_rng(3), reward=1000.0)["reward"] == 1000.0).all()
    assert "reward_scaler" not in plain.trackables() and isinstance(plain, VTraceAgent)
    plain.data.close()
