"""Run by tests/learner/test_strategy.py in a fresh interpreter (logical CPU devices
must be set before TensorFlow's first op): V-trace updates on a MirroredStrategy of
two CPU replicas against the same updates on one device, from the same weights. The batches
are mixed ones: fresh rows first (all on the first replica), replayed ones with loss weights
below 1, and CLEAR's terms on, so every weighted mean must combine exactly across replicas. The
advantages are normalised by the whole batch's deviation (`advantage_scale='batch'`), which the batch
carries to every replica's share: normalising by each share's own deviation could not match one device."""
import json

import numpy as np

from learner.agents.vtrace.training import VTraceLoss, VTraceTrainer
from learner.data.unroll_replay import SOURCE_KINDS
from learner.networks import ActorCriticNetwork
from learner.optimizers import create_optimizer
from learner.strategy import create_strategy
from tests.learner.agents.vtrace.test_training import random_unrolls

LOSS = dict(policy_cloning_cost=0.5, value_cloning_cost=0.5, normalize_advantages=True, advantage_scale="batch",
            sources=SOURCE_KINDS)
strategy = create_strategy("mirrored", cpu_replicas=2)
with strategy.scope():
    mirrored_net = ActorCriticNetwork(3, (4,), "float32", torso="mlp", lstm_units=8)
    mirrored = VTraceTrainer(mirrored_net, create_optimizer(100, learning_rate=1e-2), strategy=strategy,
                             loss=VTraceLoss(**LOSS))
try:
    VTraceTrainer(mirrored_net, create_optimizer(100), strategy=strategy, jit_compile=True)
    jit_error = ""
except ValueError as e:
    jit_error = str(e)
single_net = ActorCriticNetwork(3, (4,), "float32", torso="mlp", lstm_units=8)
for target, source in zip(single_net.variables, mirrored_net.variables):
    target.assign(source.numpy())
single = VTraceTrainer(single_net, create_optimizer(100, learning_rate=1e-2), loss=VTraceLoss(**LOSS))

def replicas(variable):
    """The per-device copies of a (Keras-wrapped) mirrored variable."""
    return getattr(variable, "value", variable).values


rng = np.random.default_rng(0)
errors_difference = 0.0
for _ in range(5):
    batch = random_unrolls(rng, 4, 6, (4,), "float32", 3, mirrored_net.state_size)
    batch["source"] = np.repeat(np.array([0, 0, 1, 2], np.int32)[None], 7, 0)  # fresh, fresh, uniform, prioritised
    batch["sample_weight"] = np.repeat(np.array([1, 1, 1, rng.uniform(0.2, 0.9)], np.float32)[None], 7, 0)
    m_metrics, s_metrics = mirrored.update(batch), single.update(batch)
    errors_difference = max(errors_difference, float(np.max(np.abs(m_metrics["per_unroll/errors"]
                                                                  - s_metrics["per_unroll/errors"]))))
metric_names = ("loss/total", "loss/policy_cloning", "loss/value_cloning", "source/queue_rho", "source/uniform_rho",
                "source/prioritised_steps")
metrics_difference = max(abs(float(m_metrics[k]) - float(s_metrics[k])) for k in metric_names)
largest_difference = max(float(np.max(np.abs(m.numpy() - s.numpy())))
                         for m, s in zip(mirrored_net.trainable_variables, single_net.trainable_variables))
replica_difference = max(float(np.max(np.abs(replicas(v)[0].numpy() - replicas(v)[1].numpy())))
                         for v in mirrored_net.trainable_variables)
moved = max(float(np.max(np.abs(v.numpy()))) for v in mirrored_net.trainable_variables)
print(json.dumps({"replicas": strategy.num_replicas_in_sync,
                  "devices": sorted({replicas(v)[i].device for v in mirrored_net.trainable_variables for i in (0, 1)}),
                  "largest_difference": largest_difference, "replica_difference": replica_difference,
                  "loss_mirrored": float(m_metrics["loss/total"]), "loss_single": float(s_metrics["loss/total"]),
                  "iterations": int(mirrored.optimizer.iterations.numpy()), "jit_error": jit_error,
                  "errors_difference": errors_difference, "metrics_difference": metrics_difference,
                  "cloning": float(s_metrics["loss/policy_cloning"])}))
