"""The learner process: the gRPC service, the inference thread, the training thread (training_loop.py),
checkpoints and progress (progress.py), wired together and supervised."""
import logging
import os
import sys
import threading
import time

import gin
import keras
import tensorflow as tf

from learner.agents import AgentContext
from learner.agents.base import action_kind, agents_that
from learner.batcher import InferenceBatcher
from learner.checkpoints import Checkpointer
from learner.devices import select_device
from learner.frame_counter import FrameCounter
from learner.inference import InferencePipeline
from learner.progress import EpisodeLog, Progress
from learner.service import LearnerServicer, start_server
from learner.settings import InferenceSettings, ReportingSettings, ServiceSettings, TrainingSettings
from learner.slots import SlotAllocator
from learner.strategy import create_strategy
from learner.tracking import WandbTracker
from learner.training_loop import TrainingLoop
from seed import envs as seed_envs
from seed.auth import read_auth_token, server_credentials
from seed.gin_setup import save_operative_config
from seed.process import CONSOLE

log = logging.getLogger(__name__)

def set_tf_threads(intra_op: int, inter_op: int) -> None:
    """Caps TensorFlow's thread pools (0: TensorFlow's choice, every core)."""
    try:
        if intra_op:
            tf.config.threading.set_intra_op_parallelism_threads(intra_op)
        if inter_op:
            tf.config.threading.set_inter_op_parallelism_threads(inter_op)
    except RuntimeError as e:  # TensorFlow fixes its pools at its first op
        log.warning("could not set TensorFlow's thread counts (%s); they stay at their defaults", e)


def run_learner(logdir: str, address: str, stop: threading.Event, training: TrainingSettings | None = None,
                inference: InferenceSettings | None = None, service: ServiceSettings | None = None,
                reporting: ReportingSettings | None = None) -> int:
    """Serves actors and trains the agent until the frame budget or `stop`; returns a process exit code.
    The settings groups (learner/settings.py) come from gin when not given."""
    training, inference = training or TrainingSettings(), inference or InferenceSettings()
    service, reporting = service or ServiceSettings(), reporting or ReportingSettings()
    set_tf_threads(inference.tf_intra_op_threads, inference.tf_inter_op_threads)
    device_text = select_device(inference.device)  # before any other TensorFlow op
    strategy = create_strategy()
    auth_token = read_auth_token(service.auth_token_env, service.auth_token_file)
    credentials = server_credentials(service.tls_cert_file, service.tls_key_file)
    address_file = os.path.join(logdir, "learner_address")
    if os.path.exists(address_file):
        os.remove(address_file)  # a stale address from an earlier run must not be read
    if training.seed is not None:
        keras.utils.set_random_seed(training.seed)  # TensorFlow's, numpy's and Python's: weights, sampling, shuffles
    agent = training.agent
    spec = seed_envs.env_spec()
    log.info("%s on %s (%d frames per agent step); inference and training on %s", agent.__name__, spec.describe(),
             spec.frames_per_step, device_text, extra=CONSOLE)
    if strategy is not tf.distribute.get_strategy() and not agent.supports_strategy:
        supported = agents_that(lambda cls: cls.supports_strategy)
        raise ValueError(f"create_strategy.kind: {agent.__name__} trains on one device only; "
                         f"distributed training supports {supported}")
    kind = action_kind(spec)
    if kind not in agent.action_kinds:
        takers = agents_that(lambda cls: kind in cls.action_kinds)
        raise ValueError(f"training.agent: {agent.__name__} acts in {' or '.join(agent.action_kinds)} "
                         f"action spaces; this env has {spec.action.describe()} (agents for them: "
                         f"{takers or 'none yet'})")
    agent = agent(AgentContext(spec, training.num_stacked_frames, inference.max_env_slots, training.horizon_frames,
                               strategy))
    # The agent's data source wakes its waiters (training, and inference on a full queue) only when closed.
    threading.Thread(target=lambda: (stop.wait(), agent.data.close()), name="close-data-on-stop", daemon=True).start()
    frames = FrameCounter(spec.frames_per_step)
    checkpointer = Checkpointer(os.path.join(logdir, "checkpoints"), sidecars=agent.data.checkpoint_sidecars(),
                                before_save=frames.before_save, **frames.trackables(), **agent.trackables())
    checkpointer.check_disk()
    resumed = checkpointer.restore_latest()
    if resumed:
        frames.resume(EpisodeLog.last_env_frames(os.path.join(logdir, "episodes.csv")))
        log.info("resuming at %d environment frames, %d gradient steps", frames.trained_frames,
                 int(agent.optimizer.iterations.numpy()) if agent.optimizer else 0, extra=CONSOLE)

    pipeline = InferencePipeline(agent, spec, max_slots=inference.max_env_slots,
                                 num_stacked_frames=training.num_stacked_frames,
                                 reward_clipping=training.reward_clipping, frames=frames)
    # budget_reached tells a launcher a finished run from a stopped one (both exit 0).
    checkpointer.extra_summary = lambda: {"environment_frames_stepped": frames.stepped_frames,
                                          "budget_reached": training_loop.budget_reached.is_set()}
    slots = SlotAllocator(inference.max_env_slots)

    def release(slot_ids):
        pipeline.release(slot_ids)
        slots.free(slot_ids)

    batcher = InferenceBatcher(pipeline, release, inference.batch_size, inference.batch_timeout_ms)
    training_loop = TrainingLoop(agent, checkpointer, frames, training.total_environment_frames,
                                 training.checkpoint_interval_s, stop, training.max_consecutive_skipped_updates)
    servicer = LearnerServicer(spec, batcher, slots, auth_token)
    progress = Progress(logdir, total_frames=training.total_environment_frames, frames_per_step=spec.frames_per_step,
                        interval_s=reporting.progress_interval_s,
                        counters=(training_loop.counters, batcher.counters, pipeline.counters),
                        metrics=(agent.data.metrics, servicer.counters, training_loop.metrics),
                        episodes=pipeline.take_finished_episodes, describe=agent.data.describe)
    save_operative_config(logdir, "learner")
    if reporting.wandb_project:
        progress.tracker = WandbTracker(logdir, reporting.wandb_project, reporting.wandb_entity,
                                        reporting.wandb_run_name, reporting.wandb_tags,
                                        gin.operative_config_str())

    batcher.start()
    server = start_server(servicer, address, service.max_actors, service.max_message_bytes, credentials,
                          service.keepalive_s, service.keepalive_timeout_s)
    host = address.rsplit(":", 1)[0]
    _write_atomically(os.path.join(logdir, "learner_address"), f"{host}:{server.seed_port}\n")
    log.info("listening on %s:%d; budget %s env frames", host, server.seed_port,
             f"{training.total_environment_frames:,}", extra=CONSOLE)
    training_loop.thread.start()
    return _supervise(stop, reporting.progress_interval_s, progress, training_loop, batcher, server, servicer,
                      checkpointer, service.actor_idle_timeout_s)


def show(line: str, stop: threading.Event) -> None:
    """Prints a progress line. Once stdout's reader has gone (`... | head`, a closed terminal) the run
    stops as on Ctrl-C, with a checkpoint, as run_local.sh does when its own output closes; nohup or
    a file keeps a run going without a reader."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        log.warning("stdout was closed: stopping as on Ctrl-C (a checkpoint is saved)")
        stop.set()


def _write_atomically(path: str, text: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def _supervise(stop, progress_interval_s, progress, training, batcher, server, servicer, checkpointer,
               actor_idle_timeout_s) -> int:
    """Main thread: progress line until the budget, a signal or a failure; then an orderly stop."""
    exit_code = 0
    next_report = time.monotonic() + progress_interval_s
    while not stop.is_set():
        stop.wait(0.2)
        if training.budget_reached.is_set():
            log.info("reached the frame budget", extra=CONSOLE)
            break
        if training.error is not None or batcher.error is not None:
            log.error("stopping: %s", training.error or batcher.error)
            exit_code = 1
            break
        servicer.close_idle_streams(actor_idle_timeout_s)
        if time.monotonic() >= next_report:
            show(progress.report(), stop)
            next_report += progress_interval_s
            if next_report <= time.monotonic():  # after a pause (SIGSTOP, a suspended laptop): no catch-up burst
                next_report = time.monotonic() + progress_interval_s
    stop.set()
    training.thread.join()
    batcher.stop()
    server.stop(grace=1.0).wait()
    show(progress.report(), stop)
    if training.error is None:
        checkpointer.save()
    else:
        log.error("no checkpoint written after the failure; the latest is %s", checkpointer.latest)
    if progress.tracker is not None:
        progress.tracker.close()
    return exit_code
