"""The optional shared token both roles present: read from a file or an
environment variable, never from the command line (which `ps` shows)."""
import os
from typing import Optional


def read_auth_token(env_var: str, token_file: Optional[str]) -> str:
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
