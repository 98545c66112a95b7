"""A direct connection from a kubeconfig, without the generated ``kubernetes`` client.

Importing ``kubernetes.client`` costs over a second (thousands of pydantic models); the CLI only needs TLS,
a client certificate or a bearer token and JSON. Users whose kubeconfig needs an exec plugin or an
auth-provider (e.g. ``aws eks get-token``) get None here and kube/connect.py falls back to the full client.

Which files, and how several are merged, is kubectl's rule (client-go's loading rules): ``--kubeconfig`` names one
file; else ``KUBECONFIG`` lists files (``:``-separated), of which those that do not exist are skipped; else
``~/.kube/config``. In a merge the first file to define a cluster, user or context name wins it whole, and the first
file to set ``current-context`` sets it; a relative file path in an entry is relative to the file defining it.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import urllib3

# entry kind -> the fields of its entries that name files (resolved against the file defining the entry)
_FILE_FIELDS = {
    "clusters": ("cluster", ("certificate-authority",)),
    "users": ("user", ("client-certificate", "client-key", "tokenFile")),
    "contexts": ("context", ()),
}


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


class KubeconfigNotFound(FileNotFoundError):
    """No kubeconfig file to read: the message names where kubectl's rule looked."""


def kubeconfig_files(explicit: str | Path | None = None, environ: Mapping[str, str] | None = None) -> list[Path]:
    """The files kubectl would read, in merge order (see the module doc); raises KubeconfigNotFound when none
    exists."""
    env = os.environ if environ is None else environ
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise KubeconfigNotFound(f"kubeconfig {path}: no such file")
        return [path]
    listed = env.get("KUBECONFIG", "")
    if listed:
        named = list(dict.fromkeys(Path(p).expanduser() for p in listed.split(os.pathsep) if p))
        found = [p for p in named if p.is_file()]
        if not found:
            raise KubeconfigNotFound(f"KUBECONFIG={listed}: none of its files exists")
        return found
    home = Path("~/.kube/config").expanduser()
    if not home.is_file():
        raise KubeconfigNotFound(f"no kubeconfig: KUBECONFIG is not set and {home} does not exist")
    return [home]


def merge_kubeconfigs(paths: Sequence[Path]) -> dict[str, Any]:
    """One kubeconfig from ``paths``, merged as kubectl merges them (see the module doc)."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    for path in paths:
        config = _load(path.read_text())
        if "current-context" not in merged and config.get("current-context"):
            merged["current-context"] = config["current-context"]
        for kind, (what, file_fields) in _FILE_FIELDS.items():
            taken = {entry.get("name") for entry in merged[kind]}
            for entry in config.get(kind) or []:
                if not isinstance(entry, dict) or entry.get("name") in taken:
                    continue  # an earlier file defined this name: it keeps it
                body = dict(entry.get(what) or {})
                for name in file_fields:
                    if isinstance(body.get(name), str) and body[name]:
                        body[name] = _resolve(path.parent, body[name])
                merged[kind].append({**entry, what: body})
                taken.add(entry.get("name"))
    return merged


def connection_from_kubeconfig(
    path: str | Path | Sequence[Path], context: str | None = None, pool_size: int = 32
) -> Connection | None:
    """A direct connection for ``context`` (default: the current one) of the kubeconfig ``path`` (one file, or
    several merged), or None when its user needs the generated client (exec plugin, auth provider)."""
    config = merge_kubeconfigs([Path(path)] if isinstance(path, str | Path) else list(path))
    ctx = _named(config.get("contexts", []), context or config.get("current-context", ""), "context")
    cluster = _named(config.get("clusters", []), ctx.get("cluster", ""), "cluster")
    user = _named(config.get("users", []), ctx.get("user", ""), "user")
    if "exec" in user or "auth-provider" in user or "username" in user:
        return None
    tls = _tls_context(cluster)
    if "client-certificate-data" in user or "client-certificate" in user:
        _load_client_cert(tls, user)
    headers: dict[str, str] = {}
    token = user.get("token")
    if not token and "tokenFile" in user:
        token = Path(user["tokenFile"]).read_text().strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    pool = urllib3.PoolManager(maxsize=pool_size, ssl_context=tls)
    return Connection(host=str(cluster["server"]).rstrip("/"), pool=pool, headers=headers)


def _tls_context(cluster: dict[str, Any]) -> ssl.SSLContext:
    """Verifying the cluster's CA when the kubeconfig names one (that CA alone, as kubectl trusts it: the system's
    bundle is not read, 20 ms of every command's start), else the system's roots; or no verification when asked."""
    if cluster.get("insecure-skip-tls-verify"):
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
        return tls
    if "certificate-authority-data" in cluster:
        return ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    if "certificate-authority" in cluster:
        return ssl.create_default_context(cafile=cluster["certificate-authority"])
    return ssl.create_default_context()


def _load_client_cert(tls: ssl.SSLContext, user: dict[str, Any]) -> None:
    """File paths in ``user`` are absolute already (merge_kubeconfigs)."""
    if "client-certificate" in user:
        tls.load_cert_chain(user["client-certificate"], user["client-key"])
        return
    # ssl only loads key material from files: write it to a private temporary directory and remove it.
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = os.path.join(tmp, "c"), os.path.join(tmp, "k")
        for target, data in ((cert, user["client-certificate-data"]), (key, user["client-key-data"])):
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(base64.b64decode(data))
        tls.load_cert_chain(cert, key)
