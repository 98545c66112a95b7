"""A direct connection from a kubeconfig, without the generated ``kubernetes`` client.

Importing ``kubernetes.client`` costs over a second (thousands of pydantic models); the CLI only needs TLS,
a client certificate or a bearer token and JSON. Users whose kubeconfig needs an exec plugin or an
auth-provider (e.g. ``aws eks get-token``) get None here and kube/connect.py falls back to the full client.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3


@dataclass
class Connection:
    host: str
    pool: urllib3.PoolManager
    headers: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        self.pool.clear()


def _load(text: str) -> dict[str, Any]:
    try:  # kubeconfigs written by tools are often JSON, which is YAML too and parses much faster
        loaded = json.loads(text)
    except ValueError:
        import yaml  # noqa: PLC0415  (only for YAML kubeconfigs)

        loaded = yaml.safe_load(text)
    return loaded if isinstance(loaded, dict) else {}


def _named(items: list[dict[str, Any]], name: str, what: str) -> dict[str, Any]:
    for item in items or []:
        if item.get("name") == name:
            return dict(item.get(what) or {})
    raise ValueError(f"kubeconfig has no {what} named {name!r}")


def _resolve(base: Path, value: str) -> str:
    p = Path(value)
    return str(p if p.is_absolute() else base / p)


def connection_from_kubeconfig(path: str | Path, context: str | None = None, pool_size: int = 32) -> Connection | None:
    path = Path(path)
    config = _load(path.read_text())
    ctx = _named(config.get("contexts", []), context or config.get("current-context", ""), "context")
    cluster = _named(config.get("clusters", []), ctx.get("cluster", ""), "cluster")
    user = _named(config.get("users", []), ctx.get("user", ""), "user")
    if "exec" in user or "auth-provider" in user or "username" in user:
        return None
    base = path.parent
    tls = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    elif "certificate-authority-data" in cluster:
        tls.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    elif "certificate-authority" in cluster:
        tls.load_verify_locations(cafile=_resolve(base, cluster["certificate-authority"]))
    if "client-certificate-data" in user or "client-certificate" in user:
        _load_client_cert(tls, user, base)
    headers: dict[str, str] = {}
    token = user.get("token")
    if not token and "tokenFile" in user:
        token = Path(_resolve(base, user["tokenFile"])).read_text().strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    pool = urllib3.PoolManager(maxsize=pool_size, ssl_context=tls)
    return Connection(host=str(cluster["server"]).rstrip("/"), pool=pool, headers=headers)


def _load_client_cert(tls: ssl.SSLContext, user: dict[str, Any], base: Path) -> None:
    if "client-certificate" in user:
        tls.load_cert_chain(_resolve(base, user["client-certificate"]), _resolve(base, user["client-key"]))
        return
    # ssl only loads key material from files: write it to a private temporary directory and remove it.
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = os.path.join(tmp, "c"), os.path.join(tmp, "k")
        for target, data in ((cert, user["client-certificate-data"]), (key, user["client-key-data"])):
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(base64.b64decode(data))
        tls.load_cert_chain(cert, key)
