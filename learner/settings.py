"""The learner's settings, in four groups that read like a config:

    training.agent = @VTraceAgent
    training.total_environment_frames = 10_000_000
    inference.batch_size = 64
    service.max_actors = 64
    reporting.progress_interval_s = 5

Each group is a frozen dataclass that gin fills and that checks its values when it is made, so a bad
setting stops the learner at start with one line that names it. The agents' own settings stay with
the agents (learner/agents/).
"""
import dataclasses
from collections.abc import Sequence

import gin

from learner.agents import VTraceAgent
from learner.rewards import check_reward_clipping
from seed.settings import require_non_negative, require_positive


@gin.configurable("training")
@dataclasses.dataclass(frozen=True)
class TrainingSettings:
    """What the learner trains, for how long, and how often it saves.

    Settings:
        `agent`: the agent to train, any registered in learner/agents/ (@VTraceAgent; also @R2D2Agent, @PPOAgent,
            @SACAgent, and @FixedActionAgent, which answers action 0 and never trains).
        `total_environment_frames`: the frame budget, in env frames (agent steps x frame_skip) that updates
            account for; the run stops there (10M; 1M in classic_*.gin; --frames N in run_local.sh): V-trace's
            and PPO's fresh frames trained on, R2D2's and SAC's frames inserted into replay.
        `schedule_frames`: the env frames the learning-rate (and PPO's entropy) schedules span (None: the
            budget). Set apart from the budget so that a longer or shorter run learns the same way up to
            its stop: atari_vtrace.gin and atari_r2d2.gin keep 200M, the horizon of their published curves.
        `num_stacked_frames`: newest frames the learner stacks into each observation (4; 1 in classic_*.gin).
        `reward_clipping`: how the learner clips rewards for training ('abs_one': to [-1, 1];
            'soft_asymmetric': IMPALA's 5 tanh(r / 5), times 0.3 for negative rewards; 'none');
            reported returns stay raw. atari_r2d2.gin sets 'none': R2D2 rescales values instead.
        `seed`: seed of TensorFlow's, numpy's and Python's random numbers: weights, sampling, shuffles
            (None: unseeded).
        `checkpoint_interval_s`: seconds between checkpoints (60), the most training a crash loses. A
            checkpoint took 0.06 s and 20 MB for atari_vtrace.gin and 0.18 s and 69 MB for atari_r2d2.gin on
            the 2-core machine (benchmarks/checkpoint_cost.py): 0.1-0.3 % of the learner's time at 60 s.
            The newest 3 are kept.
        `max_consecutive_skipped_updates`: updates in a row with a non-finite loss or gradient after which
            the learner stops with an error and writes no checkpoint over the last good one (100).
    """
    agent: type = VTraceAgent
    total_environment_frames: int = 10_000_000
    schedule_frames: int | None = None
    num_stacked_frames: int = 4
    reward_clipping: str = "abs_one"
    seed: int | None = None
    checkpoint_interval_s: float = 60.0
    max_consecutive_skipped_updates: int = 100

    def __post_init__(self):
        check_reward_clipping(self.reward_clipping)
        require_positive("training", num_stacked_frames=self.num_stacked_frames,
                         checkpoint_interval_s=self.checkpoint_interval_s,
                         max_consecutive_skipped_updates=self.max_consecutive_skipped_updates)
        require_non_negative("training", total_environment_frames=self.total_environment_frames)
        if self.schedule_frames is not None:
            require_positive("training", schedule_frames=self.schedule_frames)

    @property
    def horizon_frames(self) -> int:
        """The env frames the agents' schedules span: `schedule_frames`, else the budget."""
        return self.schedule_frames or self.total_environment_frames


@gin.configurable("inference")
@dataclasses.dataclass(frozen=True)
class InferenceSettings:
    """Where and how the learner runs the policy for the actors' steps.

    Settings:
        `batch_size`: most env steps per policy call (64); a batch is also complete once every connected
            env is in it.
        `batch_timeout_ms`: longest wait for a full batch after its first request, milliseconds (10); capped
            at one policy call's average duration, and skipped when under 1 ms.
        `max_env_slots`: most envs connected at once over all actors, each holding a slot of frame stacks,
            core state and a partial unroll (256); an actor whose envs find no free slots is refused.
        `device`: where inference and training run: 'auto' (a GPU when TensorFlow sees one, else the CPU),
            'cpu', or 'gpu' (refused at start, saying why, when no GPU is usable; run_local.sh --gpu installs
            TensorFlow's CUDA wheels and binds it) ('auto'). The learner says at start which it is.
        `tf_intra_op_threads`: cap on TensorFlow's intra-op thread pool (0: TensorFlow's choice, every
            core), for machines where the actors need cores of their own.
        `tf_inter_op_threads`: cap on TensorFlow's inter-op thread pool (0: TensorFlow's choice).
    """
    batch_size: int = 64
    batch_timeout_ms: float = 10.0
    max_env_slots: int = 256
    device: str = "auto"
    tf_intra_op_threads: int = 0
    tf_inter_op_threads: int = 0

    def __post_init__(self):
        require_positive("inference", batch_size=self.batch_size, max_env_slots=self.max_env_slots)
        require_non_negative("inference", batch_timeout_ms=self.batch_timeout_ms,
                             tf_intra_op_threads=self.tf_intra_op_threads,
                             tf_inter_op_threads=self.tf_inter_op_threads)  # 0: every core


@gin.configurable("service")
@dataclasses.dataclass(frozen=True)
class ServiceSettings:
    """The gRPC service the actors connect to: its limits and who may connect.

    Settings:
        `max_actors`: most actor streams at once (64); more are refused with RESOURCE_EXHAUSTED and retry.
        `max_message_bytes`: largest gRPC message either way, bytes (64 MiB).
        `actor_idle_timeout_s`: seconds an actor may leave the learner waiting before its stream is closed
            and its slots freed (300); time the learner itself spends (back-pressure) does not count.
        `auth_token_env`: environment variable holding the shared auth token when no file is given
            ('SEED_AUTH_TOKEN'); an actor with another token is refused (UNAUTHENTICATED); unset or empty:
            no check.
        `auth_token_file`: file holding the shared auth token, read instead of the variable (None).
        `tls_cert_file`: PEM certificate (chain) the learner presents; with `tls_key_file`, or neither
            (None: plaintext, no TLS).
        `tls_key_file`: PEM private key of `tls_cert_file` (None).
        `keepalive_s`: seconds of silence on an actor's connection before the learner pings it (20).
        `keepalive_timeout_s`: seconds the learner waits for a ping's answer before it drops the connection
            and frees the actor's slots (20): a vanished actor host is noticed within about the sum.
    """
    max_actors: int = 64
    max_message_bytes: int = 64 << 20
    actor_idle_timeout_s: float = 300.0
    auth_token_env: str = "SEED_AUTH_TOKEN"
    auth_token_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    keepalive_s: float = 20.0
    keepalive_timeout_s: float = 20.0

    def __post_init__(self):
        require_positive("service", max_actors=self.max_actors, max_message_bytes=self.max_message_bytes,
                         actor_idle_timeout_s=self.actor_idle_timeout_s, keepalive_s=self.keepalive_s,
                         keepalive_timeout_s=self.keepalive_timeout_s)


@gin.configurable("reporting")
@dataclasses.dataclass(frozen=True)
class ReportingSettings:
    """What the learner reports as it goes (learner/progress.py) and where.

    Settings:
        `progress_interval_s`: seconds between progress lines, progress.jsonl records and TensorBoard
            scalars (5).
        `wandb_project`: Weights & Biases project that also gets every progress record (None: off;
            learner/tracking.py, .venv/bin/pip install -e '.[wandb]' in the checkout); a resumed run continues
            the same W&B run.
        `wandb_entity`: W&B entity (user or team) of the run (None: your default).
        `wandb_run_name`: W&B run name (None: the run directory's name).
        `wandb_tags`: W&B tags of the run (no tags).
    """
    progress_interval_s: float = 5.0
    wandb_project: str | None = None
    wandb_entity: str | None = None
    wandb_run_name: str | None = None
    wandb_tags: Sequence[str] = ()

    def __post_init__(self):
        require_positive("reporting", progress_interval_s=self.progress_interval_s)
