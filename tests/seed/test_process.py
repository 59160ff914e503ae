"""Process set-up both roles share: grpcio's polling mode, TensorFlow's start-up lines held back."""
import os
import subprocess
import sys

from seed import process
from tests import processes

# Exchanges messages with a server in the same process and prints how long grpcio's
# EventEngine threads ran (ms): they do the socket I/O unless the role's entry point opted out.
# 3,000 round trips: opted out, those threads still run a few ms of their own (more on a loaded
# machine, up to 12 ms in a CI run), so the I/O's share has to dwarf that.
ROUND_TRIPS = """
import os, sys
if sys.argv[1] != "-":
    __import__(sys.argv[1])
import grpc
from concurrent import futures
server = grpc.server(futures.ThreadPoolExecutor(2))
server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("echo.Echo", {
    "Call": grpc.unary_unary_rpc_method_handler(lambda request, context: request)}),))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
    call = channel.unary_unary("/echo.Echo/Call")
    for _ in range(3000):
        call(b"x" * 1000)
ms = 0.0
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as comm, open(f"/proc/self/task/{tid}/schedstat") as stat:
        if comm.read().strip() == "event_engine":
            ms += int(stat.read().split()[0]) / 1e6
server.stop(None)
print(os.environ.get("GRPC_EXPERIMENTS", ""), ms)
"""


def _event_engine_ms(first_import: str, env=None):
    if env is None:
        env = processes.child_env()
        env.pop("GRPC_EXPERIMENTS", None)
    out = subprocess.run([sys.executable, "-c", ROUND_TRIPS, first_import], capture_output=True, text=True,
                         timeout=120, env=env, check=True).stdout.split()
    return out[0] if len(out) == 2 else "", float(out[-1])


def test_both_roles_do_grpc_io_on_the_polling_thread():
    _, default_ms = _event_engine_ms("-")
    for entry_point in ("actors.main", "learner.main"):
        experiments, ms = _event_engine_ms(entry_point)
        assert experiments == process.GRPC_EXPERIMENTS
        # grpcio's own I/O threads did (nearly) nothing: the setting reached grpc before its import.
        assert ms < default_ms / 4, (entry_point, ms, default_ms)


def test_users_grpc_experiments_win():
    env = dict(processes.child_env(), GRPC_EXPERIMENTS="event_engine_client")
    _, default_ms = _event_engine_ms("-")
    experiments, ms = _event_engine_ms("actors.main", env)
    assert experiments == "event_engine_client"
    assert ms > default_ms / 4  # EventEngine I/O stays on, as asked


def test_too_late_once_grpc_is_imported():
    import grpc  # noqa: F401
    assert not process.use_polling_thread_io()


def test_tensorflow_start_up_noise_is_held_back_and_everything_else_passes(capfd):
    from seed.process import native_startup_filtered

    noise = ("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
             "I0000 00:00:1796151252.436001   30292 cudart_stub.cc:31] Could not find cuda drivers on your machine.\n"
             "E0000 00:00:1796148620.832140    5826 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\n")
    real = "E0000 00:00:1796148620.832140    5826 cuda_driver.cc:12] a real native error\nTraceback: kept\n"
    with native_startup_filtered(verbose=False):
        os.write(2, (noise + real).encode())
    assert capfd.readouterr().err == real
    with native_startup_filtered(verbose=True):
        os.write(2, noise.encode())
    assert capfd.readouterr().err == noise
