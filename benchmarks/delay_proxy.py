"""A TCP proxy on loopback that delays every byte by a latency with jitter, in order: a slow link
between actors and the learner where `tc netem` is missing (the project's machines' kernel has no
netem). It delays, it does not drop: TCP's own retransmissions, which loss would cause, are not
modelled.

    .venv/bin/python benchmarks/delay_proxy.py --target 127.0.0.1:PORT --delay_ms 50 --jitter_ms 10
    .venv/bin/python benchmarks/delay_proxy.py --compare --seconds 60     # frames/s, clean link and delayed

Without --compare it prints `listening on 127.0.0.1:PORT` and forwards until killed. With --compare it
trains CartPole V-trace (classic_vtrace.gin) for `--seconds` with two actors side by side on one
learner, one over the clean loopback link and one through the proxy, and prints one JSON line per
actor (env steps/s and the round trip's p50, from its own reports) and one for the learner (env
frames/s, the inference batch, updates).
"""
import argparse
import collections
import json
import os
import random
import socket
import statistics
import sys
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


class DelayProxy:
    """Forwards connections to `target`, each direction's bytes released `delay_s` +- `jitter_s` after
    they arrived, never before bytes that arrived earlier (a TCP stream stays in order)."""

    def __init__(self, target: tuple[str, int], delay_s: float, jitter_s: float, seed: int = 0):
        self.target, self.delay_s, self.jitter_s = target, delay_s, jitter_s
        self._rng = random.Random(seed)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._closed = threading.Event()
        self._connections, self._lock = [], threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)  # the timeout was for connecting: a quiet link is not a closed one
            except OSError:
                client.close()
                continue
            pair, directions_done = (client, upstream), threading.Semaphore(0)
            with self._lock:
                self._connections.append(pair)
            for source, sink in ((client, upstream), (upstream, client)):
                self._pump(source, sink, directions_done)
            threading.Thread(target=self._close_when_done, args=(pair, directions_done), daemon=True).start()

    def _close_when_done(self, pair, directions_done: threading.Semaphore) -> None:
        for _ in range(2):  # both directions have passed their FIN on, or failed
            directions_done.acquire()
        self._close_pair(pair)

    def _close_pair(self, pair) -> None:
        with self._lock:
            if pair in self._connections:
                self._connections.remove(pair)
        for s in pair:
            s.close()

    def _pump(self, source: socket.socket, sink: socket.socket, done: threading.Semaphore) -> None:
        pending, ready = collections.deque(), threading.Condition()

        def receive():
            last = 0.0
            while True:
                try:
                    data = source.recv(65536)
                except OSError:
                    data = b""
                delay = max(0.0, self.delay_s + self._rng.uniform(-self.jitter_s, self.jitter_s))
                last = max(last, time.monotonic() + delay)
                with ready:
                    pending.append((last, data))
                    ready.notify()
                if not data:
                    return

        def send():
            try:
                while True:
                    with ready:
                        while not pending:
                            ready.wait()
                        release, data = pending.popleft()
                    time.sleep(max(0.0, release - time.monotonic()))
                    if not data:
                        sink.shutdown(socket.SHUT_WR)  # the other side's FIN, passed on late too
                        return
                    sink.sendall(data)
            except OSError:
                return
            finally:
                done.release()

        threading.Thread(target=receive, daemon=True).start()
        threading.Thread(target=send, daemon=True).start()

    def close(self) -> None:
        """Stops accepting and closes every connection it still forwards."""
        self._closed.set()
        self._listener.close()
        with self._lock:
            pairs = list(self._connections)
        for pair in pairs:
            self._close_pair(pair)


def compare(seconds: float, delay_ms: float, jitter_ms: float, logdir: str) -> list[dict]:
    """CartPole V-trace for `seconds` with two actors side by side on one learner: actor_0 over the clean
    loopback link, actor_1 through the proxy. One line per actor (its env steps/s and round trips,
    from its own reports) and one for the learner."""
    sys.path.insert(0, REPO)
    from tests.processes import last_progress, start_actors, start_learner, stop, wait_for_address, wait_until
    os.makedirs(logdir, exist_ok=True)
    learner = start_learner(logdir, "classic_vtrace.gin", ["reporting.progress_interval_s=1"])
    running, proxy = [learner], None
    try:
        address = wait_for_address(logdir, learner)
        host, port = address.rsplit(":", 1)
        proxy = DelayProxy((host, int(port)), delay_ms / 1000, jitter_ms / 1000)
        bindings = ["run_actor.progress_interval_s=1"]
        running += start_actors(logdir, "classic_vtrace.gin", address, 1, bindings)  # actor_0: clean
        running += start_actors(logdir, "classic_vtrace.gin", proxy.address, 1, bindings, first_index=1)  # delayed
        wait_until(lambda: "loss/total" in last_progress(logdir) and last_progress(logdir).get("actors/connected") == 2,
                   180, "training with both actors")
        first, started = last_progress(logdir), time.time()
        time.sleep(seconds)
        last = last_progress(logdir)
    finally:
        stop(running)
        if proxy:
            proxy.close()
    lines = []
    for index, (link, delay, jitter) in enumerate((("clean", 0.0, 0.0), ("delayed", delay_ms, jitter_ms))):
        with open(os.path.join(logdir, "actors", f"actor_{index}.jsonl")) as f:
            reports = [r for r in map(json.loads, filter(str.strip, f)) if r["time"] >= started]
        trips = sorted(r["round_trip_ms_p50"] for r in reports if "round_trip_ms_p50" in r)
        lines.append({"benchmark": "delay_proxy", "actor": index, "link": link, "delay_ms": delay,
                      "jitter_ms": jitter, "reports": len(reports),
                      "env_steps_per_s": statistics.fmean(r["env_steps_per_s"] for r in reports) if reports else 0.0,
                      "round_trip_ms_p50": trips[len(trips) // 2] if trips else None})
    elapsed = last["time"] - first["time"]
    lines.append({"benchmark": "delay_proxy", "learner": True, "seconds": round(elapsed, 1),
                  "env_frames_per_s": (last["env_frames"] - first["env_frames"]) / elapsed,
                  "inference_batch_size": last.get("inference_batch_size"),
                  "updates": last["updates"] - first["updates"]})
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", help="host:port to forward to")
    parser.add_argument("--delay_ms", type=float, default=50.0)
    parser.add_argument("--jitter_ms", type=float, default=10.0)
    parser.add_argument("--compare", action="store_true", help="train over a clean link, then through the proxy")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--logdir", default=None, help="default: a new directory under /tmp")
    args = parser.parse_args()
    if args.delay_ms < 0 or args.jitter_ms < 0 or args.jitter_ms > args.delay_ms:
        parser.error("--delay_ms and --jitter_ms must be 0 or more, the jitter at most the delay")
    if args.compare:
        logdir = args.logdir or os.path.join("/tmp", f"seed_delay_{int(time.time())}")
        for line in compare(args.seconds, args.delay_ms, args.jitter_ms, logdir):
            print(json.dumps(line), flush=True)
        return 0
    if not args.target:
        parser.error("give --target HOST:PORT, or --compare")
    host, port = args.target.rsplit(":", 1)
    proxy = DelayProxy((host, int(port)), args.delay_ms / 1000, args.jitter_ms / 1000)
    print(f"listening on {proxy.address}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        proxy.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
