"""The floor grpcio itself sets: CPU per round trip of a bare bidirectional stream.

    .venv/bin/python benchmarks/grpc_floor.py [--request_bytes 28224] [--round_trips 3000]

A client in this process and a server in a child process exchange messages the
size of one actor's EnvSteps (request) and Actions (answer) on one stream, the
way an actor and the learner do, with nothing else: no codecs, no batching, no
envs. The CPU both sides spend per round trip is the least any Python gRPC
transport pays per actor message on this machine; benchmarks/transport.py
turns it into the best transport ratio such a transport could reach.

`AnsweringLearner` is the same floor with real actors: a server that speaks the
learner's protocol and answers each EnvSteps at once, inside its gRPC handler
(no batcher, no slot table, no agent). benchmarks/transport.py runs real actors
against it: what the actors and grpcio cost in a run, without the learner's work.
"""
import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from concurrent import futures

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from seed import process  # noqa: E402

process.use_polling_thread_io()  # as both roles do, before grpc is imported
import grpc  # noqa: E402
import numpy as np  # noqa: E402

from seed import codec, seed_pb2  # noqa: E402

_END = object()


def _start_stream_server(service: str, stream, max_workers: int) -> grpc.Server:
    """Serves `service`/Stream (raw bytes both ways) on a free loopback port and prints the port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, {
        "Stream": grpc.stream_stream_rpc_method_handler(stream)}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    return server


def _serve(answer_bytes: int) -> None:
    answer = b"\0" * answer_bytes

    def stream(requests, context):
        for _ in requests:
            yield answer

    server = _start_stream_server("floor.Echo", stream, max_workers=2)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop(None)


def _serve_actors() -> None:
    """Answers every actor's EnvSteps with action 0 for each env, in the handler thread; prints
    `env steps answered, streams that sent steps, time` whenever a line arrives on stdin."""
    answered, stepping = [0], set()  # env steps; streams that sent steps
    lock = threading.Lock()

    def stream(raw_messages, context):
        for raw in raw_messages:
            message = seed_pb2.ActorMessage.FromString(raw)
            kind = message.WhichOneof("kind")
            if kind == "hello":
                yield seed_pb2.LearnerMessage(welcome=seed_pb2.Welcome(
                    slot_ids=list(range(message.hello.num_envs)))).SerializeToString()
            elif kind == "steps":
                num_envs = len(message.steps.rewards) // codec.REWARD_DTYPE.itemsize
                with lock:
                    answered[0] += num_envs
                    stepping.add(id(context))
                yield codec.encode_actions(np.zeros(num_envs, codec.ACTION_DTYPE),
                                           message.steps.env_group).SerializeToString()
            else:
                return

    server = _start_stream_server("seed.Learner", stream, max_workers=64)
    for _ in sys.stdin:
        with lock:
            count, streams = answered[0], len(stepping)
        print(count, streams, time.monotonic(), flush=True)
    server.stop(None)


class AnsweringLearner:
    """The answering server of `_serve_actors` in a child process, for actors to dial."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, __file__, "--serve_actors"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.address = f"127.0.0.1:{int(self.process.stdout.readline())}"

    def env_steps(self):
        """(env steps answered so far, actors that sent steps so far, monotonic time)."""
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        count, streams, when = self.process.stdout.readline().split()
        return int(count), int(streams), float(when)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(request_bytes: int, answer_bytes: int = 64, round_trips: int = 3000) -> dict:
    """CPU milliseconds per round trip in the client and in the server, and the wall time."""
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--answer_bytes", str(answer_bytes)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            requests = queue.Queue()
            call = channel.stream_stream("/floor.Echo/Stream")(iter(requests.get, _END))
            message = os.urandom(request_bytes)
            for _ in range(100):  # warm-up: connection, HTTP/2 windows
                requests.put(message)
                next(call)
            client_cpu, server_cpu, start = time.process_time(), _cpu_seconds(server.pid), time.perf_counter()
            for _ in range(round_trips):
                requests.put(message)
                next(call)
            wall = time.perf_counter() - start
            client_cpu = time.process_time() - client_cpu
            server_cpu = _cpu_seconds(server.pid) - server_cpu
            requests.put(_END)
    finally:
        server.stdin.close()
        server.wait(30)
    return {"request_bytes": request_bytes, "client_cpu_ms": 1000 * client_cpu / round_trips,
            "server_cpu_ms": 1000 * server_cpu / round_trips, "wall_ms": 1000 * wall / round_trips}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve_actors", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--answer_bytes", type=int, default=64)
    parser.add_argument("--request_bytes", type=int, nargs="+", default=[4 * 84 * 84])
    parser.add_argument("--round_trips", type=int, default=3000)
    args = parser.parse_args()
    if args.serve:
        _serve(args.answer_bytes)
        return 0
    if args.serve_actors:
        _serve_actors()
        return 0
    for size in args.request_bytes:
        print(json.dumps({"benchmark": "grpc_floor", **measure(size, args.answer_bytes, args.round_trips)}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
