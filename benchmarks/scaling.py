"""Scaling: end-to-end training frames/s for 1, 2, 4 and 8 actors x 4 envs.

    .venv/bin/python benchmarks/scaling.py [--actors 1 2 4 8] [--envs 4] [--frames 200000]
    (the PNG needs matplotlib: pip install -e '.[bench]')

Each point is one benchmarks/end_to_end.py run (same warm-up and timed frames).
Prints a JSON line per point and writes OUT/scaling.jsonl, OUT/scaling.md (a
Markdown table) and OUT/scaling.png (frames/s and mean inference batch over actors).
"""
import argparse
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import end_to_end  # noqa: E402


def write_table(path: str, points, envs: int, command: str) -> str:
    lines = [f"Machine: {platform.machine()}, {os.cpu_count()} CPUs; command: `{command}`", "",
             "| actors x envs | training frames/s | env frames/s | mean inference batch | "
             "learner round trip p50 / p99 (ms) |", "|---|---|---|---|---|"]
    for p in points:
        lines.append(f"| {p['actors']} x {envs} | {p['training_frames_per_s']:,.0f} | {p['env_frames_per_s']:,.0f} | "
                     f"{p['mean_inference_batch']:.1f} | {p['actor_round_trip_ms_p50']:.1f} / "
                     f"{p['actor_round_trip_ms_p99']:.1f} |")
    table = "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(table)
    return table


def write_plot(path: str, points, envs: int) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no PNG: matplotlib is missing (pip install -e '.[bench]')", file=sys.stderr)
        return False
    actors = [p["actors"] for p in points]
    fig, left = plt.subplots(figsize=(6, 4))
    left.plot(actors, [p["training_frames_per_s"] for p in points], "o-", label="training frames/s")
    left.set_xlabel(f"actor processes ({envs} envs each)")
    left.set_ylabel("training frames/s")
    left.set_xscale("log", base=2)
    left.set_xticks(actors, [str(a) for a in actors])
    left.set_ylim(bottom=0)
    right = left.twinx()
    right.plot(actors, [p["mean_inference_batch"] for p in points], "s--", color="tab:orange",
               label="mean inference batch")
    right.set_ylabel("mean inference batch (envs)")
    right.set_ylim(bottom=0)
    handles = left.get_lines() + right.get_lines()
    left.legend(handles, [h.get_label() for h in handles], loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="atari_vtrace.gin")
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--warmup_frames", type=int, default=50_000)
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--gin_bindings", action="append", default=[])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    points = []
    for actors in args.actors:
        result = end_to_end.run(args.config, actors, args.envs, args.warmup_frames, args.frames, 0,
                                args.gin_bindings, timeout_s=3600)
        points.append(end_to_end.emit(benchmark="scaling", actors=actors, envs_per_actor=args.envs, **result))
    with open(os.path.join(args.out, "scaling.jsonl"), "w") as f:
        f.writelines(json.dumps(p) + "\n" for p in points)
    command = "python benchmarks/scaling.py " + " ".join(sys.argv[1:])
    print(write_table(os.path.join(args.out, "scaling.md"), points, args.envs, command.strip()))
    write_plot(os.path.join(args.out, "scaling.png"), points, args.envs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
