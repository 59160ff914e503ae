"""Which stored unrolls each replay mix picks, without learning: the real UnrollMix (ring, samplers,
counts, candidate multiplier) fed with stand-in unrolls, their off-policy distance modelled.

    .venv/bin/python benchmarks/replay_ring.py --out benchmarks/results/replay_ring.json

Elite sampling picks by distance, but its least-sampled strategies first prefer unrolls no batch
has taken; with about 2 x 16 candidates from a ring of 1,024 most candidates were never replayed,
so that preference alone may decide much of the pick. This separates the two: per mix and per
distance model it reports, over the second half of the updates, the share of picks no earlier draw
had taken (`data/*_first_replays`) and their mean age in updates (`data/*_age_updates`), the same
metrics a learning run's progress records carry. The distance models:

- 'independent': each candidate's distance is random, unrelated to anything the ring knows;
- 'age': it grows with the unroll's age in ring lifetimes (a policy that drifts steadily), plus
  normal noise whose standard deviation is `--noise` lifetimes.

A strategy whose share of first replays stays above uniform's under both models chooses by sample
counts; one whose picks grow younger only under 'age' chooses by distance.
The defaults are atari_vtrace.gin's: batch 32 (16 fresh), a ring of 1,024, 64 before the first
batch, 7,812 updates (10M frames at 1,280 per update), lambda annealed over the config's 200M frames.
Runs in seconds on one core; prints one JSON line per mix and model.
"""
import argparse
import ast
import json
import os
import sys

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import gin  # noqa: E402
from replay_mixes import MIXES as LEARNING_MIXES  # noqa: E402

from learner.data import elite  # noqa: E402,F401  (registers EliteSampler with gin)
from learner.data.unroll_replay import UnrollMix, split_counts  # noqa: E402
from learner.data.unrolls import UnrollQueue  # noqa: E402

SOURCES = "VTraceAgent.sources="
# replay_mixes.py's mixes whose picks need no learner's signal to model: uniform and the four elite
# strategies (CLEAR samples as uniform does; prioritised and attentive would need TD errors and
# visited states).
MIXES = {name: LEARNING_MIXES[name] for name in ["uniform"] + [f"elite_{s}" for s in elite.STRATEGIES]}
MODELS = ("independent", "age")


def stand_in_unrolls(born: int, n: int) -> dict[str, np.ndarray]:
    """`n` one-step unrolls that carry the update they were made at, and zero features."""
    return {"born": np.full((n, 2), born, np.int64), "features": np.zeros((n, 2, 1), np.float32)}


def simulate(bindings: list[str], model: str, updates: int, noise: float, seed: int, batch_size: int,
             capacity: int, min_unrolls: int, total_updates: int) -> dict[str, float]:
    """Second-half means of each replay source's first-replay share and age under `bindings`."""
    sources = {}
    gin.clear_config()
    for binding in bindings:
        if binding.startswith(SOURCES):
            sources = ast.literal_eval(binding[len(SOURCES):])
        else:
            gin.parse_config(binding)
    gin.bind_parameter("EliteSampler.prefetch", 0)  # chosen at the update it is used, as if prefetch were free
    rng = np.random.default_rng(seed)
    now = {"update": 0}
    fresh = int(dict(zip(sources, split_counts(batch_size, list(sources.values()))))["queue"])
    lifetime = capacity / fresh

    def encode(batch):  # the 'current policy's features: the stored ones moved by the modelled distance
        n = batch["born"].shape[1]  # time-major [T+1, n], as a batch holds them
        if model == "independent":
            moved = rng.random(n)
        else:
            moved = np.maximum((now["update"] - batch["born"][0]) / lifetime + noise * rng.normal(size=n), 0)
        return batch["features"] + moved[None, :, None].astype(np.float32)

    queue = UnrollQueue(min_unrolls + fresh)
    mix = UnrollMix(queue, sources, batch_size, capacity, min_unrolls, seed=seed, encode=encode,
                    total_fresh_unrolls=total_updates * fresh)
    kind = next(k for k in sources if k != "queue")
    seen: dict[str, list[float]] = {"first_replays": [], "age_updates": []}
    for update in range(updates):
        now["update"] = update
        while len(queue) < (min_unrolls + fresh if update == 0 else fresh):  # the first batch fills the ring
            queue.put(stand_in_unrolls(update, fresh))
        mix.next_batch()
        if update >= updates // 2:
            metrics = mix.metrics()
            for name in seen:
                seen[name].append(metrics[f"data/{kind}_{name}"])
    mix.close()
    gin.clear_config()
    return {name: round(float(np.mean(values)), 3) for name, values in seen.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mixes", nargs="+", default=list(MIXES), choices=list(MIXES))
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--updates", type=int, default=7812, help="batches (7,812: 10M Atari frames)")
    parser.add_argument("--noise", type=float, default=0.25,
                        help="'age' model: the distance's noise, in ring lifetimes")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--replay_capacity", type=int, default=1024)
    parser.add_argument("--min_replay_unrolls", type=int, default=64)
    parser.add_argument("--annealing_updates", type=int, default=156250,
                        help="the run length lambda anneals over (156,250: atari_vtrace.gin's 200M frames)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="also write the results as JSON here")
    args = parser.parse_args()
    for name in ("updates", "batch_size", "replay_capacity", "min_replay_unrolls", "annealing_updates"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be positive")
    if args.noise < 0:
        parser.error("--noise must not be negative")
    results = []
    for name in args.mixes:
        for model in args.models:
            result = {"mix": name, "model": model, **simulate(
                MIXES[name], model, args.updates, args.noise, args.seed, args.batch_size, args.replay_capacity,
                args.min_replay_unrolls, args.annealing_updates)}
            results.append(result)
            print(json.dumps(result), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"settings": {k: v for k, v in vars(args).items() if k != "out"}, "results": results}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
