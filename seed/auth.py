"""The optional shared token both roles present: read from a file or an
environment variable, never from the command line (which `ps` shows)."""
import os


def read_auth_token(env_var: str, token_file: str | None) -> str:
    """The token from `token_file` if given, else from `env_var`; '' means no authentication."""
    if token_file:
        try:
            with open(token_file) as f:
                token = f.read().strip()
        except OSError as e:
            raise ValueError(f"cannot read auth token file {token_file!r}: {e.strerror}") from None
        if not token:
            raise ValueError(f"auth token file {token_file!r} is empty")
        return token
    return os.environ.get(env_var, "")


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"cannot read {what} {path!r}: {e.strerror}") from None


def server_credentials(cert_file: str | None, key_file: str | None):
    """TLS credentials for the learner, or None for plaintext (both files or neither)."""
    import grpc
    if not cert_file and not key_file:
        return None
    if not (cert_file and key_file):
        raise ValueError("TLS needs both service.tls_cert_file and service.tls_key_file")
    return grpc.ssl_server_credentials([(_read(key_file, "TLS key"), _read(cert_file, "TLS certificate"))])


def channel_credentials(ca_file: str | None):
    """TLS credentials that verify the learner against `ca_file`, or None for plaintext."""
    import grpc
    if not ca_file:
        return None
    return grpc.ssl_channel_credentials(root_certificates=_read(ca_file, "TLS CA file"))
