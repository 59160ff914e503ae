"""`jit_compile=True` (XLA) must compute the same update as the default graph mode."""
import keras
import numpy as np

from learner.agents.r2d2.training import R2D2Trainer
from learner.agents.vtrace.training import VTraceTrainer
from learner.networks import ActorCriticNetwork, DuelingQNetwork
from tests.learner.agents.vtrace.test_training import random_unrolls


def copy_weights(source, target):
    for t, s in zip(target.variables, source.variables):
        t.assign(s.numpy())


def sgd():
    # Plain SGD makes the new weights a linear function of the gradients, so gradients equal to
    # float rounding give weights equal to float rounding. Adam's first steps move every weight
    # by about +-lr whatever its gradient's size, so a gradient near zero that rounds differently
    # under XLA can move its weight by up to 2 lr (seen: 8e-5 in one of 4096 weights).
    return keras.optimizers.SGD(1e-2)


def assert_same_weights(a, b):
    for x, y in zip(a.trainable_variables, b.trainable_variables):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-4, atol=1e-5)


def test_vtrace_update_is_the_same_with_xla():
    rng = np.random.default_rng(0)
    nets = [ActorCriticNetwork(3, (36, 36, 2), "uint8", lstm_units=8) for _ in range(2)]
    batch = random_unrolls(rng, 3, 5, (36, 36, 2), "uint8", 3, nets[0].state_size)
    trainers = [VTraceTrainer(net, sgd(), jit_compile=jit)
                for net, jit in zip(nets, (False, True))]
    copy_weights(nets[0], nets[1])
    before = [v.numpy().copy() for v in nets[1].trainable_variables]
    for _ in range(2):
        plain, xla = (trainer.update(batch) for trainer in trainers)
        for key in ("loss/total", "loss/policy", "loss/baseline", "loss/entropy", "gradient_norm"):
            np.testing.assert_allclose(xla[key], plain[key], rtol=1e-4, atol=1e-6)
        assert xla["update_applied"] and plain["update_applied"]
    assert_same_weights(*nets)
    assert any(not np.array_equal(b, v.numpy()) for b, v in zip(before, nets[1].trainable_variables))


def test_r2d2_update_is_the_same_with_xla():
    rng = np.random.default_rng(1)
    burn_in, length = 2, 4
    sequences = random_unrolls(rng, 3, burn_in + length, (5,), "float32", 4, 2 * 8)
    sequences["core_state"] = sequences["core_state"][0]
    weights = rng.random(3).astype(np.float32)
    nets = [[DuelingQNetwork(4, (5,), "float32", torso="mlp", lstm_units=8, head_hidden_units=16)
             for _ in range(2)] for _ in range(2)]
    copy_weights(nets[0][0], nets[1][0])  # the trainers copy online to target
    trainers = [R2D2Trainer(online, target, sgd(), burn_in=burn_in, n_steps=2, jit_compile=jit)
                for (online, target), jit in zip(nets, (False, True))]
    results = [[trainer.update(sequences, weights) for _ in range(2)] for trainer in trainers]
    for (plain_metrics, plain_priorities), (xla_metrics, xla_priorities) in zip(*results):
        np.testing.assert_allclose(xla_metrics["loss/td"], plain_metrics["loss/td"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(xla_priorities, plain_priorities, rtol=1e-4, atol=1e-6)
        assert xla_metrics["update_applied"]
    assert_same_weights(nets[0][0], nets[1][0])


def test_vtrace_minibatch_loop_in_graph_is_the_same_under_xla():
    """The in-graph loop compiled by XLA (the GPU learner's setting) makes the Python loop's steps."""
    rng = np.random.default_rng(2)
    nets = [ActorCriticNetwork(3, (4, 1), "float32", torso="mlp", lstm_units=8) for _ in range(2)]
    copy_weights(nets[0], nets[1])
    trainers = [VTraceTrainer(nets[0], sgd()),
                VTraceTrainer(nets[1], sgd(), jit_compile=True, minibatch_loop_in_graph=True)]
    batch = random_unrolls(rng, 4, 5, (4, 1), "float32", 3, nets[0].state_size)
    plain, xla = (trainer.train(batch, 2, 2, np.random.default_rng(5)) for trainer in trainers)
    for key in ("loss/total", "loss/policy", "gradient_norm", "per_unroll/errors"):
        np.testing.assert_allclose(xla[key], plain[key], rtol=1e-4, atol=1e-5, err_msg=key)
    assert xla["update_applied"] and xla["skipped_steps"] == 0
    assert_same_weights(*nets)
