"""`seed-learner`: the learner role's command line."""
import argparse
import logging
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from seed import process  # noqa: E402  (before anything imports grpc)

process.use_polling_thread_io()


def parse_args(argv):
    from seed.addresses import address_problem
    from seed.gin_setup import add_gin_flags
    parser = argparse.ArgumentParser(prog="seed-learner", description=__doc__)
    add_gin_flags(parser)
    parser.add_argument("--logdir", default=None,
                        help="run directory for checkpoints, summaries, logs and the operative config; "
                             "an existing one is resumed (default: runs/learner_<timestamp>)")
    parser.add_argument("--address", default="127.0.0.1:8686",
                        help="host:port to listen on (default loopback only; 0.0.0.0:PORT to serve "
                             "actors on other machines)")
    parser.add_argument("--resume_with_changes", action="store_true",
                        help="resume a run directory even though the settings asked for differ from the ones "
                             "it was started with (by default that is refused)")
    parser.add_argument("--verbose", action="store_true",
                        help="every INFO line on stderr (TensorFlow's and absl's too), not only the progress "
                             "line, the start-up summary, warnings and errors")
    args = parser.parse_args(argv)
    problem = address_problem(args.address, port_0_ok=True)
    if problem:
        parser.error(f"--address {problem}")
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from seed import gin_setup
    with process.native_startup_filtered(args.verbose):
        import tensorflow as tf

        from learner.checkpoints import ensure_writable_dir
        from learner.learner import run_learner
        tf.config.list_physical_devices("GPU")  # TensorFlow probes for CUDA here, once, and says so
    logdir = ensure_writable_dir(args.logdir or os.path.join("runs", time.strftime("learner_%Y%m%d_%H%M%S")))
    stop = process.stop_on_signals()
    process.setup_logging(logdir, "learner", args.verbose)
    import actors.actor  # noqa: F401  registers the actor's configurables so every binding is checked
    gin_setup.parse(args.gin_config, args.gin_bindings)
    try:
        resuming = os.path.exists(os.path.join(logdir, "checkpoints", "checkpoint"))
        gin_setup.check_requested_config(logdir, resuming, args.resume_with_changes)
        return run_learner(logdir, args.address, stop)
    except (ValueError, OSError) as e:  # bad settings found at start: one line, not a traceback
        logging.getLogger("learner").debug("start failed", exc_info=True)
        # The process ends here: TensorFlow's warnings about what a failed restore left behind
        # would only bury this line.
        logging.getLogger("tensorflow").setLevel(logging.ERROR)
        print(f"seed-learner: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
