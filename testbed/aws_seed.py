"""Seed the AWS emulator for a test: EKS clusters that point at the local apiserver, ASGs with lifecycle hooks and
tags, plain instances, kwok nodes that match instances (name = private DNS name, providerID = aws:///<az>/<id>),
lifecycle actions, and the Lambda's assumed-role session. All calls go over HTTP to moto server."""

from __future__ import annotations

import json
import secrets
import urllib.request
from typing import TYPE_CHECKING, Any

import boto3

from drain_orchestrator.aws import reads_table

if TYPE_CHECKING:
    from testbed.bed import Testbed
    from testbed.kube import KubeScenario

TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING"
LAUNCHING = "autoscaling:EC2_INSTANCE_LAUNCHING"
DEFAULT_HOOKS: tuple[dict[str, Any], ...] = ({"name": "drain", "transition": TERMINATING, "heartbeat_timeout": 300},)
# The names the bed's scenarios give the orchestrator's own hooks (terminate, launch, the demo's launch hook):
# the function answers only these (LIFECYCLE_HOOK_NAMES); a test's other hook names stand for other tools'.
OUR_HOOKS = ("drain", "launch", "join")
# the shared-reads table the bed's function is given (SHARED_READS_TABLE), as the stack creates it
SHARED_READS_TABLE = "drain-shared-reads"


class AwsSeed:
    def __init__(self, bed: Testbed) -> None:
        self.bed = bed
        self.endpoint = bed.aws_endpoint
        self.region = bed.region
        self.account_id = bed.account_id
        self._clients: dict[str, Any] = {}

    # ---- plumbing -----------------------------------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        req = urllib.request.Request(
            self.endpoint + path,
            data=json.dumps(body or {}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
        return json.loads(raw) if raw.strip().startswith((b"{", b"[")) else raw

    def reset(self) -> None:
        """Fresh emulator state (moto's reset also clears the test bed's lifecycle actions)."""
        self._post("/moto-api/reset")
        self.bed.clear_access_entries()

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = boto3.client(
                service,
                endpoint_url=self.endpoint,
                region_name=self.region,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",  # moto's fake credentials
            )
        return self._clients[service]

    # ---- EKS ----------------------------------------------------------------------------------------------------
    def eks_cluster(self, name: str, tags: dict[str, str] | None = None) -> dict[str, Any]:
        eks = self.client("eks")
        eks.create_cluster(
            name=name,
            roleArn=f"arn:aws:iam::{self.account_id}:role/eks-cluster",
            resourcesVpcConfig={"subnetIds": ["subnet-1"]},
            tags=tags or {},
        )
        self.bed.register_cluster(name)
        return eks.describe_cluster(name=name)["cluster"]  # type: ignore[no-any-return]

    def lambda_session(self, role_name: str = "drain-orchestrator") -> boto3.Session:
        creds = self.client("sts").assume_role(
            RoleArn=self.role_arn(role_name), RoleSessionName="drain-orchestrator-test"
        )["Credentials"]
        return boto3.Session(
            aws_access_key_id=creds["AccessKeyId"],
            aws_secret_access_key=creds["SecretAccessKey"],
            aws_session_token=creds["SessionToken"],
            region_name=self.region,
        )

    def lambda_env(self, clusters: str, role_name: str = "drain-orchestrator") -> tuple[dict[str, str], str]:
        """What the deployed Lambda would have: its role's credentials, access entries on the served clusters
        (kubernetesGroups ["drain-orchestrator"]), settings, a notification topic (read through the returned
        SQS queue URL) and the shared-reads table."""
        for name in [c for c in clusters.split(",") if c and c != "*"]:
            self.bed.put_access_entry(name, self.role_arn(role_name), "drain-orchestrator", ["drain-orchestrator"])
        sns, sqs = self.client("sns"), self.client("sqs")
        topic_arn = sns.create_topic(Name="drain-notifications")["TopicArn"]
        queue_url = sqs.create_queue(QueueName="drain-notifications")["QueueUrl"]
        qarn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=qarn, Attributes={"RawMessageDelivery": "true"})
        creds = self.lambda_session(role_name).get_credentials().get_frozen_credentials()
        env = {
            **self.bed.aws_env(),
            "AWS_ACCESS_KEY_ID": creds.access_key,
            "AWS_SECRET_ACCESS_KEY": creds.secret_key,
            "AWS_SESSION_TOKEN": creds.token or "",
            "CLUSTER_NAMES": clusters,
            "LIFECYCLE_HOOK_NAMES": ",".join(OUR_HOOKS),
            "NOTIFICATION_TOPIC_ARN": topic_arn,
            "POWERTOOLS_SERVICE_NAME": "drain-orchestrator",
            reads_table.TABLE_VARIABLE: self.shared_reads_table(),
        }
        return env, queue_url

    def shared_reads_table(self, name: str = SHARED_READS_TABLE) -> str:
        """The shared-reads table as the stack creates it (infra/shared_reads.py: its keys, on-demand, TTL on its
        expiry attribute), unless it exists: moto's reset drops tables, so each test's lambda_env makes it again."""
        dynamodb = self.client("dynamodb")
        try:
            dynamodb.describe_table(TableName=name)
        except dynamodb.exceptions.ResourceNotFoundException:
            dynamodb.create_table(
                TableName=name,
                AttributeDefinitions=[
                    {"AttributeName": reads_table.PARTITION_KEY, "AttributeType": "S"},
                    {"AttributeName": reads_table.SORT_KEY, "AttributeType": "S"},
                ],
                KeySchema=[
                    {"AttributeName": reads_table.PARTITION_KEY, "KeyType": "HASH"},
                    {"AttributeName": reads_table.SORT_KEY, "KeyType": "RANGE"},
                ],
                BillingMode="PAY_PER_REQUEST",
            )
            dynamodb.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": reads_table.EXPIRY_ATTRIBUTE},
            )
        return name

    def drain_notifications(self, queue_url: str) -> list[dict[str, Any]]:
        sqs = self.client("sqs")
        got: list[dict[str, Any]] = []
        while True:
            msgs = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
                "Messages", []
            )
            if not msgs:
                return got
            for m in msgs:
                got.append(json.loads(m["Body"]))
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])

    def role_arn(self, role_name: str = "drain-orchestrator") -> str:
        return f"arn:aws:iam::{self.account_id}:role/{role_name}"

    # ---- EC2 / Auto Scaling -------------------------------------------------------------------------------------
    def _ami(self) -> str:
        # the emulator serves two images (testbed/aws/amis.json), so listing them is cheap
        images = self.client("ec2").describe_images(Owners=["amazon"])["Images"]
        return str(images[0]["ImageId"])

    def instance(self, *, tags: dict[str, str] | None = None, az: str = "us-east-1a") -> str:
        kw: dict[str, Any] = {
            "ImageId": self._ami(),
            "MinCount": 1,
            "MaxCount": 1,
            "InstanceType": "m5.large",
            "Placement": {"AvailabilityZone": az},
        }
        if tags:
            kw["TagSpecifications"] = [
                {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
            ]
        return str(self.client("ec2").run_instances(**kw)["Instances"][0]["InstanceId"])

    def asg(
        self,
        name: str,
        *,
        size: int,
        tags: dict[str, str] | None = None,
        hooks: list[dict[str, Any]] | tuple[dict[str, Any], ...] = DEFAULT_HOOKS,
        az: str = "us-east-1a",
        propagate: bool = True,
    ) -> list[str]:
        asc = self.client("autoscaling")
        lc = f"lc-{name}-{secrets.token_hex(2)}"
        asc.create_launch_configuration(LaunchConfigurationName=lc, ImageId=self._ami(), InstanceType="m5.large")
        asc.create_auto_scaling_group(
            AutoScalingGroupName=name,
            LaunchConfigurationName=lc,
            MinSize=0,
            MaxSize=size + 5,
            DesiredCapacity=size,
            AvailabilityZones=[az],
            Tags=[
                {
                    "ResourceId": name,
                    "ResourceType": "auto-scaling-group",
                    "Key": k,
                    "Value": v,
                    "PropagateAtLaunch": propagate,
                }
                for k, v in (tags or {}).items()
            ],
        )
        for h in hooks:
            asc.put_lifecycle_hook(
                AutoScalingGroupName=name,
                LifecycleHookName=h["name"],
                LifecycleTransition=h.get("transition", TERMINATING),
                HeartbeatTimeout=int(h.get("heartbeat_timeout", 300)),
                DefaultResult=h.get("default_result", "ABANDON"),
            )
        group = asc.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"][0]
        return [i["InstanceId"] for i in group["Instances"]]

    def stop_instance(self, instance_id: str) -> None:
        """EC2 stops the instance (moto: at once): what a state-change "stopping" event is about."""
        self.client("ec2").stop_instances(InstanceIds=[instance_id])

    def start_instance(self, instance_id: str) -> None:
        """EC2 starts the stopped instance again (moto: running at once): a stop or hibernation that ended."""
        self.client("ec2").start_instances(InstanceIds=[instance_id])

    def terminate_instance(self, instance_id: str) -> None:
        """EC2 terminates the instance (moto: at once): what a state-change "shutting-down"/"terminated" is about."""
        self.client("ec2").terminate_instances(InstanceIds=[instance_id])

    def describe(self, instance_id: str) -> dict[str, Any]:
        res = self.client("ec2").describe_instances(InstanceIds=[instance_id])
        return res["Reservations"][0]["Instances"][0]  # type: ignore[no-any-return]

    def nodes_for(self, k8s: KubeScenario, instance_ids: list[str], *, by: str = "dns") -> list[str]:
        """kwok nodes for instances: named by private DNS name (default, as EKS AMIs do) or by instance id."""
        names = []
        for iid in instance_ids:
            inst = self.describe(iid)
            az = inst["Placement"]["AvailabilityZone"]
            name = inst["PrivateDnsName"] if by == "dns" else iid
            k8s.add_nodes(1, zone=az, names=[name], provider_ids=[f"aws:///{az}/{iid}"])
            names.append(name)
        return names

    def place_in_capacity_reservation(self, instance_id: str, reservation_id: str | None) -> None:
        """The instance runs in this capacity reservation (a Capacity Block's, an ODCR's; None: in none), as
        DescribeInstances then says (test-bed extension, testbed/aws/ec2.py)."""
        self._post(
            "/_testbed/ec2/capacity-reservation",
            {"instance_id": instance_id, "capacity_reservation_id": reservation_id},
        )

    def report_state_after(self, instance_id: str, state: str, reads: int) -> None:
        """EC2 answers ``reads`` more DescribeInstances naming the instance as it stands, then reports it in
        ``state``: a read that lags, as DescribeInstances' eventual consistency allows (testbed/aws/ec2.py)."""
        self._post("/_testbed/ec2/instance-state", {"instance_id": instance_id, "state": state, "after_reads": reads})

    def forget_terminated(self, instance_id: str) -> None:
        """EC2 no longer lists the terminated instance: the while AWS lists recently terminated instances is over
        (testbed/aws/ec2.py)."""
        self._post("/_testbed/ec2/forget-terminated", {"instance_id": instance_id})

    # ---- lifecycle actions (test-bed extension) -------------------------------------------------------------------
    def start_lifecycle_action(self, asg: str, hook: str, instance_id: str) -> str:
        return str(
            self._post("/_testbed/lifecycle/start", {"asg": asg, "hook": hook, "instance_id": instance_id})["token"]
        )

    def set_hook_global_timeout(self, asg: str, hook: str, seconds: int) -> None:
        """A hook's GlobalTimeout, reported and enforced (AWS derives it: min(100 x HeartbeatTimeout, 48 h); the
        bed lets a test make it short)."""
        self._post("/_testbed/autoscaling/hook-global-timeout", {"asg": asg, "hook": hook, "seconds": seconds})

    def enforce_iam(self, role_name: str, policies: list[dict[str, Any]]) -> None:
        """From now on the role's calls on named resources are allowed or denied by these identity policies
        ([{name, policy}]), as IAM would (testbed/aws/iam.py); an empty list lifts it."""
        self._post("/_testbed/iam/policies", {"role_arn": self.role_arn(role_name), "policies": policies})

    def lifecycle_state(self, instance_id: str) -> tuple[str, str] | None:
        """(group, LifecycleState) as DescribeAutoScalingInstances reports the instance; None: in no group."""
        found = self.client("autoscaling").describe_auto_scaling_instances(InstanceIds=[instance_id])
        for inst in found.get("AutoScalingInstances", []):
            return str(inst["AutoScalingGroupName"]), str(inst["LifecycleState"])
        return None

    def lifecycle_actions(self) -> list[dict[str, Any]]:
        """Every action: state (ACTIVE, COMPLETED, TIMED_OUT, SUPERSEDED), result (the hook's DefaultResult once
        timed out), heartbeats, last_heartbeat, completed_by (the caller's role ARN, "access-key:<id>", or
        "timeout"), completed_with, completed_at, global_deadline."""
        return list(self._post("/_testbed/lifecycle/actions"))

    def complete_lifecycle_action_as(
        self, role_name: str, asg: str, hook: str, instance_id: str, result: str = "CONTINUE"
    ) -> None:
        """Complete (CONTINUE) or abandon (ABANDON) an action as another principal would: an operator or another
        tool, through the real API with that role's credentials."""
        self.lambda_session(role_name).client("autoscaling", endpoint_url=self.endpoint).complete_lifecycle_action(
            AutoScalingGroupName=asg, LifecycleHookName=hook, InstanceId=instance_id, LifecycleActionResult=result
        )

    def requests(self) -> list[dict[str, Any]]:
        """AWS requests the emulator served since the last reset: access_key, service, action, count."""
        return list(self._post("/_testbed/requests"))

    def account_limits(self, **settings: Any) -> dict[str, Any]:
        """Turn the emulator's account limits on or off (testbed/aws/throttle.py), e.g. ``ec2=True,
        lambda_concurrency=1000``; with no settings, what they are and what they counted. A reset turns them off."""
        return dict(self._post("/_testbed/throttle", settings))

    def acquire_invocation(self) -> bool:
        """One run of the function against the emulated concurrency: False when it is throttled."""
        return bool(self._post("/_testbed/lambda/acquire")["admitted"])

    def release_invocation(self) -> None:
        self._post("/_testbed/lambda/release")
