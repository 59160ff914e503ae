"""Actors on other hosts: three network namespaces joined by veth pairs to a bridge
(a fourth namespace), the learner in one, an actor in each of the others, training
over the virtual network. Needs root and iproute2; skipped with the reason where
namespaces cannot be created."""
import subprocess
import sys
import time

import pytest

from tests.network_hosts import Hosts, loss_unavailable, start_training, unavailable
from tests.processes import last_progress, stop, wait_until

ROLES = ("learner", "actor0", "actor1")


@pytest.fixture
def hosts():
    """A learner host and two actor hosts (`tests/network_hosts.py`) on one bridged subnet."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with Hosts(ROLES) as made:
        yield made


def connected(tmp_path) -> int:
    return last_progress(tmp_path / "learner").get("actors/connected", -1)


def updates(tmp_path) -> int:
    return last_progress(tmp_path / "learner").get("updates", 0)


def test_a_partitioned_actor_host_is_dropped_by_keepalive_and_streams_again_when_the_link_returns(hosts, tmp_path):
    """Silence, not a closed socket: the learner frees the host's slots within its keepalive bound (the
    idle timeout is 300 s) and trains on with the other actor; healed, the actor reconnects. Then the
    learner's host vanishes the same way: both actors notice within theirs, and stream again after."""
    keepalive = ["keepalive_s=1", "keepalive_timeout_s=2"]
    running, _ = start_training(hosts, tmp_path, [f"service.{k}" for k in keepalive],
                             [f"run_actor.{k}" for k in keepalive] + ["run_actor.max_backoff_s=1"])
    try:
        wait_until(lambda: updates(tmp_path) >= 10 and connected(tmp_path) == 2, 180, "both actors training",
                   poll_s=0.5)
        hosts.set_link("actor1", up=False)
        cut = time.monotonic()
        wait_until(lambda: connected(tmp_path) == 1, 30, "the learner to drop the partitioned actor", poll_s=0.2)
        assert time.monotonic() - cut < 15  # keepalive 1 s + timeout 2 s, and a progress line a second
        before = updates(tmp_path)
        wait_until(lambda: updates(tmp_path) > before + 5, 60, "training to go on with one actor", poll_s=0.5)
        hosts.set_link("actor1", up=True)
        wait_until(lambda: connected(tmp_path) == 2, 60, "the healed actor to stream again", poll_s=0.5)

        hosts.set_link("learner", up=False)
        cut = time.monotonic()
        def lost(i):
            logs = list((tmp_path / f"actor{i}" / "logs").glob("*.log"))
            return logs and "stream lost" in logs[0].read_text()
        wait_until(lambda: lost(0) and lost(1), 30, "both actors to notice the vanished learner", poll_s=0.2)
        assert time.monotonic() - cut < 15
        assert all(p.poll() is None for p in running)  # they back off and wait; nothing gave up or crashed
        hosts.set_link("learner", up=True)
        before = updates(tmp_path)
        wait_until(lambda: connected(tmp_path) == 2 and updates(tmp_path) > before + 5, 90,
                   "both actors streaming and training again", poll_s=0.5)
    finally:
        for role in ROLES:
            hosts.set_link(role, up=True)
        assert stop(running) == [0, 0, 0]


def test_actors_in_other_namespaces_train_with_the_learner_over_a_bridge(hosts, tmp_path):
    running, address = start_training(hosts, tmp_path)
    try:
        assert address.startswith(hosts.address("learner"))  # it listens on the virtual network, not loopback
        wait_until(lambda: updates(tmp_path) >= 20 and connected(tmp_path) == 2, 180,
                   "20 updates with both actors connected", poll_s=0.5)
        # Both actors really sit in other namespaces: neither can reach the learner on loopback there.
        port = address.rsplit(":", 1)[1]
        probe = subprocess.run(hosts.command("actor0", [sys.executable, "-c",
                               f"import socket; socket.create_connection(('127.0.0.1', {port}), 2)"]),
                               capture_output=True, text=True, timeout=30)
        assert probe.returncode != 0 and "refused" in probe.stderr.lower()
    finally:
        assert stop(running) == [0, 0, 0]


def test_training_goes_on_with_packet_loss_on_one_actor_host_and_the_benchmark_measures_it(tmp_path):
    """benchmarks/link_loss.py, short: actor1's host drops 2 % of the packets it sends and, apart, of those
    it receives, beside actor0 on a clean link. TCP retransmits: no stream is lost or dropped by the
    keepalive (at the 20 s defaults), both actors keep stepping, the learner trains on."""
    reason = unavailable() or loss_unavailable()
    if reason:
        pytest.skip(reason)
    from benchmarks.link_loss import measure
    clean, lossy = measure([0.0, 2.0], seconds=8, warmup_s=2, logdir=str(tmp_path))
    assert clean["packets_dropped"] == 0 < lossy["packets_dropped"]  # the rule really dropped packets
    for window in (clean, lossy):
        assert window["actors_connected"] == 2 and window["streams_lost"] == 0, window
        assert window["clean_actor"]["env_steps_per_s"] > 0 and window["lossy_actor"]["env_steps_per_s"] > 0
        assert window["learner_env_frames_per_s"] > 0 and window["lossy_to_clean_steps_ratio"] > 0
