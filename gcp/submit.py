#!/usr/bin/env python3
"""Builds the seed image, pushes it to Artifact Registry and submits a Vertex AI
custom job: worker pool 0 runs the learner (machine type and accelerator of
your choice), worker pool 1 runs N actor replicas on CPU machines. Every
replica starts `seed-launch`, which reads Vertex AI's CLUSTER_SPEC to pick its
role and the learner's address.

    python gcp/submit.py --project my-project --region us-central1 \\
        --config atari_vtrace --actor_replicas 4 --output gs://my-bucket/seed/pong --dry_run

--dry_run prints the exact commands and the job spec and calls nothing.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CONFIGS = os.path.join(REPO, "seed", "configs")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", required=True)
    parser.add_argument("--region", default="us-central1")
    parser.add_argument("--config", default="atari_vtrace", help="a seed/configs/*.gin name, e.g. atari_r2d2")
    parser.add_argument("--gin_bindings", action="append", default=[], help="for both pools (repeatable)")
    parser.add_argument("--game", default=None, help="game or task (the GAME macro; default: the config's)")
    parser.add_argument("--output", required=True, help="gs://bucket/path for checkpoints, logs and TensorBoard")
    parser.add_argument("--actor_replicas", type=int, default=4)
    parser.add_argument("--actors_per_replica", type=int, default=8)
    parser.add_argument("--envs_per_actor", type=int, default=4)
    parser.add_argument("--learner_machine_type", default="n1-standard-16")
    parser.add_argument("--learner_accelerator", default="NVIDIA_TESLA_T4:1",
                        help="TYPE:COUNT as Vertex AI names it, or 'none' for a CPU learner")
    parser.add_argument("--actor_machine_type", default="n1-standard-16")
    parser.add_argument("--repository", default="seed", help="Artifact Registry Docker repository")
    parser.add_argument("--tag", default=time.strftime("%Y%m%d-%H%M%S"))
    parser.add_argument("--no_build", action="store_true", help="submit with images already pushed")
    parser.add_argument("--display_name", default=None)
    parser.add_argument("--dry_run", action="store_true")
    args = parser.parse_args(argv)
    if not os.path.exists(os.path.join(CONFIGS, args.config + ".gin")):
        known = sorted(f[:-4] for f in os.listdir(CONFIGS) if f.endswith(".gin"))
        parser.error(f"unknown --config {args.config!r}; known: {', '.join(known)}")
    if not args.output.startswith("gs://"):
        parser.error(f"--output must be a gs:// path (Vertex AI mounts it at /gcs), got {args.output!r}")
    for name in ("actor_replicas", "actors_per_replica", "envs_per_actor"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.learner_accelerator != "none":
        kind, _, count = args.learner_accelerator.partition(":")
        if not kind or not count.isdigit():
            parser.error(f"--learner_accelerator must be TYPE:COUNT or none, got {args.learner_accelerator!r}")
    return args


def image_uri(args, variant: str) -> str:
    return f"{args.region}-docker.pkg.dev/{args.project}/{args.repository}/seed:{args.tag}-{variant}"


def seed_args(args, role_args):
    """What every replica's `seed-launch` gets; the same gin bindings for both pools."""
    bindings = list(args.gin_bindings)
    if args.game:
        bindings.append(f"GAME='{args.game}'")  # every env family's config binds its game to GAME
    bindings.append(f"run_actor.num_envs={args.envs_per_actor}")
    out = ["--gin_config", args.config + ".gin", "--logdir", args.output, *role_args]
    for binding in bindings:
        out += ["--gin_bindings", binding]
    return out


def job_spec(args) -> dict:
    learner_machine = {"machineType": args.learner_machine_type}
    gpu = args.learner_accelerator != "none"
    if gpu:
        kind, count = args.learner_accelerator.split(":")
        learner_machine.update(acceleratorType=kind, acceleratorCount=int(count))
    return {
        "workerPoolSpecs": [
            {"machineSpec": learner_machine, "replicaCount": 1,
             "containerSpec": {"imageUri": image_uri(args, "gpu" if gpu else "cpu"), "command": ["seed-launch"],
                               "args": seed_args(args, [])}},
            {"machineSpec": {"machineType": args.actor_machine_type}, "replicaCount": args.actor_replicas,
             "containerSpec": {"imageUri": image_uri(args, "cpu"), "command": ["seed-launch"],
                               "args": seed_args(args, ["--actors_per_replica", str(args.actors_per_replica)])}},
        ],
        "baseOutputDirectory": {"outputUriPrefix": args.output},
    }


def commands(args, spec_path: str):
    registry = f"{args.region}-docker.pkg.dev"
    out = []
    if not args.no_build:
        gpu = args.learner_accelerator != "none"
        out.append(["gcloud", "auth", "configure-docker", registry, "--quiet"])
        for variant in ("cpu", "gpu") if gpu else ("cpu",):
            out.append(["docker", "build", "-f", "docker/Dockerfile", "--build-arg", f"VARIANT={variant}",
                        "-t", image_uri(args, variant), "."])
            out.append(["docker", "push", image_uri(args, variant)])
    name = args.display_name or f"seed-{args.config.replace('_', '-')}-{args.tag}"
    out.append(["gcloud", "ai", "custom-jobs", "create", f"--project={args.project}", f"--region={args.region}",
                f"--display-name={name}", f"--config={spec_path}"])
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    spec = job_spec(args)
    spec_dir = tempfile.mkdtemp(prefix="seed_vertex_")
    spec_path = os.path.join(spec_dir, "job.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=2)
    todo = commands(args, spec_path)
    if args.dry_run:  # the spec file stays: the printed commands refer to it
        for command in todo:
            print("$ " + shlex.join(command))
        print(f"# job spec ({spec_path}):")
        print(json.dumps(spec, indent=2))
        return 0
    try:
        for command in todo:
            print("$ " + shlex.join(command), flush=True)
            code = subprocess.call(command, cwd=REPO)
            if code:
                print(f"submit.py: `{command[0]} {command[1]}` failed with exit code {code}", file=sys.stderr)
                return code
    finally:
        shutil.rmtree(spec_dir, ignore_errors=True)
    print(f"submitted; logs: gcloud ai custom-jobs stream-logs JOB_ID --region={args.region}; "
          f"TensorBoard: tensorboard --logdir {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
