"""Which role this replica plays in a cluster job, from the environment the
cluster manager sets: Vertex AI's CLUSTER_SPEC, or TF_CONFIG.

The learner is the first worker pool's only replica (Vertex AI `workerpool0`,
TF_CONFIG `chief` or `master`); every replica of the second pool
(`workerpool1`, `worker`) runs actors that connect to it.
"""
import json
from collections.abc import Mapping
from typing import NamedTuple

LEARNER_POOLS = ("workerpool0", "chief", "master")
ACTOR_POOLS = ("workerpool1", "worker")


class ClusterError(ValueError):
    """The cluster description is missing or does not fit seed's two pools."""


class ClusterRole(NamedTuple):
    role: str  # 'learner' or 'actor'
    replica_index: int  # within the role's pool
    learner_address: str  # host:port the actors dial
    num_actor_replicas: int

    @property
    def learner_port(self) -> int:
        return int(self.learner_address.rsplit(":", 1)[1])


def resolve_role(environ: Mapping[str, str]) -> ClusterRole:
    """Reads CLUSTER_SPEC (preferred: Vertex AI sets it for every custom job) or TF_CONFIG."""
    for variable in ("CLUSTER_SPEC", "TF_CONFIG"):
        if environ.get(variable):
            try:
                spec = json.loads(environ[variable])
            except json.JSONDecodeError as e:
                raise ClusterError(f"{variable} is not JSON ({e})") from None
            return _role_from_spec(spec, variable)
    raise ClusterError("neither CLUSTER_SPEC nor TF_CONFIG is set: seed-launch runs inside a cluster job "
                       "(Vertex AI sets CLUSTER_SPEC); on one machine use ./run_local.sh")


def _role_from_spec(spec: dict, variable: str) -> ClusterRole:
    try:
        cluster, task = spec["cluster"], spec["task"]
        task_type, index = task["type"], int(task.get("index", 0))
    except (KeyError, TypeError, ValueError) as e:
        raise ClusterError(f"{variable} needs 'cluster' and 'task' with 'type' and 'index' "
                           f"({e!r} is missing)") from None
    learner_pool = _first_present(cluster, LEARNER_POOLS)
    if learner_pool is None or len(cluster[learner_pool]) != 1:
        raise ClusterError(f"{variable}: seed needs exactly one learner replica in one of {LEARNER_POOLS}, "
                           f"got pools {sorted(cluster)}")
    actor_pool = _first_present(cluster, ACTOR_POOLS)
    num_actor_replicas = len(cluster[actor_pool]) if actor_pool else 0
    learner_address = cluster[learner_pool][0]
    if ":" not in learner_address:
        raise ClusterError(f"{variable}: learner address {learner_address!r} has no port")
    if task_type in LEARNER_POOLS:
        return ClusterRole("learner", index, learner_address, num_actor_replicas)
    if task_type in ACTOR_POOLS:
        if not 0 <= index < num_actor_replicas:
            raise ClusterError(f"{variable}: task index {index} is outside the {num_actor_replicas} actor replicas")
        return ClusterRole("actor", index, learner_address, num_actor_replicas)
    raise ClusterError(f"{variable}: task type {task_type!r} is neither a learner pool {LEARNER_POOLS} "
                       f"nor an actor pool {ACTOR_POOLS}")


def _first_present(cluster: dict, names) -> str | None:
    return next((name for name in names if cluster.get(name)), None)


def local_path(path: str) -> str:
    """gs://bucket/dir -> /gcs/bucket/dir, where Vertex AI mounts Cloud Storage (FUSE)."""
    return "/gcs/" + path[len("gs://"):] if path.startswith("gs://") else path
