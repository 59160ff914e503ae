import pytest

from seed.addresses import address_problem


@pytest.mark.parametrize("address", ["127.0.0.1:8686", "0.0.0.0:1", "localhost:65535", "[::1]:8686",
                                     "learner.example.com:443", "unix:/tmp/seed.sock", "dns:///learner:8686"])
def test_host_port_and_grpc_targets_pass(address):
    assert address_problem(address, port_0_ok=False) == ""


@pytest.mark.parametrize("address", ["learner", "127.0.0.1", ":8686", "127.0.0.1:", "127.0.0.1:http",
                                     "127.0.0.1:65536", "127.0.0.1:99999", "127.0.0.1:-1"])
def test_bad_addresses_are_named_with_an_example(address):
    problem = address_problem(address, port_0_ok=True)
    assert "HOST:PORT" in problem and "127.0.0.1:8686" in problem and repr(address) in problem


def test_port_0_only_where_listening():
    assert address_problem("127.0.0.1:0", port_0_ok=True) == ""
    assert "from 1 to 65535" in address_problem("127.0.0.1:0", port_0_ok=False)
