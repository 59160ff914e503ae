"""seed-ray: a learner and its actors on a Ray cluster.

Ray only places and supervises processes; gRPC between actors and learner stays
the data path. The learner goes to a node with the requested resources
(`--learner_gpus`, `--learner_resources`), the actors to the other nodes that
have the CPUs for them (round robin; the learner's node only when no other
node can take them). Each role runs as a `python -m learner|actors` child of a
small Ray actor on its node, so this module imports neither role. An actor
whose process dies from a signal is restarted in place, by the rule every
launcher applies (seed/launchers/restarts.py); one whose Ray actor or node is
lost is placed again. Needs `.venv/bin/pip install -e '.[ray]' in the checkout`.

    seed-ray --address auto --num_actors 16 --learner_gpus 1 --gin_config atari_vtrace.gin
"""
import argparse
import json
import logging
import os
import subprocess
import sys
import time

from seed.launchers.restarts import RestartPolicy, describe_exit
from seed.process import stop_processes

log = logging.getLogger("seed.launchers.ray_launch")


def _ray():
    try:
        import ray
    except ImportError:
        raise SystemExit("seed-ray needs Ray: .venv/bin/pip install -e '.[ray]' in the checkout") from None
    return ray


class RoleProcess:
    """One seed role as a child process of a Ray actor on the node Ray chose."""

    def __init__(self, module_args: list[str], env: dict[str, str]):
        self._args = [sys.executable, "-m", *module_args]
        self._env = dict(os.environ, **env)
        self.restarts = 0
        self._process = subprocess.Popen(self._args, env=self._env)

    def node(self):
        import ray
        return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()

    def poll(self) -> int | None:
        return self._process.poll()

    def pid(self) -> int:
        return self._process.pid

    def restart(self) -> int:
        self.restarts += 1
        self._process = subprocess.Popen(self._args, env=self._env)
        return self._process.pid

    def read_file(self, path: str) -> str | None:
        return open(path).read() if os.path.exists(path) else None

    def stop(self, timeout_s: float = 30.0) -> int | None:
        stop_processes([self._process], timeout_s)
        return self._process.wait()


class RayJob:
    """Places, watches and stops one training job's processes."""

    def __init__(self, gin_args: list[str], logdir: str, num_actors: int, learner_host: str = "0.0.0.0",
                 learner_cpus: float = 1, learner_gpus: float = 0, learner_resources: dict | None = None,
                 actor_cpus: float = 1, env: dict[str, str] | None = None):
        self.ray = _ray()
        self._remote = self.ray.remote(max_restarts=0)(RoleProcess)
        self.gin_args, self.logdir, self.num_actors = gin_args, os.path.abspath(logdir), num_actors
        self.learner_host, self.actor_cpus = learner_host, actor_cpus
        self.env = env or {}
        self.learner = self._remote.options(num_cpus=learner_cpus, num_gpus=learner_gpus,
                                            resources=learner_resources or {}).remote(
            ["learner", "--logdir", self.logdir, "--address", f"{learner_host}:0", *gin_args], self.env)
        self.learner_node, learner_ip = self.ray.get(self.learner.node.remote())
        self.learner_address = self._await_learner_address(learner_ip)
        log.info("learner on node %s at %s", self.learner_node, self.learner_address)
        self.actors = [self._place_actor(i) for i in range(num_actors)]
        self.actor_restarts = 0
        self.policy = RestartPolicy()
        self.finished_actors: set[int] = set()

    def _await_learner_address(self, learner_ip: str, timeout_s: float = 300.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.ray.get(self.learner.read_file.remote(os.path.join(self.logdir, "learner_address")))
            if text:
                port = text.strip().rsplit(":", 1)[1]
                host = learner_ip if self.learner_host in ("0.0.0.0", "[::]") else self.learner_host
                return f"{host}:{port}"
            code = self.ray.get(self.learner.poll.remote())
            if code is not None:
                raise RuntimeError(f"the learner exited with {code} before listening; see {self.logdir}/logs")
            time.sleep(0.5)
        raise RuntimeError(f"the learner did not listen within {timeout_s:.0f} s")

    def actor_nodes(self) -> list[str]:
        """Alive nodes with CPUs for an actor, the learner's node only as a last resort."""
        nodes = [n["NodeID"] for n in self.ray.nodes()
                 if n["Alive"] and n["Resources"].get("CPU", 0) >= self.actor_cpus]
        others = [n for n in nodes if n != self.learner_node]
        if not others:
            log.warning("no node but the learner's can take actors; they share its node")
        return sorted(others or nodes)

    def _place_actor(self, index: int):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        nodes = self.actor_nodes()
        if not nodes:
            raise RuntimeError(f"no alive node has {self.actor_cpus} CPU(s) for an actor")
        node = nodes[index % len(nodes)]
        return self._remote.options(
            num_cpus=self.actor_cpus,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False)).remote(
            ["actors", "--learner_address", self.learner_address, "--actor_index", str(index),
             "--logdir", self.logdir, *self.gin_args], self.env)

    def supervise_once(self) -> int | None:
        """Restarts what died; returns the learner's exit code once it ended, else None."""
        code = self.ray.get(self.learner.poll.remote())
        if code is not None:
            return code
        for i, actor in enumerate(self.actors):
            try:
                actor_code = self.ray.get(actor.poll.remote(), timeout=30)
            except (self.ray.exceptions.RayActorError, self.ray.exceptions.GetTimeoutError):
                log.warning("actor %d's Ray actor or node is gone; placing it again", i)
                self.actors[i] = self._place_actor(i)
                self.actor_restarts += 1
                continue
            if actor_code is None or i in self.finished_actors:
                continue
            if actor_code == 2:
                raise RuntimeError(f"actor {i} exited with a configuration error; see its log in {self.logdir}/logs")
            if not self.policy.restart("actor", actor_code):
                log.warning("actor %d exited with %d by itself; it is not restarted (seed/launchers/restarts.py)",
                            i, actor_code)
                self.finished_actors.add(i)
                continue
            log.warning("actor %d exited (%s); restarting it", i, describe_exit(actor_code))
            self.ray.get(actor.restart.remote())
            self.actor_restarts += 1
        return None

    def stop(self) -> int | None:
        """Actors first, then the learner (it saves a checkpoint on SIGTERM)."""
        for actor in self.actors:
            try:
                self.ray.get(actor.stop.remote())
            except self.ray.exceptions.RayActorError:
                pass
        return self.ray.get(self.learner.stop.remote())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="seed-ray", description=__doc__.split("\n")[0])
    parser.add_argument("--address", default="auto", help="Ray cluster address ('auto', HOST:PORT, or 'local')")
    parser.add_argument("--num_actors", type=int, default=4)
    parser.add_argument("--actor_cpus", type=float, default=1)
    parser.add_argument("--learner_cpus", type=float, default=1)
    parser.add_argument("--learner_gpus", type=float, default=0)
    parser.add_argument("--learner_resources", default="{}", help='custom Ray resources as JSON, e.g. {"TPU": 1}')
    parser.add_argument("--learner_host", default="0.0.0.0", help="interface the learner listens on")
    parser.add_argument("--logdir", default="runs/ray", help="run directory on every node (a shared filesystem "
                        "collects everything in one place)")
    parser.add_argument("--gin_config", action="append", default=[])
    parser.add_argument("--gin_bindings", action="append", default=[])
    args = parser.parse_args(argv)
    if args.num_actors < 1:
        parser.error(f"--num_actors must be at least 1, got {args.num_actors}")
    try:
        learner_resources = json.loads(args.learner_resources)
    except json.JSONDecodeError as e:
        parser.error(f"--learner_resources must be JSON ({e})")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s seed-ray %(levelname)s: %(message)s")
    ray = _ray()
    ray.init(address=None if args.address == "local" else args.address)
    from seed.process import stop_on_signals
    stop = stop_on_signals()
    gin_args = [a for c in args.gin_config for a in ("--gin_config", c)]
    gin_args += [a for b in args.gin_bindings for a in ("--gin_bindings", b)]
    job = RayJob(gin_args, args.logdir, args.num_actors, args.learner_host, args.learner_cpus, args.learner_gpus,
                 learner_resources, args.actor_cpus)
    code = None
    try:
        while code is None and not stop.wait(2.0):
            code = job.supervise_once()
    finally:
        stopped = job.stop()
    return code if code is not None else (stopped or 0)


if __name__ == "__main__":
    sys.exit(main())
