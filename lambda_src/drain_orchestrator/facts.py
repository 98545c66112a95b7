"""What EC2 (and, when needed, Auto Scaling) says about one instance: the input of the ownership decision and of
the corroboration of the event (corroborate.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

# Tag EC2 Auto Scaling puts on every instance it launches; it names the instance's group.
ASG_NAME_TAG = "aws:autoscaling:groupName"


@dataclass(frozen=True)
class InstanceFacts:
    instance_id: str
    state: str
    private_dns_name: str | None
    az: str | None
    instance_tags: dict[str, str]
    asg_name: str | None
    # None means "not fetched": ASG tags are read only when the instance's own tags do not decide.
    asg_tags: dict[str, str] | None = None
    # What Auto Scaling says now (DescribeAutoScalingInstances), asked for events with a lifecycle action only:
    # the group the instance is in and its LifecycleState (e.g. Terminating:Wait). None with ``in_group`` False:
    # asked, and Auto Scaling has no such instance in any group; ``in_group`` None: not asked.
    group: str | None = None
    lifecycle_state: str | None = None
    in_group: bool | None = None

    def with_asg_tags(self, tags: dict[str, str]) -> InstanceFacts:
        return replace(self, asg_tags=dict(tags))

    def with_group(self, group: str | None, lifecycle_state: str | None) -> InstanceFacts:
        """What DescribeAutoScalingInstances said (None, None: the instance is in no group)."""
        return replace(self, group=group, lifecycle_state=lifecycle_state, in_group=group is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance_id": self.instance_id,
            "state": self.state,
            "private_dns_name": self.private_dns_name,
            "az": self.az,
            "instance_tags": dict(self.instance_tags),
            "asg_name": self.asg_name,
            "asg_tags": None if self.asg_tags is None else dict(self.asg_tags),
            **(
                {}
                if self.in_group is None
                else {"group": self.group, "lifecycle_state": self.lifecycle_state, "in_group": self.in_group}
            ),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InstanceFacts:
        asg_tags = data.get("asg_tags")
        return cls(
            instance_id=str(data["instance_id"]),
            state=str(data["state"]),
            private_dns_name=data.get("private_dns_name"),
            az=data.get("az"),
            instance_tags={str(k): str(v) for k, v in data.get("instance_tags", {}).items()},
            asg_name=data.get("asg_name"),
            asg_tags=None if asg_tags is None else {str(k): str(v) for k, v in asg_tags.items()},
            group=data.get("group"),
            lifecycle_state=data.get("lifecycle_state"),
            in_group=data.get("in_group"),
        )
