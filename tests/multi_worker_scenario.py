"""Run by tests/learner/test_strategy.py inside a private network namespace: two
learner processes training one V-trace policy with MultiWorkerMirroredStrategy
(TF_CONFIG on loopback), each serving its own CartPole actor, to the same frame
budget. Prints one JSON line: exit codes, updates and how far the weights differ."""
import json
import os
import sys
import time

import numpy as np
import tensorflow as tf

from tests import processes

UPDATES = 30
FRAMES_PER_UPDATE = 8 * 20  # classic_vtrace.gin: batch 8 x unroll 20, one frame per step


def main(root):
    workers = [f"127.0.0.1:{processes.free_loopback_port()}" for _ in range(2)]
    learners, actors, logdirs = [], [], []
    bindings = ["create_strategy.kind='multi_worker'", "reporting.progress_interval_s=1",
                f"training.total_environment_frames={UPDATES * FRAMES_PER_UPDATE}"]
    try:
        for index in range(2):
            logdir = os.path.join(root, f"learner{index}")
            os.makedirs(logdir)
            os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers},
                                                  "task": {"type": "worker", "index": index}})
            learners.append(processes.start_learner(logdir, "classic_vtrace.gin", bindings))
            logdirs.append(logdir)
        del os.environ["TF_CONFIG"]  # actors are not part of the TensorFlow cluster
        for logdir, learner in zip(logdirs, learners):
            address = processes.wait_for_address(logdir, learner, timeout_s=300)
            actors += processes.start_actors(logdir, "classic_vtrace.gin", address, 1, ["run_actor.num_envs=4"])
        deadline = time.monotonic() + 400
        while any(p.poll() is None for p in learners) and time.monotonic() < deadline:
            time.sleep(0.5)
        codes = [p.poll() for p in learners]
    finally:
        processes.stop(actors + learners)
    readers = [tf.train.load_checkpoint(os.path.join(d, "checkpoints")) for d in logdirs]
    # Every weight, optimizer slot and counter (the torso's weights appear under the optimizer), less
    # the frames each learner's own actors stepped, which differ by design.
    names = [n for n in readers[0].get_variable_to_shape_map()
             if n.endswith("VARIABLE_VALUE") and not n.startswith("environment_frames_stepped")]
    difference = max(float(np.max(np.abs(readers[0].get_tensor(n) - readers[1].get_tensor(n)))) for n in names)
    magnitude = max(float(np.max(np.abs(readers[0].get_tensor(n)))) for n in names)
    iterations = [int(r.get_tensor("optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE")) for r in readers]
    print(json.dumps({"exit_codes": codes, "iterations": iterations, "weights_compared": len(names),
                      "largest_difference": difference, "largest_weight": magnitude,
                      "learner_log_tail": processes.learner_output(logdirs[1])[-1500:] if codes[1] else ""}))


if __name__ == "__main__":
    main(sys.argv[1])
