"""The learner process: the gRPC service, the inference thread, the training thread (training_loop.py),
checkpoints and progress (progress.py), wired together and supervised."""
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence

import gin
import keras
import tensorflow as tf

from learner.agents import AgentContext, VTraceAgent
from learner.agents.base import action_kind, agents_that
from learner.batcher import InferenceBatcher
from learner.checkpoints import Checkpointer
from learner.devices import select_device
from learner.inference import InferencePipeline
from learner.progress import EpisodeLog, Progress
from learner.rewards import check_reward_clipping
from learner.service import LearnerServicer, start_server
from learner.slots import SlotAllocator
from learner.strategy import create_strategy
from learner.tracking import WandbTracker
from learner.training_loop import TrainingLoop
from seed import envs as seed_envs
from seed.auth import read_auth_token, server_credentials
from seed.gin_setup import save_operative_config
from seed.process import CONSOLE
from seed.settings import require_non_negative, require_positive

log = logging.getLogger(__name__)

def set_tf_threads(intra_op: int, inter_op: int) -> None:
    require_non_negative("run_learner", tf_intra_op_threads=intra_op, tf_inter_op_threads=inter_op)  # 0: all cores
    try:
        if intra_op:
            tf.config.threading.set_intra_op_parallelism_threads(intra_op)
        if inter_op:
            tf.config.threading.set_inter_op_parallelism_threads(inter_op)
    except RuntimeError as e:  # TensorFlow fixes its pools at its first op
        log.warning("could not set TensorFlow's thread counts (%s); they stay at their defaults", e)


@gin.configurable(denylist=["logdir", "address", "stop"])
def run_learner(logdir: str, address: str, stop: threading.Event, *, agent=VTraceAgent,
                inference_batch_size: int = 64, batch_timeout_ms: float = 10.0, num_stacked_frames: int = 4,
                reward_clipping: str = "abs_one", total_environment_frames: int = 10_000_000,
                schedule_frames: int | None = None, device: str = "auto",
                max_env_slots: int = 256, max_actors: int = 64, max_message_bytes: int = 64 << 20,
                checkpoint_interval_s: float = 60.0, progress_interval_s: float = 5.0,
                max_consecutive_skipped_updates: int = 100, actor_idle_timeout_s: float = 300.0,
                auth_token_env: str = "SEED_AUTH_TOKEN", auth_token_file: str | None = None,
                tls_cert_file: str | None = None, tls_key_file: str | None = None,
                seed: int | None = None, tf_intra_op_threads: int = 0, tf_inter_op_threads: int = 0,
                wandb_project: str | None = None, wandb_entity: str | None = None,
                wandb_run_name: str | None = None, wandb_tags: Sequence[str] = ()) -> int:
    """Serves actors and trains `agent` until the frame budget or `stop`; returns a process exit code.

    Settings:
        `agent`: the agent to train, any registered in learner/agents/ (@VTraceAgent; also @R2D2Agent, @PPOAgent,
            @SACAgent, and @FixedActionAgent, which answers action 0 and never trains).
        `inference_batch_size`: most env steps per policy call (64); a batch is also complete once every
            connected env is in it.
        `batch_timeout_ms`: longest wait for a full batch after its first request, milliseconds (10); capped
            at one policy call's average duration, and skipped when under 1 ms.
        `num_stacked_frames`: newest frames the learner stacks into each observation (4; 1 in classic_*.gin).
        `reward_clipping`: how the learner clips rewards for training ('abs_one': to [-1, 1];
            'soft_asymmetric': IMPALA's 5 tanh(r / 5), times 0.3 for negative rewards; 'none');
            reported returns stay raw. atari_r2d2.gin sets 'none': R2D2 rescales values instead.
        `total_environment_frames`: the frame budget, in env frames (agent steps x frame_skip) that updates
            account for; the run stops there (10M; 1M in classic_*.gin; --frames N in run_local.sh): V-trace's
            and PPO's fresh frames trained on, R2D2's and SAC's frames inserted into replay.
        `schedule_frames`: the env frames the learning-rate (and PPO's entropy) schedules span (None: the
            budget). Set apart from the budget so that a longer or shorter run learns the same way up to
            its stop: atari_vtrace.gin and atari_r2d2.gin keep 200M, the horizon of their published curves.
        `device`: where inference and training run: 'auto' (a GPU when TensorFlow sees one, else the CPU),
            'cpu', or 'gpu' (refused at start, saying why, when no GPU is usable; run_local.sh --gpu installs
            TensorFlow's CUDA wheels and binds it) ('auto'). The learner says at start which it is.
        `max_env_slots`: most envs connected at once over all actors, each holding a slot of frame stacks,
            core state and a partial unroll (256); an actor whose envs find no free slots is refused.
        `max_actors`: most actor streams at once (64); more are refused with RESOURCE_EXHAUSTED and retry.
        `max_message_bytes`: largest gRPC message either way, bytes (64 MiB).
        `checkpoint_interval_s`: seconds between checkpoints (60), the most training a crash loses. A
            checkpoint took 0.06 s and 20 MB for atari_vtrace.gin and 0.18 s and 69 MB for atari_r2d2.gin on
            the 2-core machine (benchmarks/checkpoint_cost.py): 0.1-0.3 % of the learner's time at 60 s.
            The newest 3 are kept.
        `progress_interval_s`: seconds between progress lines, progress.jsonl records and TensorBoard
            scalars (5).
        `max_consecutive_skipped_updates`: updates in a row with a non-finite loss or gradient after which
            the learner stops with an error and writes no checkpoint over the last good one (100).
        `actor_idle_timeout_s`: seconds an actor may leave the learner waiting before its stream is closed
            and its slots freed (300); time the learner itself spends (back-pressure) does not count.
        `auth_token_env`: environment variable holding the shared auth token when no file is given
            ('SEED_AUTH_TOKEN'); an actor with another token is refused (UNAUTHENTICATED); unset or empty:
            no check.
        `auth_token_file`: file holding the shared auth token, read instead of the variable (None).
        `tls_cert_file`: PEM certificate (chain) the learner presents; with `tls_key_file`, or neither
            (None: plaintext, no TLS).
        `tls_key_file`: PEM private key of `tls_cert_file` (None).
        `seed`: seed of TensorFlow's, numpy's and Python's random numbers: weights, sampling, shuffles
            (None: unseeded).
        `tf_intra_op_threads`: cap on TensorFlow's intra-op thread pool (0: TensorFlow's choice, every
            core), for machines where the actors need cores of their own.
        `tf_inter_op_threads`: cap on TensorFlow's inter-op thread pool (0: TensorFlow's choice).
        `wandb_project`: Weights & Biases project that also gets every progress record (None: off;
            learner/tracking.py, .venv/bin/pip install -e '.[wandb]' in the checkout); a resumed run continues
            the same W&B run.
        `wandb_entity`: W&B entity (user or team) of the run (None: your default).
        `wandb_run_name`: W&B run name (None: the run directory's name).
        `wandb_tags`: W&B tags of the run (no tags).
    """
    check_reward_clipping(reward_clipping)
    require_positive("run_learner", inference_batch_size=inference_batch_size, num_stacked_frames=num_stacked_frames,
                     max_env_slots=max_env_slots, max_actors=max_actors, max_message_bytes=max_message_bytes,
                     checkpoint_interval_s=checkpoint_interval_s, progress_interval_s=progress_interval_s,
                     max_consecutive_skipped_updates=max_consecutive_skipped_updates,
                     actor_idle_timeout_s=actor_idle_timeout_s)
    require_non_negative("run_learner", batch_timeout_ms=batch_timeout_ms,
                         total_environment_frames=total_environment_frames)
    if schedule_frames is not None:
        require_positive("run_learner", schedule_frames=schedule_frames)
    set_tf_threads(tf_intra_op_threads, tf_inter_op_threads)
    device_text = select_device(device)  # before any other TensorFlow op
    strategy = create_strategy()
    auth_token = read_auth_token(auth_token_env, auth_token_file)
    credentials = server_credentials(tls_cert_file, tls_key_file)
    address_file = os.path.join(logdir, "learner_address")
    if os.path.exists(address_file):
        os.remove(address_file)  # a stale address from an earlier run must not be read
    if seed is not None:
        keras.utils.set_random_seed(seed)  # TensorFlow's, numpy's and Python's: weights, sampling, shuffles
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
        raise ValueError(f"run_learner.agent: {agent.__name__} acts in {' or '.join(agent.action_kinds)} "
                         f"action spaces; this env has {spec.action.describe()} (agents for them: "
                         f"{takers or 'none yet'})")
    agent = agent(AgentContext(spec, num_stacked_frames, max_env_slots, schedule_frames or total_environment_frames,
                               strategy))
    # The agent's data source wakes its waiters (training, and inference on a full queue) only when closed.
    threading.Thread(target=lambda: (stop.wait(), agent.data.close()), name="close-data-on-stop", daemon=True).start()
    frames = tf.Variable(0, dtype=tf.int64, name="environment_frames")
    checkpointer = Checkpointer(os.path.join(logdir, "checkpoints"), environment_frames=frames,
                                sidecars=agent.data.checkpoint_sidecars(), **agent.trackables())
    checkpointer.check_disk()
    resumed = checkpointer.restore_latest()
    if resumed:
        log.info("resuming at %d environment frames, %d gradient steps", int(frames.numpy()),
                 int(agent.optimizer.iterations.numpy()) if agent.optimizer else 0, extra=CONSOLE)

    pipeline = InferencePipeline(agent, spec, max_slots=max_env_slots, num_stacked_frames=num_stacked_frames,
                                 reward_clipping=reward_clipping)
    if resumed:  # frames stepped go on from where the run was, so its learning curve continues
        pipeline.env_steps = (max(checkpointer.summary().get("environment_frames_stepped") or 0,
                                  EpisodeLog.last_env_frames(os.path.join(logdir, "episodes.csv")))
                              // spec.frames_per_step)
    # budget_reached tells a launcher a finished run from a stopped one (both exit 0).
    checkpointer.extra_summary = lambda: {"environment_frames_stepped": pipeline.env_steps * spec.frames_per_step,
                                          "budget_reached": training.budget_reached.is_set()}
    slots = SlotAllocator(max_env_slots)

    def release(slot_ids):
        pipeline.release(slot_ids)
        slots.free(slot_ids)

    batcher = InferenceBatcher(pipeline, release, inference_batch_size, batch_timeout_ms)
    training = TrainingLoop(agent, checkpointer, frames, total_environment_frames, checkpoint_interval_s, stop,
                            max_consecutive_skipped_updates)
    servicer = LearnerServicer(spec, batcher, slots, auth_token)
    progress = Progress(logdir, total_frames=total_environment_frames, frames_per_step=spec.frames_per_step,
                        interval_s=progress_interval_s,
                        counters=(training.counters, batcher.counters, pipeline.counters),
                        metrics=(agent.data.metrics, servicer.counters, training.metrics),
                        episodes=pipeline.take_finished_episodes, describe=agent.data.describe)
    save_operative_config(logdir, "learner")
    if wandb_project:
        progress.tracker = WandbTracker(logdir, wandb_project, wandb_entity, wandb_run_name, wandb_tags,
                                        gin.operative_config_str())

    batcher.start()
    server = start_server(servicer, address, max_actors, max_message_bytes, credentials)
    host = address.rsplit(":", 1)[0]
    _write_atomically(os.path.join(logdir, "learner_address"), f"{host}:{server.seed_port}\n")
    log.info("listening on %s:%d; budget %s env frames", host, server.seed_port,
             f"{total_environment_frames:,}", extra=CONSOLE)
    training.thread.start()
    return _supervise(stop, progress_interval_s, progress, training, batcher, server, servicer, checkpointer,
                      actor_idle_timeout_s)


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
