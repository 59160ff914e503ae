"""TLS between actors and the learner, with certificates made for the test."""
import subprocess

import grpc
import numpy as np
import pytest

from learner.batcher import InferenceBatcher
from learner.service import LearnerServicer, start_server
from learner.slots import SlotAllocator
from seed import codec, handshake
from seed.auth import channel_credentials, server_credentials
from seed.specs import EnvSpec
from tests.learner.test_service import Client, good_steps

SPEC = EnvSpec((4,), "float32", 3)


def make_certificate(directory, name):
    key, cert = directory / f"{name}.key", directory / f"{name}.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return str(cert), str(key)


class TlsClient(Client):
    def __init__(self, address, ca_file):
        self.channel = grpc.secure_channel(address, channel_credentials(ca_file))
        import queue

        from seed import seed_pb2_grpc
        self._requests = queue.Queue()
        self._responses = seed_pb2_grpc.LearnerStub(self.channel).Stream(iter(self._requests.get, None))


@pytest.fixture
def tls_learner(tmp_path):
    cert, key = make_certificate(tmp_path, "learner")
    slots = SlotAllocator(4)
    batcher = InferenceBatcher(lambda ids, steps: np.zeros(len(ids), np.int32), slots.free, 16, 5)
    batcher.start()
    server = start_server(LearnerServicer(SPEC, batcher, slots), "127.0.0.1:0", 4, 1 << 20,
                          server_credentials(cert, key))
    yield f"127.0.0.1:{server.seed_port}", cert
    server.stop(0).wait()
    batcher.stop()


def test_actor_that_trusts_the_learners_ca_is_served(tls_learner):
    address, cert = tls_learner
    client = TlsClient(address, cert)
    assert len(client.send(handshake.make_hello("a", 2, SPEC)).welcome.slot_ids) == 2
    assert len(codec.decode_actions(client.send(good_steps(2)).actions, 2)) == 2
    client.close()


def test_actor_with_the_wrong_ca_cannot_connect(tls_learner, tmp_path):
    address, _ = tls_learner
    other_ca, _ = make_certificate(tmp_path, "other")
    channel = grpc.secure_channel(address, channel_credentials(other_ca))
    with pytest.raises(grpc.FutureTimeoutError):
        grpc.channel_ready_future(channel).result(timeout=3)
    channel.close()
    plaintext = grpc.insecure_channel(address)
    with pytest.raises(grpc.FutureTimeoutError):
        grpc.channel_ready_future(plaintext).result(timeout=3)
    plaintext.close()


def test_half_a_tls_configuration_is_a_clear_error(tmp_path):
    cert, _ = make_certificate(tmp_path, "x")
    with pytest.raises(ValueError, match="TLS needs both"):
        server_credentials(cert, None)
    with pytest.raises(ValueError, match="cannot read TLS CA file"):
        channel_credentials(str(tmp_path / "missing.pem"))
