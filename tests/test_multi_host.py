"""Actors on other hosts: three network namespaces joined by veth pairs to a bridge
(a fourth namespace), the learner in one, an actor in each of the others, training
over the virtual network. Needs root and iproute2; skipped with the reason where
namespaces cannot be created."""
import os
import shutil
import subprocess
import sys

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
    """{'learner': (namespace, address), 'actor0': ..., 'actor1': ...} on one bridged subnet."""
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
