"""Actors on other hosts: three network namespaces joined by veth pairs to a bridge
(a fourth namespace), the learner in one, an actor in each of the others, training
over the virtual network. Needs root and iproute2; skipped with the reason where
namespaces cannot be created."""
import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.processes import REPO_ROOT, child_env, last_progress, stop, wait_for_address, wait_until

PREFIX = f"seed{os.getpid() % 100000}"
SUBNET = "10.77.0"


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def netns_exec(namespace, args, **kwargs):
    return subprocess.Popen(["ip", "netns", "exec", namespace, *args], cwd=REPO_ROOT, **kwargs)


@pytest.fixture
def hosts():
    """{'learner': (namespace, address), 'actor0': ..., 'actor1': ...} on one bridged subnet; the hub's
    bridge port of each is `hub_port(role)`."""
    if shutil.which("ip") is None:
        pytest.skip("iproute2 ('ip') is not installed")
    probe = subprocess.run(["ip", "netns", "add", f"{PREFIX}hub"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot create network namespaces here (needs root): {probe.stderr.strip()}")
    names = {"learner": f"{PREFIX}l", "actor0": f"{PREFIX}a0", "actor1": f"{PREFIX}a1"}
    try:
        ip("-n", f"{PREFIX}hub", "link", "add", "br0", "type", "bridge")
        ip("-n", f"{PREFIX}hub", "link", "set", "br0", "up")
        result = {}
        for i, (role, namespace) in enumerate(names.items(), start=1):
            ip("netns", "add", namespace)
            # The veth's peer is created in the hub and joins its bridge.
            ip("link", "add", f"{PREFIX}v{i}", "netns", namespace, "type", "veth", "peer", "name", f"p{i}",
               "netns", f"{PREFIX}hub")
            ip("-n", f"{PREFIX}hub", "link", "set", f"p{i}", "master", "br0", "up")
            ip("-n", namespace, "addr", "add", f"{SUBNET}.{i}/24", "dev", f"{PREFIX}v{i}")
            ip("-n", namespace, "link", "set", f"{PREFIX}v{i}", "up")
            ip("-n", namespace, "link", "set", "lo", "up")
            result[role] = (namespace, f"{SUBNET}.{i}")
        yield result
    finally:
        for namespace in [*names.values(), f"{PREFIX}hub"]:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


ROLES = ("learner", "actor0", "actor1")


def set_link(role: str, up: bool) -> None:
    """Cuts or restores a host's link at the hub silently: its bridge port stops forwarding (no FIN, no
    RST, the host's own interface stays up), as a partition or a vanished host looks to the others."""
    port = f"p{ROLES.index(role) + 1}"
    subprocess.run(["bridge", "-n", f"{PREFIX}hub", "link", "set", "dev", port, "state", "3" if up else "0"],
                   check=True, capture_output=True, text=True, timeout=30)


def start_roles(hosts, tmp_path, learner_bindings=(), actor_bindings=()):
    env = dict(child_env(), SEED_AUTH_TOKEN="multi-host-secret")
    learner_ns, learner_ip = hosts["learner"]
    args = [sys.executable, "-m", "learner", "--logdir", str(tmp_path / "learner"), "--address", f"{learner_ip}:0",
            "--gin_config", "classic_vtrace.gin", "--gin_bindings", "reporting.progress_interval_s=1"]
    for binding in learner_bindings:
        args += ["--gin_bindings", binding]
    learner = netns_exec(learner_ns, args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    running = [learner]
    address = wait_for_address(tmp_path / "learner", learner)
    for i in range(2):
        namespace, _ = hosts[f"actor{i}"]
        args = [sys.executable, "-m", "actors", "--learner_address", address, "--actor_index", str(i),
                "--logdir", str(tmp_path / f"actor{i}"), "--gin_config", "classic_vtrace.gin"]
        for binding in actor_bindings:
            args += ["--gin_bindings", binding]
        running.append(netns_exec(namespace, args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return running, address


def connected(tmp_path) -> int:
    return last_progress(tmp_path / "learner").get("actors/connected", -1)


def updates(tmp_path) -> int:
    return last_progress(tmp_path / "learner").get("updates", 0)


def test_a_partitioned_actor_host_is_dropped_by_keepalive_and_streams_again_when_the_link_returns(hosts, tmp_path):
    """Silence, not a closed socket: the learner frees the host's slots within its keepalive bound (the
    idle timeout is 300 s) and trains on with the other actor; healed, the actor reconnects. Then the
    learner's host vanishes the same way: both actors notice within theirs, and stream again after."""
    keepalive = ["keepalive_s=1", "keepalive_timeout_s=2"]
    running, _ = start_roles(hosts, tmp_path, [f"service.{k}" for k in keepalive],
                             [f"run_actor.{k}" for k in keepalive] + ["run_actor.max_backoff_s=1"])
    try:
        wait_until(lambda: updates(tmp_path) >= 10 and connected(tmp_path) == 2, 180, "both actors training",
                   poll_s=0.5)
        set_link("actor1", up=False)
        cut = time.monotonic()
        wait_until(lambda: connected(tmp_path) == 1, 30, "the learner to drop the partitioned actor", poll_s=0.2)
        assert time.monotonic() - cut < 15  # keepalive 1 s + timeout 2 s, and a progress line a second
        before = updates(tmp_path)
        wait_until(lambda: updates(tmp_path) > before + 5, 60, "training to go on with one actor", poll_s=0.5)
        set_link("actor1", up=True)
        wait_until(lambda: connected(tmp_path) == 2, 60, "the healed actor to stream again", poll_s=0.5)

        set_link("learner", up=False)
        cut = time.monotonic()
        def lost(i):
            logs = list((tmp_path / f"actor{i}" / "logs").glob("*.log"))
            return logs and "stream lost" in logs[0].read_text()
        wait_until(lambda: lost(0) and lost(1), 30, "both actors to notice the vanished learner", poll_s=0.2)
        assert time.monotonic() - cut < 15
        assert all(p.poll() is None for p in running)  # they back off and wait; nothing gave up or crashed
        set_link("learner", up=True)
        before = updates(tmp_path)
        wait_until(lambda: connected(tmp_path) == 2 and updates(tmp_path) > before + 5, 90,
                   "both actors streaming and training again", poll_s=0.5)
    finally:
        for role in ROLES:
            set_link(role, up=True)
        assert stop(running) == [0, 0, 0]


def test_actors_in_other_namespaces_train_with_the_learner_over_a_bridge(hosts, tmp_path):
    env = dict(child_env(), SEED_AUTH_TOKEN="multi-host-secret")
    learner_ns, learner_ip = hosts["learner"]
    learner = netns_exec(learner_ns, [sys.executable, "-m", "learner", "--logdir", str(tmp_path / "learner"),
                                      "--address", f"{learner_ip}:0", "--gin_config", "classic_vtrace.gin",
                                      "--gin_bindings", "reporting.progress_interval_s=1"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    running = [learner]
    try:
        address = wait_for_address(tmp_path / "learner", learner)
        assert address.startswith(learner_ip)  # it listens on the virtual network, not loopback
        for i in range(2):
            namespace, _ = hosts[f"actor{i}"]
            running.append(netns_exec(namespace, [sys.executable, "-m", "actors", "--learner_address", address,
                                                  "--actor_index", str(i), "--logdir", str(tmp_path / f"actor{i}"),
                                                  "--gin_config", "classic_vtrace.gin"],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        def trained():
            record = last_progress(tmp_path / "learner")
            return record.get("updates", 0) >= 20 and record.get("actors/connected") == 2

        wait_until(trained, 180, "20 updates with both actors connected", poll_s=0.5)
        # Both actors really sit in other namespaces: neither can reach the learner on loopback there.
        port = address.rsplit(":", 1)[1]
        probe = subprocess.run(["ip", "netns", "exec", hosts["actor0"][0], sys.executable, "-c",
                                f"import socket; socket.create_connection(('127.0.0.1', {port}), 2)"],
                               capture_output=True, text=True, timeout=30)
        assert probe.returncode != 0 and "refused" in probe.stderr.lower()
    finally:
        assert stop(running) == [0, 0, 0]
