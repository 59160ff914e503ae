"""HTTP/2 keepalive for the one stream between an actor and the learner, on both ends.

Without it a peer that vanishes without closing its socket (a host lost, a network partition: no FIN,
no RST) leaves the other end waiting on the stream until TCP gives up, which takes many minutes.
With it each end pings the other after `keepalive_s` of silence on the connection and drops the
connection when no answer comes within `timeout_s`: the learner frees a vanished actor's slots,
and an actor backs off and reconnects. During training data flows all the time, so no pings are
sent; they cost nothing until the stream goes quiet."""


def channel_options(keepalive_s: float, timeout_s: float) -> list[tuple[str, int]]:
    """An actor's channel: pings the learner, also while it waits for an answer."""
    return [("grpc.keepalive_time_ms", int(1000 * keepalive_s)),
            ("grpc.keepalive_timeout_ms", int(1000 * timeout_s)),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0)]  # a quiet stream carries no data: ping anyway


def server_options(keepalive_s: float, timeout_s: float) -> list[tuple[str, int]]:
    """The learner's server: pings each actor's connection, and accepts actors' pings as often as once
    a second (the server's default policy would answer an actor's frequent pings with GOAWAY)."""
    return [("grpc.keepalive_time_ms", int(1000 * keepalive_s)),
            ("grpc.keepalive_timeout_ms", int(1000 * timeout_s)),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.min_recv_ping_interval_without_data_ms", 1000),
            ("grpc.http2.max_ping_strikes", 0)]
