import numpy as np
import pytest
import tensorflow as tf

from learner.networks import ActorCriticNetwork, DuelingQNetwork, EnvOutput


def test_unroll_equals_step_by_step_calls_with_state_reset_at_episode_starts():
    tf.random.set_seed(0)
    agent = ActorCriticNetwork(3, (4, 1), "float32", torso="mlp", lstm_units=8)
    T, B = 6, 2
    rng = np.random.default_rng(0)
    obs = tf.constant(rng.normal(size=(T, B, 4, 1)), tf.float32)
    rewards = tf.constant(rng.normal(size=(T, B)), tf.float32)
    first = tf.constant([[True, True], [False, False], [False, True], [False, False], [True, False],
                         [False, False]])
    prev_actions = tf.constant(rng.integers(0, 3, (T, B)), tf.int32)
    state0 = tf.constant(rng.normal(size=(B, agent.state_size)), tf.float32)

    unrolled, final_state = agent.unroll(prev_actions, EnvOutput(rewards, first, obs), state0)
    state, logits = state0, []
    for t in range(T):
        out, state = agent(prev_actions[t], EnvOutput(rewards[t], first[t], obs[t]), state)
        logits.append(out.policy_logits)
    np.testing.assert_allclose(unrolled.policy_logits.numpy(), np.stack(logits), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(final_state.numpy(), state.numpy(), rtol=1e-5, atol=1e-5)


def test_episode_start_makes_the_output_independent_of_the_old_state():
    agent = ActorCriticNetwork(2, (4, 1), "float32", torso="mlp", lstm_units=4)
    env_output = EnvOutput(tf.zeros([1]), tf.constant([True]), tf.ones([1, 4, 1]))
    a, _ = agent(tf.constant([1]), env_output, tf.zeros([1, 8]))
    b, _ = agent(tf.constant([0]), env_output, tf.fill([1, 8], 5.0))
    np.testing.assert_allclose(a.policy_logits.numpy(), b.policy_logits.numpy(), rtol=1e-6)


@pytest.mark.parametrize("torso, num_convs", [("nature_cnn", 3), ("impala_resnet", 15)])
def test_image_torsos(torso, num_convs):
    agent = ActorCriticNetwork(6, (84, 84, 4), "uint8", torso=torso)
    convs = [v for v in agent.trainable_variables if len(v.shape) == 4]
    assert len(convs) == num_convs
    out, state = agent(tf.zeros([5], tf.int32), EnvOutput(tf.zeros([5]), tf.zeros([5], tf.bool),
                                                         tf.zeros([5, 84, 84, 4], tf.uint8)), agent.initial_state(5))
    assert out.policy_logits.shape == (5, 6) and out.baseline.shape == (5,) and state.shape == (5, 0)


def test_stacked_colour_frames_reach_the_convolutions_as_one_input_of_channels_times_stack():
    agent = ActorCriticNetwork(9, (72, 96, 3, 2), "uint8", torso="nature_cnn")
    first_conv = next(v for v in agent.trainable_variables if len(v.shape) == 4)
    assert first_conv.shape[2] == 6  # 3 colours x 2 frames
    frames = np.random.default_rng(0).integers(0, 256, (2, 72, 96, 3, 2), np.uint8)
    env_outputs = EnvOutput(tf.zeros([2]), tf.zeros([2], tf.bool), tf.constant(frames))
    out, _ = agent(tf.zeros([2], tf.int32), env_outputs, agent.initial_state(2))
    older_changed = frames.copy()
    older_changed[..., 0] = 255 - older_changed[..., 0]
    changed, _ = agent(tf.zeros([2], tf.int32), env_outputs._replace(observation=tf.constant(older_changed)),
                       agent.initial_state(2))
    assert out.policy_logits.shape == (2, 9) and not np.allclose(out.policy_logits, changed.policy_logits)


def test_image_torso_on_vector_observations_names_the_fix():
    with pytest.raises(ValueError, match="torso = 'mlp'"):
        ActorCriticNetwork(2, (4, 1), "float32", torso="nature_cnn")


def test_dueling_q_network_advantages_average_to_zero_around_the_value():
    agent = DuelingQNetwork(4, (84, 84, 4), "uint8", lstm_units=16, head_hidden_units=8)
    q, state = agent(tf.zeros([2], tf.int32), EnvOutput(tf.zeros([2]), tf.ones([2], tf.bool),
                                                       tf.zeros([2, 84, 84, 4], tf.uint8)), agent.initial_state(2))
    value = agent._value(agent._core_step(agent._torso_outputs(tf.zeros([2, 84, 84, 4], tf.uint8)),
                                          tf.zeros([2], tf.int32),
                                          EnvOutput(tf.zeros([2]), tf.ones([2], tf.bool), None),
                                          agent.initial_state(2))[0])
    assert q.shape == (2, 4) and state.shape == (2, 32)
    np.testing.assert_allclose(tf.reduce_mean(q, -1).numpy(), value[:, 0].numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("torso, obs_shape, obs_dtype", [("nature_cnn", (84, 84, 4), "uint8"),
                                                         ("mlp", (4,), "float32")])
def test_orthogonal_initialization_starts_the_policy_near_uniform(torso, obs_shape, obs_dtype):
    rng = np.random.default_rng(0)
    if obs_dtype == "uint8":
        obs = rng.integers(0, 255, (32, *obs_shape), dtype=np.uint8)
    else:
        obs = rng.normal(size=(32, *obs_shape)).astype(np.float32)
    inputs = (tf.zeros([32], tf.int32), EnvOutput(tf.zeros([32]), tf.zeros([32], tf.bool), tf.constant(obs)))
    net = ActorCriticNetwork(6, obs_shape, obs_dtype, torso=torso, initialization="orthogonal")
    outputs, _ = net(*inputs, net.initial_state(32))
    probs = tf.nn.softmax(outputs.policy_logits).numpy()
    entropy = -np.sum(probs * np.log(probs), axis=-1)
    assert np.min(entropy) > 0.999 * np.log(6)
    kernel = net._policy.kernel.numpy()
    assert np.linalg.norm(kernel, 2) == pytest.approx(0.01, rel=1e-3)  # orthogonal columns scaled by the gain


def test_unknown_initialization_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="unknown initialization 'he'.*orthogonal"):
        ActorCriticNetwork(2, (4,), "float32", initialization="he")


def test_every_layer_draws_its_own_orthogonal_weights():
    """A Keras initializer fixes its seed when made, so a shared one gave same-shaped kernels equal
    weights (the IMPALA ResNet's residual convolutions) or correlated ones (the Nature CNN's)."""
    net = ActorCriticNetwork(6, (84, 84, 4), "uint8", torso="impala_resnet", initialization="orthogonal")
    kernels = [v.numpy().ravel() for v in net.trainable_variables if v.shape == (3, 3, 32, 32)]
    assert len(kernels) == 9
    for i in range(len(kernels)):
        for j in range(i):
            assert abs(np.corrcoef(kernels[i], kernels[j])[0, 1]) < 0.1
    cnn = ActorCriticNetwork(6, (84, 84, 4), "uint8", torso="nature_cnn", initialization="orthogonal")
    conv2, conv3 = (v.numpy().reshape(-1, 64)[:512].ravel() for v in cnn.trainable_variables
                    if v.shape in ((4, 4, 32, 64), (3, 3, 64, 64)))
    assert abs(np.corrcoef(conv2, conv3)[0, 1]) < 0.1


def test_the_mlp_activation_is_the_one_configured_and_an_unknown_one_is_refused():
    from learner.networks import ContinuousActorCriticNetwork

    network = ContinuousActorCriticNetwork(2, (3,), "float32", mlp_hidden_sizes=(8,), mlp_activation="relu",
                                           normalize_observations=False)
    torso_outputs = network._torso_outputs(tf.constant(np.random.default_rng(0).normal(size=(64, 3)), tf.float32))
    policy_features, _ = network._split_features(torso_outputs)
    assert float(tf.reduce_min(policy_features)) == 0.0  # ReLU: some units cut to zero, none below
    with pytest.raises(ValueError, match="unknown mlp_activation 'gelu'; use one of"):
        ContinuousActorCriticNetwork(2, (3,), "float32", mlp_activation="gelu")
