"""Ray's token authentication, always on: every node and every console of a lab cluster shares one token.

Ray (≥ 2.52) authenticates every RPC and HTTP entry point when RAY_AUTH_MODE=token, reading the token from
RAY_AUTH_TOKEN, else the file named by RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token. We use the same sources,
so `ray` commands and ours agree, and we refuse to start or join anything without one. The token itself is
never printed, logged or stored in the history: messages name where it was found, never what it is.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from console.cluster import ClusterError

MODE_ENV, TOKEN_ENV, PATH_ENV = "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"
# user:password@ in an address (redis://admin:pw@host, https://user:pw@host); the host stays, it says where
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^\s/@:]+:[^\s/]*@")
# token=..., redis_password=..., AWS_SECRET_ACCESS_KEY=..., Authorization: Basic ... (the name stays, it says what
# was hidden); a prefix or suffix joined by "_" is part of the name, "tokens" and "tokenizer" are other words
_SECRET_FIELD = re.compile(r"(?i)(?P<name>\b[a-z_]*(?:token|password|passwd|secret|api[_-]?key|authorization)"
                           r"(?:_[a-z_]*)?\b[\"']?\s*[=:]\s*(?:(?:bearer|basic)\s+)?)[\"']?[^\s\"',;&]+[\"']?")
_BEARER = re.compile(r"(?i)\b(?P<name>bearer\s+)[A-Za-z0-9._~+/=-]+")


# ---- Public API
def default_path() -> Path:
    return Path.home() / ".ray" / "auth_token"


def token_file() -> Path:
    """Where the token file is looked for (and written by `node start --head` when there is none)."""
    named = os.environ.get(PATH_ENV)
    return Path(named).expanduser() if named else default_path()


def token_source() -> str | None:
    """Where the token comes from, in words ("$RAY_AUTH_TOKEN", "file ~/.ray/auth_token"), or None."""
    if os.environ.get(TOKEN_ENV, "").strip():
        return f"${TOKEN_ENV}"
    path = token_file()
    try:
        if path.read_text(encoding="utf-8").strip():
            return f"file {path}"
    except OSError:
        pass
    return None


def require_token() -> str:
    """Turn token authentication on for this process and its children; ClusterError when there is no token."""
    source = token_source()
    if source is None:
        raise ClusterError(
            "no Ray cluster token here: Lab Console never joins or starts a cluster without one. Copy the head "
            f"node's token file ({default_path()}, created by `labconsole node start --head`) to this machine "
            f"with mode 600, or set {TOKEN_ENV} (or {PATH_ENV}) in the environment")
    os.environ[MODE_ENV] = "token"
    return source


def create_token() -> Path:
    """Write a fresh random token to token_file() (mode 600) when there is none; returns the file."""
    path = token_file()
    if token_source() is not None:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(secrets.token_hex(32))
    return path


def redact(text: str) -> str:
    """`text` without credentials, for messages that quote Ray's (or a node's) errors: the lab token wherever it
    appears, the user:password of an address, and the value of a token=/password=/secret=/api_key= field or a
    Bearer header, each replaced by ***. Every cluster message shown or stored passes through here (the listing's
    and the topology's node errors through console.cluster.answers.node_answers)."""
    token = _token_value()
    if token and token in text:
        text = text.replace(token, "***")
    text = _USERINFO.sub(r"\g<scheme>***@", text)
    text = _SECRET_FIELD.sub(r"\g<name>***", text)
    return _BEARER.sub(r"\g<name>***", text)


# ---- Private API
def _token_value() -> str | None:
    value = os.environ.get(TOKEN_ENV, "").strip()
    if value:
        return value
    try:
        return token_file().read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
