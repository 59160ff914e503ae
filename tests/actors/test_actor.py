"""The actor against a scripted learner: a real gRPC server on loopback that records every message an
actor sends and answers as the test says, so the actor's side of the protocol is checked on its own
(env groups in flight, a clean stop, reconnecting, giving up on a refusal)."""
import pathlib
import queue
import subprocess
import sys
import threading
from concurrent import futures

import grpc
import numpy as np
import pytest

from actors.actor import run_actor
from seed import codec, seed_pb2, seed_pb2_grpc
from seed.specs import ActionSpec

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
CARTPOLE_ACTIONS = ActionSpec.discrete(2)


class ScriptedLearner(seed_pb2_grpc.LearnerServicer):
    """Welcomes each stream, then answers every EnvSteps with zeros, until `answers` answers have gone
    out on that stream; `on_hello` may abort a stream instead (a refusal or a lost stream)."""

    def __init__(self, answers: int, on_hello=None):
        self.answers, self.on_hello = answers, on_hello
        self.streams: list[list[seed_pb2.ActorMessage]] = []  # every stream's messages, in order
        self.events: queue.Queue = queue.Queue()  # ('done', stream index) once a stream stopped answering

    def Stream(self, request_iterator, context):
        received: list[seed_pb2.ActorMessage] = []
        self.streams.append(received)
        index, answered = len(self.streams) - 1, 0
        for message in request_iterator:
            received.append(message)
            kind = message.WhichOneof("kind")
            if kind == "hello":
                if self.on_hello:
                    self.on_hello(index, context)
                yield seed_pb2.LearnerMessage(welcome=seed_pb2.Welcome(
                    slot_ids=list(range(message.hello.num_envs))))
            elif kind == "steps" and answered < self.answers:
                group = message.steps.env_group
                num_envs = len(message.steps.rewards) // 4
                answered += 1
                yield codec.encode_actions(np.zeros(num_envs, np.int32), group, CARTPOLE_ACTIONS)
                if answered == self.answers:
                    self.events.put(("done", index))
            elif kind == "goodbye":
                self.events.put(("goodbye", index))


def serve(learner: ScriptedLearner):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    seed_pb2_grpc.add_LearnerServicer_to_server(learner, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def start_actor(address: str, **settings):
    """run_actor on CartPole in a thread; returns (stop, thread, result) where result[0] is its exit code."""
    stop, result = threading.Event(), []
    thread = threading.Thread(target=lambda: result.append(run_actor(address, 0, stop, **settings)), daemon=True)
    thread.start()
    return stop, thread, result


def next_event(learner: ScriptedLearner, timeout_s: float = 30.0):
    try:
        return learner.events.get(timeout=timeout_s)
    except queue.Empty:
        pytest.fail(f"the scripted learner saw no stream end within {timeout_s} s: {learner.streams}")


def test_two_env_groups_stay_in_flight_and_a_stop_while_waiting_for_the_learner_says_goodbye():
    # The learner stops answering after 6 answers, so the actor is waiting on it when told to stop.
    learner = ScriptedLearner(answers=6)
    server, address = serve(learner)
    try:
        stop, thread, result = start_actor(address, num_envs=3, num_env_groups=2, reconnect_timeout_s=30)
        assert next_event(learner) == ("done", 0)
        stop.set()
        assert next_event(learner) == ("goodbye", 0)
        thread.join(30)
        assert result == [0]
    finally:
        server.stop(0).wait()
    messages = learner.streams[0]
    assert messages[-1].WhichOneof("kind") == "goodbye"
    hello = messages[0].hello
    assert (hello.num_envs, hello.num_env_groups, tuple(hello.observation_shape)) == (3, 2, (4,))
    steps = [m.steps for m in messages if m.WhichOneof("kind") == "steps"]
    # Both groups' resets go out before any answer; afterwards each answer is stepped for its own group.
    assert [s.env_group for s in steps[:2]] == [0, 1]
    assert [len(s.rewards) // 4 for s in steps[:2]] == [2, 1]  # array_split sizes of 3 envs in 2 groups
    assert [s.env_group for s in steps[2:8]] == [0, 1, 0, 1, 0, 1]


def test_a_lost_stream_is_reconnected_with_a_new_hello_and_fresh_resets():
    def lose_the_first(index, context):
        if index == 0:
            context.abort(grpc.StatusCode.UNAVAILABLE, "learner restarting")

    learner = ScriptedLearner(answers=2, on_hello=lose_the_first)
    server, address = serve(learner)
    try:
        stop, thread, result = start_actor(address, num_envs=2, max_backoff_s=1, reconnect_timeout_s=30)
        assert next_event(learner) == ("done", 1)
        stop.set()
        thread.join(30)
        assert result == [0]
    finally:
        server.stop(0).wait()
    assert [m.WhichOneof("kind") for m in learner.streams[0]] == ["hello"]
    assert learner.streams[1][0].WhichOneof("kind") == "hello"


@pytest.mark.parametrize("code", [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED])
def test_a_refusal_no_retry_can_fix_stops_the_actor_with_exit_code_2_after_one_hello(code):
    learner = ScriptedLearner(answers=0, on_hello=lambda index, context: context.abort(code, "refused"))
    server, address = serve(learner)
    try:
        stop, thread, result = start_actor(address, num_envs=1, reconnect_timeout_s=30)
        thread.join(30)
        stop.set()
        assert result == [2]
    finally:
        server.stop(0).wait()
    assert len(learner.streams) == 1


def test_no_learner_at_the_address_gives_up_after_the_reconnect_timeout_with_exit_code_1():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("127.0.0.1:0")  # a free port, then nothing listens on it
    server.stop(0).wait()
    stop, thread, result = start_actor(f"127.0.0.1:{port}", num_envs=1, reconnect_timeout_s=2)
    thread.join(30)
    stop.set()
    assert result == [1]


def test_actor_imports_no_tensorflow():
    code = ("import sys; import actors.actor, actors.main, seed.envs, seed.codec, seed.handshake; "
            "print('tensorflow' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.stdout.strip() == "False", result.stderr
