"""The gRPC side of the learner: one bidirectional stream per actor.

Handler threads only validate, decode, hand steps to the batcher and wait for
the actions. A misbehaving actor gets a gRPC status that names the problem; it
never takes the learner or the other actors down.
"""
import collections
import hmac
import logging
import threading
import time

import grpc
from google.protobuf.message import DecodeError

from learner.batcher import InferenceBatcher
from learner.data import LearnerStopped
from learner.slots import SlotAllocator
from seed import codec, handshake, keepalive, seed_pb2, seed_pb2_grpc
from seed.specs import EnvSpec

log = logging.getLogger(__name__)


class LearnerServicer(seed_pb2_grpc.LearnerServicer):
    def __init__(self, spec: EnvSpec, batcher: InferenceBatcher, slots: SlotAllocator, auth_token: str = ""):
        self._spec = spec
        self._batcher = batcher
        self._slots = slots
        self._auth_token = auth_token.encode()
        self.num_connected_actors = 0
        self.num_rejected_streams = 0
        self.num_idle_streams_closed = 0
        self.num_streams_lost = 0  # ended without the actor closing them (killed, network gone)
        self._awaiting_actor = {}  # id(context) -> (context, actor name, time our last answer went out)
        self._lock = threading.Lock()

    def _reject(self, context, code: grpc.StatusCode, message: str):
        with self._lock:
            self.num_rejected_streams += 1
        log.warning("rejected actor %s: %s", context.peer(), message)
        context.abort(code, message)

    def _welcome(self, request_iterator, context):
        first = next(request_iterator, None)
        if first is None:
            return None
        if first.WhichOneof("kind") != "hello":
            self._reject(context, grpc.StatusCode.INVALID_ARGUMENT,
                         "the first message on a stream must be a Hello")
        hello = first.hello
        if self._auth_token and not hmac.compare_digest(hello.auth_token.encode(), self._auth_token):
            self._reject(context, grpc.StatusCode.UNAUTHENTICATED, "wrong or missing auth token")
        mismatch = handshake.spec_mismatch(hello, self._spec)
        if mismatch:
            self._reject(context, grpc.StatusCode.INVALID_ARGUMENT, mismatch)
        if hello.num_envs > self._slots.max_slots:  # never fits: the actor must not retry
            self._reject(context, grpc.StatusCode.INVALID_ARGUMENT,
                         f"{hello.num_envs} envs can never fit in inference.max_env_slots = "
                         f"{self._slots.max_slots}; raise it or give each actor fewer envs")
        slot_ids = self._slots.allocate(hello.num_envs)
        if slot_ids is None:
            self._reject(context, grpc.StatusCode.RESOURCE_EXHAUSTED,
                         f"no room for {hello.num_envs} more envs ({self._slots.num_free} of "
                         f"{self._slots.max_slots} slots free); raise inference.max_env_slots")
        return hello, slot_ids

    @staticmethod
    def _parsed(raw_messages, context):
        """Parses here rather than in gRPC, so garbage gets INVALID_ARGUMENT with a reason."""
        for raw in raw_messages:
            try:
                yield seed_pb2.ActorMessage.FromString(raw)
            except DecodeError as e:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              f"malformed message: not a seed.ActorMessage protobuf ({e})")

    def Stream(self, raw_messages, context):
        request_iterator = self._parsed(raw_messages, context)
        welcomed = self._welcome(request_iterator, context)
        if welcomed is None:
            return
        hello, slot_ids = welcomed
        with self._lock:
            self.num_connected_actors += 1
        log.info("actor %r connected from %s with %d envs (slots %d..%d)", hello.actor_name, context.peer(),
                 hello.num_envs, slot_ids[0], slot_ids[-1])
        closed_by_actor = False
        num_groups = max(hello.num_env_groups, 1)
        bounds = handshake.env_group_bounds(hello.num_envs, num_groups)
        in_flight = collections.deque()  # (group, future of its actions), oldest first
        # With more than one group, about one group per actor waits at the learner at a time.
        expected = int(bounds[1])
        self._batcher.expect_envs(expected)
        try:
            yield seed_pb2.LearnerMessage(welcome=seed_pb2.Welcome(slot_ids=slot_ids.tolist()))
            self._await_actor(context, hello.actor_name)
            for message in request_iterator:
                self._await_actor(context, None)
                if message.WhichOneof("kind") == "goodbye":
                    closed_by_actor = True
                    break
                if message.WhichOneof("kind") != "steps":
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                  "a Hello may only open a stream; later messages must be EnvSteps or a Goodbye")
                group = message.steps.env_group
                if not 0 <= group < num_groups or any(group == g for g, _ in in_flight):
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"env_group {group}: not one of the Hello's {num_groups} groups, or "
                                  "still awaiting its actions")
                group_slots = slot_ids[bounds[group]:bounds[group + 1]]
                try:
                    steps = codec.decode_steps(message.steps, self._spec, len(group_slots))
                except codec.ProtocolError as e:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
                in_flight.append((group, self._batcher.submit(group_slots, steps)))
                if len(in_flight) < num_groups:  # the actor keeps every group in flight: read on
                    self._await_actor(context, hello.actor_name)
                    continue
                group, answer = in_flight.popleft()
                try:
                    actions = answer.result()
                except LearnerStopped:
                    context.abort(grpc.StatusCode.UNAVAILABLE, "the learner is shutting down")
                yield codec.encode_actions(actions, group, self._spec.action)
                self._await_actor(context, hello.actor_name)
        finally:
            self._await_actor(context, None)
            lost = not closed_by_actor and context.code() is None  # not one of our own aborts
            with self._lock:
                self.num_connected_actors -= 1
                self.num_streams_lost += lost
            self._batcher.expect_envs(-expected)
            self._batcher.release(slot_ids)
            log.info("actor %r disconnected%s", hello.actor_name, " (stream lost)" if lost else "")

    def counters(self) -> dict[str, int]:
        with self._lock:
            return {"actors/connected": self.num_connected_actors, "actors/streams_lost": self.num_streams_lost,
                    "actors/streams_rejected": self.num_rejected_streams,
                    "actors/idle_streams_closed": self.num_idle_streams_closed}

    def _await_actor(self, context, actor_name: str | None) -> None:
        """Marks the stream as waiting for its actor (a name) or not (None)."""
        with self._lock:
            if actor_name is None:
                self._awaiting_actor.pop(id(context), None)
            else:
                self._awaiting_actor[id(context)] = (context, actor_name, time.monotonic())

    def awaiting_since(self) -> dict[str, float]:
        """Actor name -> when the learner's last answer to it went out (monotonic clock)."""
        with self._lock:
            return {name: since for _, name, since in self._awaiting_actor.values()}

    def close_idle_streams(self, idle_timeout_s: float, now: float | None = None) -> int:
        """Cancels streams whose actor has not answered for `idle_timeout_s`; their slots are freed.
        Time the learner itself spends (back-pressure) never counts: only waits for the actor do."""
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [(ctx, name) for ctx, name, since in self._awaiting_actor.values() if now - since > idle_timeout_s]
            for ctx, _ in idle:
                self._awaiting_actor.pop(id(ctx), None)
            self.num_idle_streams_closed += len(idle)
        for context, name in idle:
            log.warning("closing the stream of actor %r: nothing from it for %.0f s", name, idle_timeout_s)
            context.cancel()
        return len(idle)


def start_server(servicer: LearnerServicer, address: str, max_actors: int, max_message_bytes: int,
                 credentials: grpc.ServerCredentials | None = None, keepalive_s: float = 20.0,
                 keepalive_timeout_s: float = 20.0) -> grpc.Server:
    """Binds `address` (host:port; port 0 picks a free one), with TLS when `credentials`
    are given, and returns the started server (seed/keepalive.py: how it notices vanished actors)."""
    from concurrent import futures
    # Each open stream holds one handler thread for its whole life.
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_actors + 2, thread_name_prefix="grpc"),
        maximum_concurrent_rpcs=max_actors,
        options=[("grpc.max_receive_message_length", max_message_bytes),
                 ("grpc.max_send_message_length", max_message_bytes),
                 ("grpc.so_reuseport", 0), *keepalive.server_options(keepalive_s, keepalive_timeout_s)])
    # Requests arrive as raw bytes (no request_deserializer); LearnerServicer parses them.
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("seed.Learner", {
        "Stream": grpc.stream_stream_rpc_method_handler(
            servicer.Stream, response_serializer=seed_pb2.LearnerMessage.SerializeToString),
    }),))
    try:
        port = (server.add_secure_port(address, credentials) if credentials is not None
                else server.add_insecure_port(address))
    except RuntimeError:
        port = 0
    if port == 0:
        raise OSError(f"cannot listen on {address}: address in use or not available here")
    server.seed_port = port
    server.start()
    return server
