"""`drain-orchestrator rbac apply`: the shipped RBAC and API Priority and Fairness objects (``MANIFESTS``, in
infra/k8s/) onto a cluster, with the caller's access.

Server-side apply (field manager ``drain-orchestrator``, conflicts forced), so running it again is a no-op and a
ClusterRole someone edited by hand gets the shipped rules back. The cluster is reached through EKS with the caller's
AWS credentials (``--cluster``; their access entry needs cluster-admin rights, e.g. AmazonEKSClusterAdminPolicy) or
through a kubeconfig. ``--dry-run`` asks the apiserver what would change (``dryRun=All``) and changes nothing.
The files are the ones the release ships: a checkout's ``infra/k8s/``, or the copies inside the installed command
line (its wheel), the Lambda code asset or the construct package (``drain_orchestrator_cdk``), or ``--file``.
``MANIFESTS`` is the one list of what the product applies: this command and the stack's RBAC resource
(drain_orchestrator/rbac_resource.py) both apply it, with ``apply_manifest``.

Surge before evict's rights (patch on Deployments and HPAs, ``SURGE_MANIFEST``) are applied only where surge is
enabled: with ``--surge on`` (the default, as the function's default SURGE_BLOCKED_PODS=annotated), or when the
deployed function's SURGE_BLOCKED_PODS is not ``never`` (``--function NAME``: its configuration is read with
lambda:GetFunctionConfiguration). With ``--surge off`` (or ``never``) they are deleted from the cluster if there.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drain_orchestrator.kube.connect import connect
from drain_orchestrator.kube.rest import Kube

FIELD_MANAGER = "drain-orchestrator"
APPLY_PATCH = "application/apply-patch+yaml"
RBAC_GROUP = "rbac.authorization.k8s.io/v1"
FLOWCONTROL_GROUP = "flowcontrol.apiserver.k8s.io/v1"
# kind -> (apiVersion, resource, namespaced): the kinds the shipped manifests hold; anything else is refused, not
# guessed at
KINDS = {
    "ClusterRole": (RBAC_GROUP, "clusterroles", False),
    "ClusterRoleBinding": (RBAC_GROUP, "clusterrolebindings", False),
    "Role": (RBAC_GROUP, "roles", True),
    "RoleBinding": (RBAC_GROUP, "rolebindings", True),
    "PriorityLevelConfiguration": (FLOWCONTROL_GROUP, "prioritylevelconfigurations", False),
    "FlowSchema": (FLOWCONTROL_GROUP, "flowschemas", False),
}
# What the product applies on each served cluster, in order (each file's documents in order: roles before their
# bindings, a priority level before its flow schema): the RBAC the function runs under, then its own share of the
# apiserver under API Priority and Fairness. The one list: `rbac apply` and the stack's RBAC resource read it.
MANIFESTS = ("rbac.yaml", "flowschema.yaml")
_SHIPPED = Path("infra") / "k8s"
# Surge before evict's rights: applied beside MANIFESTS only where surge is enabled (surge_wanted; the stack's RBAC
# resource from its SURGE_BLOCKED_PODS), deleted where it is not.
SURGE_MANIFEST = "rbac-surge.yaml"
_FORBIDDEN_HINT = (
    " (writing RBAC needs cluster-admin rights: an EKS access entry with AmazonEKSClusterAdminPolicy, or a"
    " kubeconfig user bound to cluster-admin)"
)


class ManifestError(ValueError):
    pass


@dataclass(frozen=True)
class Applied:
    kind: str
    name: str
    outcome: str  # created | configured | unchanged | deleted | absent

    def __str__(self) -> str:
        return f"{self.kind.lower()}/{self.name} {self.outcome}"


def add_rbac_parser(subparsers: Any) -> None:
    p = subparsers.add_parser("rbac", help="the Kubernetes RBAC the orchestrator needs")
    actions = p.add_subparsers(dest="rbac_command", required=True)
    a = actions.add_parser(
        "apply", help="apply the shipped RBAC and flow schema (infra/k8s/rbac.yaml, flowschema.yaml) to a cluster"
    )
    where = a.add_mutually_exclusive_group()
    where.add_argument("--cluster", default=None, help="an EKS cluster, reached with your AWS credentials")
    where.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG or ~/.kube/config")
    a.add_argument("--context", default=None, help="kubeconfig context")
    a.add_argument(
        "--file", default=None, help="one manifest instead (default: the shipped rbac.yaml, flowschema.yaml)"
    )
    surge = a.add_mutually_exclusive_group()
    surge.add_argument(
        "--surge",
        choices=("on", "off"),
        default=None,
        help="surge before evict's rights (rbac-surge.yaml): on (default) applies them, off deletes them",
    )
    surge.add_argument(
        "--function", default=None, help="follow this deployed function's SURGE_BLOCKED_PODS (name or ARN)"
    )
    a.add_argument("--region", default=None, help="the function's region (default: the AWS configuration's)")
    a.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    a.set_defaults(func=run_rbac_apply)


def run_rbac_apply(args: argparse.Namespace) -> int:
    if args.file and (args.surge or args.function):
        print("error: --file applies exactly that manifest: --surge and --function do not apply", file=sys.stderr)
        return 2
    try:
        paths = [Path(args.file)] if args.file else shipped_manifests()
        documents = [doc for path in paths for doc in load_manifest(path.read_text(encoding="utf-8"), str(path))]
        surge_docs: list[dict[str, Any]] = []
        if not args.file:
            surge_path = shipped_manifest(SURGE_MANIFEST)
            surge_docs = load_manifest(surge_path.read_text(encoding="utf-8"), str(surge_path))
    except (OSError, ManifestError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        surge, why = (False, "") if args.file else surge_wanted(args)
    except Exception as exc:  # the function cannot be read, or its setting is invalid: nothing applied
        print(f"error: --function {args.function}: {' '.join(str(exc).split())[:400]}", file=sys.stderr)
        return 2
    where = f"cluster {args.cluster}" if args.cluster else "the kubeconfig's cluster"
    try:
        kube = _connect(args)
        results = apply_manifest(kube, documents + (surge_docs if surge else []), dry_run=args.dry_run)
        if surge_docs and not surge:
            results += remove_manifest(kube, surge_docs, dry_run=args.dry_run)
    except Exception as exc:  # one line, not a traceback; the EKS token is never part of it
        hint = _FORBIDDEN_HINT if getattr(exc, "status", None) == 403 else ""
        print(f"error: {where}: {' '.join(str(exc).split())[:400]}{hint}", file=sys.stderr)
        return 1
    suffix = " (server dry run)" if args.dry_run else ""
    if why:
        print(f"surge before evict: {'on' if surge else 'off'} ({why})")
    for result in results:
        print(f"{result}{suffix}")
    return 0


def surge_wanted(args: argparse.Namespace) -> tuple[bool, str]:
    """Whether surge before evict's rights belong on the cluster, and why."""
    if args.surge is not None:
        return args.surge == "on", f"--surge {args.surge}"
    if args.function:
        from drain_orchestrator.aws.clients import lambda_client  # noqa: PLC0415
        from drain_orchestrator.workflow_settings import surge_mode  # noqa: PLC0415

        config = lambda_client(region=args.region).get_function_configuration(FunctionName=args.function)
        mode = surge_mode((config.get("Environment") or {}).get("Variables") or {})
        return mode != "never", f"SURGE_BLOCKED_PODS={mode} on {args.function}"
    return True, "the default SURGE_BLOCKED_PODS=annotated; --surge off or --function NAME to follow a deployment"


def shipped_manifests() -> list[Path]:
    """``MANIFESTS`` from where the release put them (shipped_manifest)."""
    return [shipped_manifest(name) for name in MANIFESTS]


def shipped_manifest(name: str = "rbac.yaml") -> Path:
    """infra/k8s/NAME of this checkout, else the copy in the installed command line's wheel or in the Lambda code
    asset (``drain_orchestrator/k8s/``), else the copy inside the installed construct package."""
    checkout = Path(__file__).resolve().parents[3] / _SHIPPED / name  # lambda_src/drain_orchestrator/cli/ -> checkout
    if checkout.is_file():
        return checkout
    from importlib.resources import files  # noqa: PLC0415

    for package in ("drain_orchestrator", "drain_orchestrator_cdk"):
        try:
            packaged = Path(str(files(package) / "k8s" / name))
        except ModuleNotFoundError:
            continue
        if packaged.is_file():
            return packaged
    raise ManifestError(
        f"the shipped manifest {name} was not found (no checkout, not in the installed packages): "
        f"pass --file PATH, the infra/k8s/{name} of the release you deployed"
    )


def load_manifest(text: str, source: str) -> list[dict[str, Any]]:
    """The manifest's documents, each checked to be an RBAC object this command knows how to apply."""
    import yaml  # noqa: PLC0415

    try:
        loaded = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source}: not YAML: {' '.join(str(exc).split())[:200]}") from exc
    if not loaded:
        raise ManifestError(f"{source}: no documents")
    for i, doc in enumerate(loaded):
        where = f"{source}: document {i + 1}"
        if not isinstance(doc, dict):
            raise ManifestError(f"{where}: expected a mapping, got {type(doc).__name__}")
        kind = doc.get("kind")
        if kind not in KINDS or doc.get("apiVersion") != KINDS[kind][0]:
            expected = ", ".join(f"{version} {name}" for name, (version, _, _) in KINDS.items())
            raise ManifestError(f"{where}: apiVersion/kind {doc.get('apiVersion')}/{kind}: expected one of {expected}")
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise ManifestError(f"{where}: metadata.name: expected a non-empty string")
        if KINDS[doc["kind"]][2] and not isinstance(meta.get("namespace"), str):
            raise ManifestError(f"{where}: metadata.namespace: required for a {doc['kind']}")
    return loaded


def object_path(doc: dict[str, Any]) -> str:
    version, resource, namespaced = KINDS[doc["kind"]]
    meta = doc["metadata"]
    scope = f"/namespaces/{meta['namespace']}" if namespaced else ""
    return f"/apis/{version}{scope}/{resource}/{meta['name']}"


def apply_manifest(
    kube: Kube, documents: list[dict[str, Any]], *, dry_run: bool = False, field_manager: str = FIELD_MANAGER
) -> list[Applied]:
    """Server-side apply of each document, in order (roles before their bindings), as ``field_manager``."""
    results = []
    for doc in documents:
        path = object_path(doc)
        what = f"{doc['kind'].lower()}/{doc['metadata']['name']}"
        before = kube.request("GET", path)
        if not before.ok and before.status != 404:
            raise before.error(f"get {what}")
        query = {"fieldManager": field_manager, "force": "true", "dryRun": "All" if dry_run else None}
        after = kube.request("PATCH", path, query=query, body=doc, content_type=APPLY_PATCH)
        if not after.ok:
            raise after.error(f"apply {what}")
        if before.status == 404:
            outcome = "created"
        else:
            outcome = "unchanged" if _content(before.body) == _content(after.body) else "configured"
        results.append(Applied(doc["kind"], doc["metadata"]["name"], outcome))
    return results


def remove_manifest(kube: Kube, documents: list[dict[str, Any]], *, dry_run: bool = False) -> list[Applied]:
    """Delete each document's object if it is there, in reverse order (bindings before their roles)."""
    results = []
    for doc in reversed(documents):
        path = object_path(doc)
        what = f"{doc['kind'].lower()}/{doc['metadata']['name']}"
        resp = kube.request("DELETE", path, query={"dryRun": "All" if dry_run else None})
        if not resp.ok and resp.status != 404:
            raise resp.error(f"delete {what}")
        results.append(Applied(doc["kind"], doc["metadata"]["name"], "absent" if resp.status == 404 else "deleted"))
    return results


def _content(obj: dict[str, Any]) -> dict[str, Any]:
    """What an apply can change: everything but the server's bookkeeping in metadata."""
    meta = obj.get("metadata") or {}
    kept = {k: meta.get(k) for k in ("labels", "annotations")}
    return {**{k: v for k, v in obj.items() if k not in ("metadata", "status")}, "metadata": kept}


def _connect(args: argparse.Namespace) -> Kube:
    if args.cluster:
        return connect(cluster=args.cluster, pool_size=2)
    return connect(kubeconfig=args.kubeconfig, context=args.context, pool_size=2)
