"""The local launcher behind ./run_local.sh: one learner and NUM_ACTORS actor processes on this machine.

run_local.sh makes the .venv (or the container, with --docker) and then runs this module with its own
arguments; `./run_local.sh --help` describes them. This module picks the run directory (the newest run
of the same game and agent with a checkpoint is resumed unless told otherwise), starts the roles as
`python -m learner|actors` processes, and supervises them by the rule every launcher shares
(seed/launchers/restarts.py). Ctrl-C, SIGTERM, a closed terminal or a closed pipe stops every process
within seconds, the learner with a checkpoint, and says what the same command will resume from.
It imports neither role, so it starts in a fraction of a second.
"""
import argparse
import dataclasses
import datetime
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

from seed.launchers.restarts import RestartPolicy, describe_exit
from seed.process import stop_processes

PREFIX = "run_local.sh"
CONFIG_DIR = "seed/configs"


class UsageError(Exception):
    """A bad command line: one line, exit code 2."""


def say(message: str) -> None:
    """One line of the launcher's own to stderr; a reader that went away (`| head`) is not an error."""
    try:
        print(f"{PREFIX}: {message}", file=sys.stderr, flush=True)
    except (BrokenPipeError, OSError):
        pass


@dataclasses.dataclass
class Options:
    env: str
    agent: str
    num_actors: int
    envs_per_actor: int
    config: str
    game: str = ""
    game_given: bool = False  # by --game or a GAME binding; else the configs' GAME macro
    logdir: str = ""
    new: bool = False
    resume_with_changes: bool = False
    frames: int | None = None
    gpu: bool = False
    verbose: bool = False
    tensorboard: bool = False
    configs: list[str] = dataclasses.field(default_factory=list)  # the run's gin files, in order
    bindings: list[str] = dataclasses.field(default_factory=list)

    def gin_args(self) -> list[str]:
        args = [a for c in self.configs for a in ("--gin_config", c)]
        game = [f"GAME='{self.game}'"] if self.game_given else []
        bindings = [*self.bindings, *game, f"run_actor.num_envs={self.envs_per_actor}"]
        if self.frames is not None:
            bindings.append(f"training.total_environment_frames={self.frames}")
        if self.gpu:
            bindings.append("inference.device='gpu'")
        return args + [a for b in bindings for a in ("--gin_bindings", b)]


def parse_frames(text: str) -> int:
    match = re.fullmatch(r"([0-9][0-9_]*)([kKmM]?)", text)
    if not match:
        raise UsageError(f"--frames takes env frames like 10M, 500k or 2_000_000, got '{text}'")
    frames = int(match.group(1).replace("_", "")) * {"": 1, "k": 1000, "m": 1_000_000}[match.group(2).lower()]
    if frames <= 0:
        raise UsageError("--frames must be more than 0")
    return frames


def positive(name: str, text: str) -> int:
    if not re.fullmatch(r"[1-9][0-9]*", text):
        raise UsageError(f"{name} must be a positive integer, got '{text}'")
    return int(text)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(f"{message} (see ./run_local.sh --help)")


def parse_args(argv: list[str]) -> Options:
    if len(argv) < 4:
        raise UsageError("need ENV AGENT NUM_ACTORS ENVS_PER_ACTOR (see ./run_local.sh --help)")
    env, agent = argv[0], argv[1]
    num_actors, envs = positive("NUM_ACTORS", argv[2]), positive("ENVS_PER_ACTOR", argv[3])
    config = f"{CONFIG_DIR}/{env}_{agent}.gin"
    if not os.path.isfile(config):
        available = " ".join(sorted(os.path.basename(p)[:-4] for p in glob.glob(f"{CONFIG_DIR}/*.gin")
                                    if "sticky" not in p))
        raise UsageError(f"no config for ENV '{env}' and AGENT '{agent}' ({config}); available: {available}")
    parser = _Parser(prog="run_local.sh", add_help=False)
    parser.add_argument("--game", default="")
    parser.add_argument("--frames")
    parser.add_argument("--logdir", default="")
    for flag in ("--new", "--resume_with_changes", "--gpu", "--verbose", "--tensorboard"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--gin_config", action="append", default=[])
    parser.add_argument("--gin_bindings", action="append", default=[])
    rest = argv[4:]
    unknown = [a for a in rest if a.startswith("-") and a.split("=")[0] not in parser._option_string_actions]
    if unknown:
        raise UsageError(f"unknown option '{unknown[0]}' (see ./run_local.sh --help)")
    args = parser.parse_args(rest)
    options = Options(env, agent, num_actors, envs, config, game=args.game, logdir=args.logdir, new=args.new,
                      resume_with_changes=args.resume_with_changes, gpu=args.gpu, verbose=args.verbose,
                      tensorboard=args.tensorboard, configs=[config, *args.gin_config])
    if args.frames is not None:
        options.frames = parse_frames(args.frames)
    for binding in args.gin_bindings:
        # The game names the run directory: it comes from --game (or a GAME binding) only.
        game = re.fullmatch(r"\s*GAME\s*=\s*['\"]([^'\"]*)['\"]\s*", binding)
        if game:
            options.game = game.group(1)
            options.game_given = True
        elif re.match(r"\s*([A-Za-z_]+\.(game|env_id)|create_\w+_envs\.(task|level|scenario))\s*=", binding):
            raise UsageError(f"'{binding}' would train another game than the run directory says; use --game NAME")
        else:
            options.bindings.append(binding)
    if options.new and options.logdir and os.path.isfile(os.path.join(options.logdir, "checkpoints", "checkpoint")):
        raise UsageError(f"--new, but --logdir {options.logdir} holds a run with a checkpoint: name a new "
                         "directory, or drop --new to resume it")
    if options.game:
        options.game_given = True
    else:
        options.game = configured_game(options.configs)
    return options


def config_game(path: str) -> str | None:
    """The GAME macro a gin file sets (the last one, as in gin), or None where it sets none."""
    try:
        with open(path) as f:
            found = re.findall(r"^GAME\s*=\s*['\"]([^'\"]+)['\"]", f.read(), flags=re.M)
    except OSError:
        return None
    return found[-1] if found else None


def configured_game(configs: list[str]) -> str:
    """The GAME macro every env family's config sets; the last file that sets it wins, as in gin."""
    game = ""
    for path in configs:
        if not os.path.isfile(path):
            path = os.path.join(CONFIG_DIR, os.path.basename(path))  # a bare name, as gin_setup resolves it
        game = config_game(path) or game
    if not game:
        raise UsageError(f"{configs[0]} sets no GAME macro (GAME = 'Name'); every env family's config needs one")
    return game


def run_directory(options: Options) -> tuple[str, bool]:
    """The run directory and whether this launch made it: --logdir, else the newest run of this game and
    agent with a checkpoint (else the newest), else a new one."""
    if options.logdir:
        return options.logdir, not os.path.exists(options.logdir)
    prefix = f"runs/{options.game}_{options.agent}_"
    candidates = sorted(glob.glob(glob.escape(prefix) + "*"), reverse=True)
    # A start stopped before its first checkpoint must not hide the run that trained.
    trained = next((d for d in candidates if os.path.isfile(os.path.join(d, "checkpoints", "checkpoint"))), None)
    latest = trained or (candidates[0] if candidates else None)
    if not options.new and latest:
        skipped = f"; {candidates[0]} is newer but has no checkpoint" if latest != candidates[0] else ""
        say(f"resuming {latest} (--new starts a fresh run{skipped})")
        return latest, False
    return prefix + datetime.datetime.now().strftime("%Y%m%d_%H%M%S"), True


def report_checkpoint(logdir: str) -> None:
    """What the same command will resume from, read from the learner's checkpoints/latest.json."""
    try:
        with open(os.path.join(logdir, "checkpoints", "latest.json")) as f:
            latest = json.load(f)
    except (OSError, ValueError):
        say(f"stopped; {logdir} has no checkpoint, so the same command starts this run from the beginning "
            "(the learner saves one every training.checkpoint_interval_s and when it stops cleanly)")
        return
    if latest.get("budget_reached"):
        say(f"done: trained to its budget, {latest['environment_frames']:,} environment frames "
            f"({latest['checkpoint']}); the same command with a larger --frames trains it on")
        return
    age = time.time() - latest["time"]
    age = f"{age:.0f} s" if age < 120 else f"{age / 60:.0f} min"
    say(f"stopped; the last checkpoint holds {latest['environment_frames']:,} environment frames, saved {age} ago "
        f"({latest['checkpoint']}); run the same command to resume from it")


class Stopped(Exception):
    """A signal asked the run to stop."""


class LocalRun:
    """The processes of one run and their supervision."""

    def __init__(self, options: Options, logdir: str, python: str):
        self.options, self.logdir, self.python = options, logdir, python
        role_args = ["--verbose"] if options.verbose else []
        self.learner_args = role_args + (["--resume_with_changes"] if options.resume_with_changes else [])
        self.actor_args = role_args
        self.learner: subprocess.Popen | None = None
        self.actors: list[subprocess.Popen] = []
        self.others: list[subprocess.Popen] = []  # TensorBoard

    def processes(self) -> list[subprocess.Popen]:
        return [p for p in (self.learner, *self.actors, *self.others) if p is not None]

    def start_learner(self, address: str) -> None:
        self.learner = subprocess.Popen([self.python, "-m", "learner", "--logdir", self.logdir, "--address", address,
                                         *self.learner_args, *self.options.gin_args()])

    def start_actor(self, index: int, address: str) -> subprocess.Popen:
        with open(os.path.join(self.logdir, "logs", f"actor_{index}.stdout"), "ab") as out:
            return subprocess.Popen([self.python, "-m", "actors", "--logdir", self.logdir, "--learner_address",
                                     address, "--actor_index", str(index), *self.actor_args,
                                     *self.options.gin_args()], stdout=out, stderr=subprocess.STDOUT)

    def wait_for_address(self, timeout_s: float = 120.0) -> str | None:
        """The learner's address once it listens; None if it exited first."""
        path = os.path.join(self.logdir, "learner_address")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if os.path.isfile(path):
                with open(path) as f:
                    return f.read().strip()
            if self.learner.poll() is not None:
                return None
            time.sleep(0.1)
        raise TimeoutError("learner did not start listening within 120 s")

    def start_tensorboard(self) -> None:
        # Port 0 lets the OS pick a free port that TensorBoard then binds (a race only with another process
        # binding in the same instant). --load_fast=false: no separate data server, which outlived it on Ctrl-C.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with open(os.path.join(self.logdir, "logs", "tensorboard.stdout"), "ab") as out:
            self.others.append(subprocess.Popen(
                [self.python, "-m", "tensorboard.main", "--logdir", self.logdir, "--host", "127.0.0.1", "--port",
                 str(port), "--load_fast=false"], stdout=out, stderr=subprocess.STDOUT))
        say(f"tensorboard at http://127.0.0.1:{port}/ (log in {self.logdir}/logs/tensorboard.stdout)")

    def stop_all(self) -> None:
        say("stopping every process (the learner saves a checkpoint if it still can)")
        stop_processes(self.processes(), timeout_s=10)
        report_checkpoint(self.logdir)

    def supervise(self, address: str, policy: RestartPolicy) -> int:
        """Until the learner exits for good or every actor has; restarts by `policy`. Returns the exit code."""
        restart_at: dict[int, float] = {}  # actor index -> when it is started again
        while True:
            time.sleep(1.0)
            code = self.learner.poll()
            if code is not None:
                if not policy.restart("learner", code):
                    if code not in (0, 2):
                        say(f"the learner died ({describe_exit(code)}) after {policy.learner_restarts} restarts; "
                            f"giving up (SEED_LEARNER_RESTARTS={policy.max_learner_restarts})")
                    return code
                say(f"the learner died ({describe_exit(code)}); restarting it from its latest checkpoint on "
                    f"{address} (restart {policy.learner_restarts} of {policy.max_learner_restarts}; its log: "
                    f"{self.logdir}/logs)")
                time.sleep(policy.backoff_s("learner"))
                remove_address_file(self.logdir)
                self.start_learner(address)
                continue
            now = time.monotonic()
            for i, actor in enumerate(self.actors):
                if i in restart_at:
                    if now >= restart_at.pop(i):
                        self.actors[i] = self.start_actor(i, address)
                    continue
                code = actor.poll()
                if code is not None and policy.restart("actor", code):
                    say(f"actor_{i} died ({describe_exit(code)}); restarting it")
                    restart_at[i] = now + policy.backoff_s(f"actor_{i}")
            if restart_at or any(a.poll() is None for a in self.actors):
                continue
            code = self.actors[0].returncode
            # An actor exits 0 only when a signal stopped it: the Ctrl-C sent to the whole process group
            # reached the actors before this launcher's handler ran (seen under load). A stop, not a failure.
            if code == 0:
                raise Stopped()
            said = last_line(os.path.join(self.logdir, "logs", "actor_0.stdout"))
            say(f"every actor has exited; actor_0 said: {said}")
            return code


def remove_address_file(logdir: str) -> None:
    """A stale address from an earlier learner must not be read as the new one's."""
    try:
        os.remove(os.path.join(logdir, "learner_address"))
    except FileNotFoundError:
        pass


def last_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _raise_stopped(signum, frame):
    raise Stopped()


def main(argv: list[str] | None = None) -> int:
    """`--check ARGS` only checks the command line (run_local.sh does so with the system Python before it
    makes the .venv, so that a typo is named at once on a fresh machine)."""
    argv = sys.argv[1:] if argv is None else argv
    check_only = argv[:1] == ["--check"]
    try:
        options = parse_args(argv[1:] if check_only else argv)
        restarts = os.environ.get("SEED_LEARNER_RESTARTS", "3")
        if not restarts.isdigit():
            raise UsageError(f"SEED_LEARNER_RESTARTS must be a count, got '{restarts}'")
    except UsageError as e:
        say(str(e))
        return 2
    if check_only:
        return 0
    logdir, fresh = run_directory(options)
    os.makedirs(os.path.join(logdir, "logs"), exist_ok=True)
    remove_address_file(logdir)
    say(f"run directory {logdir}; tensorboard --logdir {logdir}")
    run = LocalRun(options, logdir, sys.executable)
    # A closed terminal (HUP) or a closed pipe (`./run_local.sh ... | head`) stops the run as Ctrl-C does,
    # rather than leaving the learner and the actors running without this launcher.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, _raise_stopped)
    try:
        run.start_learner("127.0.0.1:0")
        address = run.wait_for_address()
        if address is None:  # bad settings: the learner's error is on stderr
            code = run.learner.wait()
            if fresh:  # a directory made for this attempt holds only logs that repeat that error
                shutil.rmtree(logdir, ignore_errors=True)
                say(f"removed {logdir} (the learner did not start)")
            return code or 1
        run.actors = [run.start_actor(i, address) for i in range(options.num_actors)]
        say(f"learner at {address}, {options.num_actors} actor(s) x {options.envs_per_actor} envs "
            f"(logs in {logdir}/logs)")
        if options.tensorboard:
            run.start_tensorboard()
        code = run.supervise(address, RestartPolicy(int(restarts), max_backoff_s=30.0))
    except Stopped:
        code = 130
    except TimeoutError as e:
        say(str(e))
        code = 2
    # The stop itself is not cut short by a second Ctrl-C, nor by writing to a pipe whose reader left.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)
    run.stop_all()
    return 128 - code if code < 0 else code  # a learner a signal ended: the shell's 128 + N


if __name__ == "__main__":
    sys.exit(main())
