"""The stack's RBAC resource: a CloudFormation custom resource, one per served cluster (infra/rbac_applier.py), that
applies the shipped manifests (cli/rbac.py's ``MANIFESTS``: the RBAC and the flow schema; ``SURGE_MANIFEST`` too where
surge before evict is on, the ``Surge`` property) on its cluster through the EKS token path the function uses,
applies them again when a deploy changes them, and removes them with the stack.

- What it applied is recorded by the apiserver itself: it applies with a field manager of its own, derived from the
  stack and the resource (``field_manager``), so an update and a delete find exactly the objects this stack applied
  (``managedFields``), whatever the release that applied them.
- Update: the manifests are applied again; an object this stack applied that the new release no longer ships is
  removed. Delete: every object it applied is removed. An object someone else applied too (``rbac apply``, kubectl,
  another stack) is not deleted: this stack's claim on its fields is released and the object stays as the other
  applier left it.
- A failed create removes what it applied before it answers, so a rollback finds nothing half-done.
- Only the cluster name comes from the event: what is applied is this code asset's own manifests, so anyone allowed to
  invoke this function can apply or remove the product's RBAC and nothing else. The answer goes to the event's
  ``ResponseURL`` (the presigned S3 URL CloudFormation waits on); nothing here raises into Lambda, whose retries would
  run a create twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from drain_orchestrator.cli.rbac import (
    KINDS,
    SURGE_MANIFEST,
    Applied,
    apply_manifest,
    load_manifest,
    object_path,
    shipped_manifest,
    shipped_manifests,
)
from drain_orchestrator.kube.rest import Kube

log = logging.getLogger(__name__)

REQUEST_TYPES = ("Create", "Update", "Delete")
PHYSICAL_PREFIX = "drain-orchestrator-rbac/"
# the apiserver may not know the role yet right after its access entry was created: asked again until then
ACCESS_RETRY_SECONDS = (2.0, 4.0, 8.0, 15.0)
RESPONSE_MARGIN_SECONDS = 20.0  # kept from the invocation's time for the answer to CloudFormation
_FORBIDDEN = (401, 403)
_REASON_LIMIT = 1000  # CloudFormation takes answers up to 4 KiB


class RequestError(ValueError):
    """The event is not a custom resource request this handler can act on; names the field."""


@dataclass(frozen=True)
class Request:
    kind: str  # Create | Update | Delete
    response_url: str
    stack_id: str
    request_id: str
    logical_id: str
    cluster: str
    physical_id: str | None = None
    old_cluster: str | None = None
    # surge before evict's rights (rbac-surge.yaml) too; a resource of a release before the property had them
    surge: bool = True

    @classmethod
    def parse(cls, event: Mapping[str, Any]) -> Request:
        def text(key: str, source: Mapping[str, Any] = event, where: str = "") -> str:
            value = source.get(key)
            if not isinstance(value, str) or not value:
                raise RequestError(f"{where}{key}: expected a non-empty string, got {value!r}")
            return value

        kind = text("RequestType")
        if kind not in REQUEST_TYPES:
            raise RequestError(f"RequestType: {kind!r} is not one of {', '.join(REQUEST_TYPES)}")
        props = event.get("ResourceProperties")
        if not isinstance(props, Mapping):
            raise RequestError(f"ResourceProperties: expected an object, got {props!r}")
        old = event.get("OldResourceProperties")
        return cls(
            kind=kind,
            response_url=text("ResponseURL"),
            stack_id=text("StackId"),
            request_id=text("RequestId"),
            logical_id=text("LogicalResourceId"),
            cluster=text("ClusterName", props, "ResourceProperties."),
            physical_id=event.get("PhysicalResourceId") if kind != "Create" else None,
            old_cluster=old.get("ClusterName") if isinstance(old, Mapping) else None,
            surge=_surge(props),
        )

    @property
    def field_manager(self) -> str:
        """This stack's resource as a server-side apply field manager: the same for every request it gets, another
        for another stack (or the same stack deleted and created again: a new StackId)."""
        digest = hashlib.sha256(f"{self.stack_id}/{self.logical_id}".encode()).hexdigest()[:16]
        return f"drain-orchestrator-stack-{digest}"


@dataclass(frozen=True)
class Removed:
    kind: str
    name: str
    outcome: str  # deleted | released (the other appliers named)

    def __str__(self) -> str:
        return f"{self.kind.lower()}/{self.name} {self.outcome}"


@dataclass
class Outcome:
    ok: bool
    reason: str
    physical_id: str
    data: dict[str, str] = field(default_factory=dict)


def _surge(props: Mapping[str, Any]) -> bool:
    value = props.get("Surge", "true")
    if value not in ("true", "false", True, False):
        raise RequestError(f"ResourceProperties.Surge: expected true or false, got {value!r}")
    return value in ("true", True)


def shipped_documents(surge: bool = True) -> list[dict[str, Any]]:
    """The shipped manifests' documents, with surge before evict's rights where ``surge``."""
    paths = [*shipped_manifests(), *([shipped_manifest(SURGE_MANIFEST)] if surge else [])]
    return [doc for path in paths for doc in load_manifest(path.read_text(encoding="utf-8"), path.name)]


def handle(
    request: Request,
    *,
    kube_for: Callable[[str], Kube],
    documents: Callable[[], list[dict[str, Any]]],
    deadline: float,
) -> Outcome:
    """Carry out one request; never raises (every failure is an unsuccessful Outcome naming what failed)."""
    physical = f"{PHYSICAL_PREFIX}{request.cluster}"
    try:
        if request.kind == "Delete":
            return _delete(request, kube_for, physical)
        shipped = documents()
        kube = kube_for(request.cluster)
        applied = _apply_until(kube, shipped, request.field_manager, deadline)
        # an update on the same cluster drops what the release no longer ships; a create (or a move to another
        # cluster, whose old one CloudFormation deletes afterwards under the old physical id) starts clean
        keep = {object_path(doc) for doc in shipped}
        pruned = remove_applied(kube, request.field_manager, keep=keep) if request.kind == "Update" else []
        summary = _listed("applied", applied) + ("; " + _listed("removed", pruned) if pruned else "")
        return Outcome(True, summary, physical, {"Applied": ",".join(f"{a.kind}/{a.name}" for a in applied)})
    except Exception as exc:  # reported to CloudFormation, which rolls back; the EKS token is never in the text
        message = f"cluster {request.cluster}: {' '.join(str(exc).split())}"
        if request.kind == "Create":
            message += _undo(kube_for, request)
        log.error("rbac %s failed: %s", request.kind.lower(), message)
        return Outcome(False, message, request.physical_id or physical)


def _delete(request: Request, kube_for: Callable[[str], Kube], physical: str) -> Outcome:
    try:
        kube = kube_for(request.cluster)
    except Exception as exc:
        if getattr(exc, "code", None) != "ResourceNotFoundException":  # DescribeCluster: the cluster is gone
            raise
        return Outcome(
            True, f"cluster {request.cluster} no longer exists: nothing to remove", request.physical_id or physical
        )
    removed = remove_applied(kube, request.field_manager, keep=set())
    return Outcome(True, _listed("removed", removed), request.physical_id or physical)


def _apply_until(kube: Kube, documents: list[dict[str, Any]], manager: str, deadline: float) -> list[Applied]:
    """Apply, asking again while the apiserver does not know or trust the role yet (a new access entry), until the
    deadline."""
    waits = iter(ACCESS_RETRY_SECONDS)
    while True:
        try:
            return apply_manifest(kube, documents, field_manager=manager)
        except Exception as exc:
            wait = next(waits, ACCESS_RETRY_SECONDS[-1])
            if getattr(exc, "status", None) not in _FORBIDDEN or time.monotonic() + wait > deadline:
                raise
            log.warning(
                "rbac apply refused (%s), again in %.0f s: a new access entry may not be in force yet", exc, wait
            )
            time.sleep(wait)


def _undo(kube_for: Callable[[str], Kube], request: Request) -> str:
    try:
        removed = remove_applied(kube_for(request.cluster), request.field_manager, keep=set())
    except Exception as exc:
        return f"; what it applied could not be removed: {' '.join(str(exc).split())}"
    return f"; {_listed('removed', removed)}" if removed else ""


def remove_applied(kube: Kube, manager: str, *, keep: set[str]) -> list[Removed]:
    """Every object of the shipped kinds that ``manager`` applied, except those at the paths in ``keep``: deleted,
    or, where another applier owns some of its content too, released (this manager's fields given up)."""
    removed = []
    for kind, (version, resource, _namespaced) in KINDS.items():
        listing = kube.request("GET", f"/apis/{version}/{resource}")
        if not listing.ok:
            raise listing.error(f"list {resource}")
        for item in listing.body.get("items") or []:
            meta = item.get("metadata") or {}
            entries = meta.get("managedFields") or []
            if not any(e.get("manager") == manager and e.get("operation") == "Apply" for e in entries):
                continue
            doc = {"apiVersion": version, "kind": kind, "metadata": _identity(meta)}
            path = object_path(doc)
            if path in keep:
                continue
            others = sorted({str(e.get("manager")) for e in entries if e.get("manager") != manager and _content(e)})
            if others:
                query = {"fieldManager": manager, "force": "true"}
                done = kube.request("PATCH", path, query=query, body=doc, content_type="application/apply-patch+yaml")
                outcome = f"released (also applied by {', '.join(others)})"
            else:
                done = kube.request("DELETE", path)
                outcome = "deleted"
            if not done.ok and done.status != 404:
                raise done.error(f"remove {kind.lower()}/{meta.get('name')}")
            removed.append(Removed(kind, str(meta.get("name")), outcome))
    return removed


def _identity(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {k: meta[k] for k in ("name", "namespace") if k in meta}


def _content(entry: Mapping[str, Any]) -> bool:
    """A managedFields entry that owns more than metadata, outside a subresource (the status APF writes on a flow
    schema is not an applier's)."""
    fields = entry.get("fieldsV1") or {}
    return not entry.get("subresource") and any(key != "f:metadata" for key in fields)


def _listed(verb: str, results: list[Applied] | list[Removed]) -> str:
    return f"{verb}: {', '.join(str(r) for r in results)}" if results else f"{verb}: nothing"


def answer(request: Request, outcome: Outcome) -> dict[str, Any]:
    reason = outcome.reason if len(outcome.reason) <= _REASON_LIMIT else outcome.reason[: _REASON_LIMIT - 1] + "…"
    return {
        "Status": "SUCCESS" if outcome.ok else "FAILED",
        "Reason": reason,
        "PhysicalResourceId": outcome.physical_id,
        "StackId": request.stack_id,
        "RequestId": request.request_id,
        "LogicalResourceId": request.logical_id,
        "NoEcho": False,
        "Data": outcome.data,
    }


def send(url: str, body: Mapping[str, Any], attempts: int = 3) -> None:
    """PUT the answer where CloudFormation waits for it (a presigned S3 URL: no content type may be signed)."""
    payload = json.dumps(body).encode()
    for attempt in range(1, attempts + 1):
        put = urllib.request.Request(url, data=payload, method="PUT", headers={"Content-Type": ""})  # noqa: S310
        try:
            with urllib.request.urlopen(put, timeout=30) as response:  # noqa: S310 - CloudFormation's URL
                response.read()
            return
        except OSError as exc:
            if attempt == attempts:
                raise
            log.warning("rbac: answer to CloudFormation not delivered (%s), attempt %d", exc, attempt)
            time.sleep(2.0 * attempt)


def handler(event: Mapping[str, Any], context: Any) -> None:
    """Lambda entry point (infra/rbac_applier.py's function)."""
    from drain_orchestrator.kube.connect import connect  # noqa: PLC0415 - kubernetes and boto3 load here

    try:
        request = Request.parse(event)
    except RequestError as exc:
        log.error("rbac: not a custom resource request: %s", exc)
        url = event.get("ResponseURL")
        if isinstance(url, str) and url:  # CloudFormation waits for an answer: a failure, naming the field
            body = {key: event.get(key) for key in ("StackId", "RequestId", "LogicalResourceId")}
            physical = event.get("PhysicalResourceId") or f"{PHYSICAL_PREFIX}invalid"
            send(url, {**body, "Status": "FAILED", "Reason": f"bad request: {exc}", "PhysicalResourceId": physical})
        return
    deadline = time.monotonic() + context.get_remaining_time_in_millis() / 1000 - RESPONSE_MARGIN_SECONDS
    outcome = handle(
        request,
        kube_for=lambda cluster: connect(cluster=cluster, pool_size=2),
        documents=lambda: shipped_documents(request.surge),
        deadline=deadline,
    )
    log.info("rbac %s on cluster %s: %s", request.kind.lower(), request.cluster, outcome.reason)
    send(request.response_url, answer(request, outcome))
