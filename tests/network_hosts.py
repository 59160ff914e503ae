"""Hosts on a virtual network for the multi-host tests and the link-fault benchmarks: one network
namespace per host, each joined by a veth pair to a bridge in a hub namespace, so processes in them
talk over real TCP on a subnet, not loopback. Link faults are made where a real network makes them:
a partition is the hub's bridge port of a host no longer forwarding (packets vanish, no FIN or RST);
loss is an nftables rule in the host's namespace that drops a random share of the packets it sends and
receives (the kernel here has no `tc netem`). Needs root and iproute2; loss needs nftables (`nft`)."""
import json
import os
import re
import shutil
import subprocess
import sys

from tests.processes import REPO_ROOT, child_env, wait_for_address

SUBNET = "10.77.0"
_TABLE = "seed_link_faults"


def _run(*args: str) -> str:
    return subprocess.run(list(args), check=True, capture_output=True, text=True, timeout=30).stdout


def unavailable() -> str | None:
    """Why namespace hosts cannot be made here, or None where they can."""
    if shutil.which("ip") is None:
        return "iproute2 ('ip') is not installed"
    probe = f"seedprobe{os.getpid() % 100000}"
    result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if result.returncode != 0:
        return f"cannot create network namespaces here (needs root): {result.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def loss_unavailable() -> str | None:
    """Why packet loss cannot be made here, or None where it can."""
    return None if shutil.which("nft") else "nftables ('nft') is not installed (apt-get install nftables)"


class Hosts:
    """Namespaces named after `roles` on one bridged subnet: role i has the address 10.77.0.(i+1).
    A context manager; leaving it deletes every namespace it made, whatever runs in them."""

    def __init__(self, roles=("learner", "actor0", "actor1"), prefix: str | None = None):
        self.roles = tuple(roles)
        self.prefix = prefix or f"seed{os.getpid() % 100000}"
        self.hub = f"{self.prefix}hub"
        self._made: list[str] = []

    def namespace(self, role: str) -> str:
        return f"{self.prefix}{role}"

    def address(self, role: str) -> str:
        return f"{SUBNET}.{self.roles.index(role) + 1}"

    def __enter__(self) -> "Hosts":
        try:
            self._add(self.hub)
            _run("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
            _run("ip", "-n", self.hub, "link", "set", "br0", "up")
            for i, role in enumerate(self.roles, start=1):
                namespace = self.namespace(role)
                self._add(namespace)
                # The veth's peer is created in the hub and joins its bridge.
                _run("ip", "link", "add", f"{self.prefix}v{i}", "netns", namespace, "type", "veth", "peer", "name",
                     f"p{i}", "netns", self.hub)
                _run("ip", "-n", self.hub, "link", "set", f"p{i}", "master", "br0", "up")
                _run("ip", "-n", namespace, "addr", "add", f"{self.address(role)}/24", "dev", f"{self.prefix}v{i}")
                _run("ip", "-n", namespace, "link", "set", f"{self.prefix}v{i}", "up")
                _run("ip", "-n", namespace, "link", "set", "lo", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _add(self, namespace: str) -> None:
        _run("ip", "netns", "add", namespace)
        self._made.append(namespace)

    def __exit__(self, *exc) -> None:
        for namespace in reversed(self._made):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        self._made.clear()

    def command(self, role: str, args: list[str]) -> list[str]:
        """`args` run on `role`'s host (`ip netns exec` execs it: the pid is the command's own)."""
        return ["ip", "netns", "exec", self.namespace(role), *args]

    def popen(self, role: str, args: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.command(role, args), **kwargs)

    def set_link(self, role: str, up: bool) -> None:
        """Cuts or restores a host's link at the hub silently: its bridge port stops forwarding (the
        host's own interface stays up), as a partition or a vanished host looks to the others."""
        port = f"p{self.roles.index(role) + 1}"
        _run("bridge", "-n", self.hub, "link", "set", "dev", port, "state", "3" if up else "0")

    def set_loss(self, role: str, percent: float) -> None:
        """Drops `percent` % of the packets `role`'s host receives and, independently, of those it sends
        (0 removes the rule). Counted: `dropped(role)` says how many were dropped."""
        if not 0 <= percent < 100:
            raise ValueError(f"loss must be in [0, 100) percent, not {percent}")
        namespace = self.namespace(role)
        subprocess.run(["ip", "netns", "exec", namespace, "nft", "delete", "table", "inet", _TABLE],
                       capture_output=True)
        if percent == 0:
            return
        # numgen draws 0..9999 per packet: drop below percent x 100, so 0.5 % is expressible.
        threshold = round(percent * 100)
        script = (f"table inet {_TABLE} {{\n"
                  f"  chain receive {{ type filter hook input priority 0; numgen random mod 10000 < {threshold} "
                  f"counter drop; }}\n"
                  f"  chain send {{ type filter hook output priority 0; numgen random mod 10000 < {threshold} "
                  f"counter drop; }}\n}}\n")
        subprocess.run(["ip", "netns", "exec", namespace, "nft", "-f", "-"], input=script, check=True,
                       capture_output=True, text=True, timeout=30)

    def dropped(self, role: str) -> int:
        """Packets the loss rule on `role`'s host has dropped so far (both directions)."""
        result = subprocess.run(["ip", "netns", "exec", self.namespace(role), "nft", "list", "table", "inet", _TABLE],
                                capture_output=True, text=True, timeout=30)
        return sum(int(n) for n in re.findall(r"counter packets (\d+)", result.stdout))


def start_training(hosts: Hosts, logdir, learner_bindings=(), actor_bindings=(), config="classic_vtrace.gin",
                   token="multi-host-secret"):
    """The learner on the 'learner' host and actor i on host 'actor{i}' (every other role), each with
    its own logdir under `logdir` (learner/, actor0/, ...) and an auth token, as on separate machines.
    Returns the processes, learner first, and the learner's address."""
    env = dict(child_env(), SEED_AUTH_TOKEN=token)
    args = [sys.executable, "-m", "learner", "--logdir", os.path.join(logdir, "learner"),
            "--address", f"{hosts.address('learner')}:0", "--gin_config", config,
            "--gin_bindings", "reporting.progress_interval_s=1"]
    for binding in learner_bindings:
        args += ["--gin_bindings", binding]
    running = [hosts.popen("learner", args, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)]
    address = wait_for_address(os.path.join(logdir, "learner"), running[0])
    for i, role in enumerate(r for r in hosts.roles if r != "learner"):
        args = [sys.executable, "-m", "actors", "--learner_address", address, "--actor_index", str(i),
                "--logdir", os.path.join(logdir, role), "--gin_config", config]
        for binding in actor_bindings:
            args += ["--gin_bindings", binding]
        running.append(hosts.popen(role, args, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL))
    return running, address


def actor_reports(logdir, index: int, since: float = 0.0) -> list[dict]:
    """Actor `index`'s progress reports (under `start_training`'s layout) written after `since` (unix time)."""
    path = os.path.join(logdir, f"actor{index}", "actors", f"actor_{index}.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [r for r in map(json.loads, filter(str.strip, f)) if r["time"] > since]
