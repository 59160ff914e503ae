"""Data-parallel training with tf.distribute: which strategy, and how a batch of
unrolls is split across its replicas.

- 'none': one device (TensorFlow's default strategy).
- 'mirrored': MirroredStrategy over this learner's GPUs (or, with
  `cpu_replicas`, that many logical CPU devices: for testing without GPUs).
- 'multi_worker': MultiWorkerMirroredStrategy across learner processes named
  in TF_CONFIG (`cluster.worker`, one entry per learner). Each learner serves
  its own actors and batches its own unrolls; every update averages the
  gradients of all replicas of all learners, so their weights stay identical.
"""
import json
import logging
import os

import gin
import numpy as np
import tensorflow as tf

from seed.settings import require_non_negative

log = logging.getLogger(__name__)

KINDS = ("none", "mirrored", "multi_worker")


@gin.configurable
def create_strategy(kind: str = "none", cpu_replicas: int = 0) -> tf.distribute.Strategy:
    """Call before any TensorFlow op: logical devices and collectives are fixed at the first one.

    Settings:
        `kind`: 'none' (one device, TensorFlow's default strategy), 'mirrored' (this learner's GPUs) or
            'multi_worker' (every learner named in TF_CONFIG); see the module's docstring ('none').
        `cpu_replicas`: logical CPU devices to replicate over instead of the real devices, for testing
            without GPUs (0: the real devices); ignored for 'none'.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown create_strategy.kind {kind!r}; use one of {KINDS}")
    require_non_negative("create_strategy", cpu_replicas=cpu_replicas)  # 0: the real devices
    if kind == "none":
        return tf.distribute.get_strategy()
    devices = None
    if cpu_replicas:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * cpu_replicas)
        devices = [f"/cpu:{i}" for i in range(cpu_replicas)]
    if kind == "mirrored":
        strategy = tf.distribute.MirroredStrategy(devices)
    else:
        if not os.environ.get("TF_CONFIG"):
            raise ValueError("create_strategy.kind = 'multi_worker' needs TF_CONFIG naming every learner "
                             "(cluster.worker) and this one's task index")
        task = json.loads(os.environ["TF_CONFIG"]).get("task", {})
        log.info("multi-worker learner: task %s", task)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    log.info("training on %d replicas (%s)", strategy.num_replicas_in_sync, type(strategy).__name__)
    return strategy


def split_batch(strategy: tf.distribute.Strategy, batch: dict[str, np.ndarray], axis: int = 1):
    """This learner's batch, split along `axis` over its local replicas (equal shares)."""
    if strategy.num_replicas_in_sync == 1:
        return batch
    num_local = len(strategy.extended.worker_devices)
    size = next(iter(batch.values())).shape[axis]
    if size % num_local:
        raise ValueError(f"a batch of {size} unrolls does not split evenly over {num_local} replicas; "
                         f"make VTraceAgent.batch_size a multiple of {num_local}")
    share = size // num_local

    def replica_values(context):
        local = context.replica_id_in_sync_group % num_local
        index = [slice(None)] * (axis + 1)
        index[axis] = slice(local * share, (local + 1) * share)
        return {k: tf.constant(v[tuple(index)]) for k, v in batch.items()}

    return strategy.experimental_distribute_values_from_function(replica_values)
