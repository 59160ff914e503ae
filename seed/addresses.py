"""HOST:PORT addresses from the command line, checked before gRPC sees them.

gRPC takes a bare host as port 443 and binds port 99999 as 34463 (modulo
65536) without a word, so a typo there would leave actors dialling nothing
until their reconnect timeout.
"""

# gRPC target URIs (unix:/path, dns:///host:port, ...) pass through as given.
GRPC_TARGET_SCHEMES = ("dns:", "unix:", "unix-abstract:", "ipv4:", "ipv6:", "vsock:")


def address_problem(address: str, *, port_0_ok: bool) -> str:
    """'' when `address` is HOST:PORT with a valid port (0, any free port, only when listening),
    else what is wrong with it and an example that is right."""
    if address.startswith(GRPC_TARGET_SCHEMES):
        return ""
    host, colon, port = address.rpartition(":")
    lowest = 0 if port_0_ok else 1
    if colon and host and port.isdigit() and lowest <= int(port) <= 65535:
        return ""
    return f"must be HOST:PORT with a port from {lowest} to 65535 (e.g. 127.0.0.1:8686), got {address!r}"
