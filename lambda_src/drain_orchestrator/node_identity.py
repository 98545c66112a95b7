"""Which Node object a drain acts on (pure): the one its locate step found, by UID and providerID.

Node names are reused: an IP-based name comes back with the next instance that gets the address, and a Node deleted
and registered again under its name is another object with another UID. A drain that waits (a held drain's durable
waits last up to HELD_RECHECK_MAX_SECONDS) must not find the replacement under the old name and cordon, annotate or
drain it: every step after the locate step acts on the object the locate step found, and a Node with the same name
but another identity counts as the located node gone (kube/node_marks.py checks each read and conditions each write
on the UID).

An identity may be partial: an execution that located its node before identities were recorded knows only its
instance, and learns the UID at its next look at the node (``learned``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


def instance_id_from_provider_id(provider_id: str | None) -> str | None:
    """`aws:///us-east-1a/i-0abc` (or `aws:////i-0abc`, or bare `i-0abc`) → `i-0abc`; Fargate etc. → None."""
    if not provider_id:
        return None
    last = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return last if last.startswith("i-") else None


@dataclass(frozen=True)
class NodeIdentity:
    """A Node object's identity: its UID, its providerID, the EC2 instance the providerID names. Each field is
    optional: an unknown field matches anything (a partial identity is a weaker check, never a false alarm)."""

    uid: str | None = None
    provider_id: str | None = None
    instance_id: str | None = None

    @classmethod
    def of(cls, node: dict[str, Any]) -> NodeIdentity:
        """The identity of a Node as the apiserver answered it."""
        uid = (node.get("metadata") or {}).get("uid")
        provider_id = (node.get("spec") or {}).get("providerID")
        pid = str(provider_id) if provider_id else None
        return cls(str(uid) if uid else None, pid, instance_id_from_provider_id(pid))

    def matches(self, node: dict[str, Any]) -> bool:
        """``node`` (a Node's JSON) is this object: no known field differs. A providerID the Node does not carry
        (yet) differs from none."""
        seen = NodeIdentity.of(node)
        return not (
            _differs(self.uid, seen.uid)
            or _differs(self.provider_id, seen.provider_id)
            or _differs(self.instance_id, seen.instance_id)
        )

    @property
    def complete(self) -> bool:
        """The UID is known: the identity names one object."""
        return self.uid is not None

    def learned(self, node: dict[str, Any]) -> NodeIdentity:
        """This identity completed from ``node``, which :meth:`matches` it."""
        seen = NodeIdentity.of(node)
        return NodeIdentity(
            self.uid or seen.uid, self.provider_id or seen.provider_id, self.instance_id or seen.instance_id
        )

    def describe(self) -> str:
        """For people: "uid …, providerID …" (the known fields)."""
        parts = [f"uid {self.uid}" if self.uid else "", f"providerID {self.provider_id}" if self.provider_id else ""]
        if not self.provider_id and self.instance_id:
            parts.append(f"instance {self.instance_id}")
        return ", ".join(p for p in parts if p) or "unknown"

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeIdentity:
        return cls(data.get("uid"), data.get("provider_id"), data.get("instance_id"))


def _differs(known: str | None, seen: str | None) -> bool:
    return known is not None and seen is not None and known != seen
