"""seed-launch: the container's entry point in a cluster job.

Resolves this replica's role from CLUSTER_SPEC / TF_CONFIG (seed/launchers/cluster.py),
then runs the learner, or `--actors_per_replica` actor processes that dial the
learner's address. A process that exits is restarted as every launcher does it
(seed/launchers/restarts.py): an actor killed by a signal, the learner killed or
crashed (from its latest checkpoint, at most `--max_learner_restarts` times, for
clusters that do not restart a failed replica themselves). Any other exit ends
the replica with its code (0: budget reached or stopped; 1: an actor found no
learner, as at the end of training; 2: a configuration error).
The roles run as `python -m learner|actors` processes, so this module imports
neither.
"""
import argparse
import logging
import os
import subprocess
import sys
import time

from seed.launchers.cluster import ClusterError, ClusterRole, local_path, resolve_role
from seed.launchers.restarts import RestartPolicy
from seed.process import setup_logging, stop_on_signals, stop_processes

log = logging.getLogger("seed.launchers.launch")


def role_commands(role: ClusterRole, gin_args: list[str], logdir: str, actors_per_replica: int,
                  listen_host: str) -> list[list[str]]:
    """The processes this replica runs, as argument lists."""
    if role.role == "learner":
        return [[sys.executable, "-m", "learner", "--logdir", logdir,
                 "--address", f"{listen_host}:{role.learner_port}", *gin_args]]
    first = role.replica_index * actors_per_replica
    return [[sys.executable, "-m", "actors", "--logdir", logdir, "--learner_address", role.learner_address,
             "--actor_index", str(first + i), *gin_args] for i in range(actors_per_replica)]


def supervise(commands: list[list[str]], role: str, max_learner_restarts: int = 3,
              max_restart_backoff_s: float = 30.0) -> int:
    """Runs the commands until one exits for good or we are told to stop, restarting by RestartPolicy."""
    stop = stop_on_signals()
    policy = RestartPolicy(max_learner_restarts, max_backoff_s=max_restart_backoff_s)
    processes = [subprocess.Popen(c) for c in commands]
    restart_at = [None] * len(commands)  # when a dead process is started again; the others run on meanwhile
    try:
        while not stop.wait(0.5):
            now = time.monotonic()
            for i, p in enumerate(processes):
                if restart_at[i] is not None:
                    if now >= restart_at[i]:
                        processes[i], restart_at[i] = subprocess.Popen(commands[i]), None
                    continue
                code = p.poll()
                if code is None:
                    continue
                if policy.restart(role, code):
                    reason = f"died from signal {-code}" if code < 0 else f"exited with {code}"
                    wait = policy.backoff_s(i)
                    log.warning("%s process %d %s; restarting it in %.0f s%s", role, i, reason, wait,
                                f" (restart {policy.learner_restarts} of {max_learner_restarts}, from its latest "
                                "checkpoint)" if role == "learner" else "")
                    restart_at[i] = now + wait
                    continue
                log.info("process %d exited with %d; stopping this replica", i, code)
                return code
        return 0
    finally:
        stop_processes(processes, timeout_s=30)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seed-launch", description=__doc__.split("\n")[0])
    parser.add_argument("--gin_config", action="append", default=[])
    parser.add_argument("--gin_bindings", action="append", default=[])
    parser.add_argument("--actors_per_replica", type=int, default=4)
    parser.add_argument("--logdir", default=None,
                        help="run directory (gs:// paths map to Vertex AI's /gcs mount); default $AIP_MODEL_DIR")
    parser.add_argument("--listen_host", default="0.0.0.0",
                        help="interface the learner listens on (its port comes from the cluster spec)")
    parser.add_argument("--max_learner_restarts", type=int, default=3,
                        help="restarts of a learner that died from a signal or crashed (0: none)")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.actors_per_replica < 1:
        parser.error(f"--actors_per_replica must be at least 1, got {args.actors_per_replica}")
    if args.max_learner_restarts < 0:
        parser.error(f"--max_learner_restarts must be 0 or more, got {args.max_learner_restarts}")
    try:
        role = resolve_role(os.environ)
    except ClusterError as e:
        print(f"seed-launch: {e}", file=sys.stderr)
        return 2
    logdir = local_path(args.logdir or os.environ.get("AIP_MODEL_DIR") or "runs/cluster")
    name = "launch_learner" if role.role == "learner" else f"launch_actors_{role.replica_index}"
    setup_logging(logdir, name, verbose=True)  # a cluster job's log: every start and restart
    log.info("this replica: %s %d of the job; learner at %s; %d actor replicas", role.role, role.replica_index,
             role.learner_address, role.num_actor_replicas)
    gin_args = [a for c in args.gin_config for a in ("--gin_config", c)]
    gin_args += [a for b in args.gin_bindings for a in ("--gin_bindings", b)]
    commands = role_commands(role, gin_args, logdir, args.actors_per_replica, args.listen_host)
    return supervise(commands, role.role, args.max_learner_restarts)


if __name__ == "__main__":
    sys.exit(main())
