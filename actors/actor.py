"""The actor role: step N environments, stream them to the learner, apply its actions.

An actor holds no weights and imports no TensorFlow. Each (re)connection opens
one stream, says hello, resets its envs and then keeps every env group in
flight: for each answer (one action per env of a group) it steps that group
and sends the group's newest observations, rewards and end flags. With two
groups one half of the envs steps while the learner infers for the other.
"""
import json
import logging
import os
import queue
import random
import threading
import time

import gin
import grpc
import numpy as np

from seed import codec, handshake, keepalive, seed_pb2_grpc
from seed.auth import channel_credentials, read_auth_token
from seed.envs import create_envs
from seed.gin_setup import save_operative_config
from seed.settings import require_positive

log = logging.getLogger(__name__)

# Status codes that no retry can fix: the actor's configuration is wrong.
FATAL_CODES = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED,
               grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNIMPLEMENTED)
_END = object()


class StreamClosed(Exception):
    """The learner ended the stream without an error status (it read our Goodbye, or it closed)."""


class LearnerStream:
    """One bidirectional stream: `exchange` sends a message and returns the answer."""

    def __init__(self, channel: grpc.Channel, stop: threading.Event, goodbye_timeout_s: float = 2.0,
                 timeout_s: float | None = None):
        """`timeout_s`: the call's deadline, None for none (an actor's stream lasts the run; the keepalive,
        not a deadline, finds a dead peer)."""
        self._requests = queue.Queue()
        self._call = seed_pb2_grpc.LearnerStub(channel).Stream(iter(self._requests.get, _END), timeout=timeout_s)
        self._goodbye_timeout_s = goodbye_timeout_s
        self._hung_up = False
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._call.add_done_callback(lambda _: self._ended.set())
        # A blocked `receive` cannot see `stop`: the watcher says goodbye, which makes the learner end
        # the call and so wakes it; a learner that does not answer within the timeout is cut off.
        threading.Thread(target=self._close_on, args=(stop,), daemon=True).start()

    def _close_on(self, stop: threading.Event) -> None:
        while not self._ended.wait(0.2):
            if stop.is_set():
                self.close()
                return

    def send(self, message) -> None:
        self._requests.put(message)

    def receive(self):
        try:
            return next(self._call)
        except StopIteration:
            raise StreamClosed from None

    def exchange(self, message):
        self.send(message)
        return self.receive()

    def close(self) -> None:
        """Says goodbye once (the learner then knows this stream was not lost), half-closes, and cancels
        the call if the learner has not ended it within the timeout. Every caller waits for that end:
        the run loop closes the channel next, which would cut the Goodbye off."""
        with self._lock:
            first, self._hung_up = not self._hung_up, True
        if first:
            self._requests.put(handshake.GOODBYE)
            self._requests.put(_END)
        self._ended.wait(self._goodbye_timeout_s)
        self._call.cancel()


def _wait_for_learner(channel: grpc.Channel, stop: threading.Event, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not stop.is_set() and time.monotonic() < deadline:
        try:
            grpc.channel_ready_future(channel).result(timeout=1.0)
            return True
        except grpc.FutureTimeoutError:
            continue
    return False


@gin.configurable(denylist=["learner_address", "actor_index", "stop", "logdir"])
def run_actor(learner_address: str, actor_index: int, stop: threading.Event, logdir: str | None = None, *,
              num_envs: int = 4, num_env_groups: int = 1,
              seed: int = 0, reconnect_timeout_s: float = 300.0, max_backoff_s: float = 30.0,
              max_message_bytes: int = 64 << 20, progress_interval_s: float = 30.0,
              auth_token_env: str = "SEED_AUTH_TOKEN", auth_token_file: str | None = None,
              tls_ca_file: str | None = None, tls_server_name: str | None = None, keepalive_s: float = 20.0,
              keepalive_timeout_s: float = 20.0) -> int:
    """Streams to the learner until `stop`, a fatal answer, or `reconnect_timeout_s` without it.

    Settings:
        `num_envs`: environments this actor steps, all on one stream (4).
        `num_env_groups`: groups the envs are split into, each stepped while the learner infers for the
            others (1: lockstep; 2: double buffering), capped at `num_envs`. Lockstep is the default
            because it measured faster where actors and learner share the cores
            (benchmarks/experiments/2026-11-22-end-to-end-ratio.md);
            double buffering pays off where actors have cores of their own and the learner's answer is slow.
        `seed`: base seed of the envs' first resets (0); env i of actor k on its c-th connection (from 0)
            resets with seed + 7919 * k + c + i.
        `reconnect_timeout_s`: seconds to wait for a reachable learner before giving up with exit code 1 (300).
        `max_backoff_s`: cap of the wait before reconnecting after a lost stream, seconds (30); the wait
            starts at 0.5 s and doubles, with jitter.
        `max_message_bytes`: largest gRPC message either way, bytes (64 MiB); one env group's step must fit.
        `progress_interval_s`: seconds between reports of steps/s and learner round trips, to the log and
            LOGDIR/actors/actor_N.jsonl (30).
        `auth_token_env`: environment variable holding the shared auth token when no file is given
            ('SEED_AUTH_TOKEN'); unset or empty: no token.
        `auth_token_file`: file holding the shared auth token, read instead of the variable (None).
        `tls_ca_file`: PEM file of the CA that signed the learner's certificate (None: plaintext, no TLS).
        `tls_server_name`: the host name the learner's certificate names, where it is not the address's (None).
        `keepalive_s`: seconds of silence on the stream before the actor pings the learner (20).
        `keepalive_timeout_s`: seconds the actor waits for a ping's answer before it drops the stream, backs off
            and reconnects (20): a learner host that vanished is noticed within about the sum.
    """
    require_positive("run_actor", num_envs=num_envs, num_env_groups=num_env_groups,
                     reconnect_timeout_s=reconnect_timeout_s, max_backoff_s=max_backoff_s,
                     max_message_bytes=max_message_bytes, progress_interval_s=progress_interval_s,
                     keepalive_s=keepalive_s, keepalive_timeout_s=keepalive_timeout_s)
    num_env_groups = min(num_env_groups, num_envs)
    bounds = handshake.env_group_bounds(num_envs, num_env_groups)
    groups = [create_envs(int(n)) for n in np.diff(bounds)]
    name = f"actor_{actor_index}"
    if logdir and actor_index == 0:  # every actor of a run gets the same config
        save_operative_config(logdir, "actor")
    hello = handshake.make_hello(name, num_envs, groups[0].spec, read_auth_token(auth_token_env, auth_token_file),
                             num_env_groups)
    channel = _open_channel(learner_address, max_message_bytes, tls_ca_file, tls_server_name,
                            keepalive.channel_options(keepalive_s, keepalive_timeout_s))
    stats = StepStats(name, logdir)
    backoff_s, connection = 0.5, 0
    try:
        while not stop.is_set():
            if not _wait_for_learner(channel, stop, reconnect_timeout_s):
                if stop.is_set():
                    break
                hint = (" (with TLS: does run_actor.tls_ca_file hold the CA that signed the learner's "
                        "certificate, and does the certificate name this address?)" if tls_ca_file else "")
                log.error("%s: no learner at %s for %.0f s; giving up%s", name, learner_address,
                          reconnect_timeout_s, hint)
                return 1
            stream = LearnerStream(channel, stop)
            try:
                welcome = stream.exchange(hello).welcome
                log.info("%s: connected to %s, slots %s", name, learner_address, list(welcome.slot_ids))
                backoff_s = 0.5
                _stream_steps(stream, groups, bounds, seed + 7919 * actor_index + connection, stop,
                              progress_interval_s, stats)
            except (grpc.RpcError, StreamClosed) as e:
                if stop.is_set():
                    break
                if isinstance(e, grpc.RpcError) and e.code() in FATAL_CODES:
                    log.error("%s: learner refused us: %s (%s)", name, e.details(), e.code().name)
                    return 2
                reason = f"{e.code().name}: {e.details()}" if isinstance(e, grpc.RpcError) else "closed by the learner"
                log.warning("%s: stream lost (%s); reconnecting in %.1f s", name, reason, backoff_s)
                stop.wait(backoff_s * random.uniform(0.5, 1.0))
                backoff_s = min(2 * backoff_s, max_backoff_s)
            finally:
                stream.close()
                connection += 1
    finally:
        channel.close()
        stats.close()
        for envs in groups:
            envs.close()
    log.info("%s: stopped", name)
    return 0


def _open_channel(address: str, max_message_bytes: int, tls_ca_file: str | None,
                  tls_server_name: str | None, keepalive_options: list) -> grpc.Channel:
    options = [("grpc.max_receive_message_length", max_message_bytes),
               ("grpc.max_send_message_length", max_message_bytes), *keepalive_options]
    credentials = channel_credentials(tls_ca_file)
    if credentials is None:
        return grpc.insecure_channel(address, options=options)
    if tls_server_name:  # when the certificate names another host than the address does
        options.append(("grpc.ssl_target_name_override", tls_server_name))
    return grpc.secure_channel(address, credentials, options=options)


class StepStats:
    """Steps and learner round trips since the last report: to the log and, with a logdir,
    as JSON lines to LOGDIR/actors/<name>.jsonl (benchmarks/end_to_end.py reads them)."""

    def __init__(self, name: str, logdir: str | None):
        self.name = name
        self.steps = 0
        self.round_trips, self.waits = [], []  # seconds
        self._last_steps, self._last_report = 0, time.monotonic()
        self._file = None
        if logdir:
            os.makedirs(os.path.join(logdir, "actors"), exist_ok=True)
            self._file = open(os.path.join(logdir, "actors", f"{name}.jsonl"), "a")

    def report(self) -> None:
        now = time.monotonic()
        record = {"time": time.time(), "env_steps": self.steps,
                  "env_steps_per_s": (self.steps - self._last_steps) / max(now - self._last_report, 1e-9)}
        for key, samples in (("round_trip_ms", self.round_trips), ("wait_ms", self.waits)):
            if samples:
                p50, p99 = np.percentile(samples, [50, 99]) * 1000
                record.update({f"{key}_p50": p50, f"{key}_p99": p99})
        log.info("%s: %d env steps (%.0f/s), learner answers after p50 %.1f ms, p99 %.1f ms", self.name,
                 self.steps, record["env_steps_per_s"], record.get("round_trip_ms_p50", float("nan")),
                 record.get("round_trip_ms_p99", float("nan")))
        if self._file:
            self._file.write(json.dumps(record) + "\n")
            self._file.flush()
        self.round_trips, self.waits = [], []
        self._last_steps, self._last_report = self.steps, now

    def close(self) -> None:
        if self._file:
            self._file.close()


def _stream_steps(stream: LearnerStream, groups, bounds: np.ndarray, seed: int, stop: threading.Event,
                  progress_interval_s: float, stats: StepStats) -> None:
    sent_at = [0.0] * len(groups)
    for group, envs in enumerate(groups):
        zeros = np.zeros(envs.num_envs, np.float32)
        flags = np.zeros(envs.num_envs, bool)
        observations = envs.reset(seed=seed + int(bounds[group]))  # distinct seeds for every env
        stream.send(codec.encode_steps(observations, zeros, flags, flags, group))
        sent_at[group] = time.perf_counter()
    last_report = time.monotonic()
    while not stop.is_set():
        for group, envs in enumerate(groups):  # the learner answers groups in the order they were sent
            waiting_since = time.perf_counter()
            answer = stream.receive().actions
            answered_at = time.perf_counter()
            stats.waits.append(answered_at - waiting_since)
            stats.round_trips.append(answered_at - sent_at[group])
            if answer.env_group != group:
                raise codec.ProtocolError(f"learner answered env group {answer.env_group}, expected {group}")
            actions = codec.decode_actions(answer, envs.num_envs, envs.spec.action)
            stream.send(codec.encode_steps(*envs.step(actions), group))
            sent_at[group] = time.perf_counter()
            stats.steps += envs.num_envs
        if time.monotonic() - last_report >= progress_interval_s:
            stats.report()
            last_report = time.monotonic()
