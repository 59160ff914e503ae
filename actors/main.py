"""`seed-actor`: the actor role's command line. Imports no TensorFlow."""
import argparse
import logging
import sys

from seed import process

process.use_polling_thread_io()  # before anything imports grpc


def parse_args(argv):
    from seed.addresses import address_problem
    from seed.gin_setup import add_gin_flags
    parser = argparse.ArgumentParser(prog="seed-actor", description=__doc__)
    add_gin_flags(parser)
    parser.add_argument("--learner_address", default="127.0.0.1:8686", help="host:port of the learner")
    parser.add_argument("--actor_index", type=int, default=0,
                        help="this actor's number; names it and seeds its envs")
    parser.add_argument("--logdir", default=None, help="run directory; logs go to LOGDIR/logs/actor_N.log")
    parser.add_argument("--verbose", action="store_true", help="every INFO line on stderr too, not only warnings")
    args = parser.parse_args(argv)
    problem = address_problem(args.learner_address, port_0_ok=False)
    if problem:
        parser.error(f"--learner_address {problem}")
    if args.actor_index < 0:
        parser.error(f"--actor_index must be 0 or more, got {args.actor_index}")
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from seed import gin_setup
    stop = process.stop_on_signals()
    process.setup_logging(args.logdir, f"actor_{args.actor_index}", args.verbose)
    from actors.actor import run_actor
    gin_setup.parse(args.gin_config, args.gin_bindings, skip_unknown=True)
    try:
        return run_actor(args.learner_address, args.actor_index, stop, args.logdir)
    except ValueError as e:  # bad settings found at start (env, ranges, auth): one line, not a traceback
        logging.getLogger("actor").debug("start failed", exc_info=True)
        print(f"seed-actor: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
