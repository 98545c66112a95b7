/**
 * A TypeScript CDK app that deploys EKS Drain Orchestrator from its released CloudFormation template
 * (drain-orchestrator-X.Y.Z.template.json from `make release` or the release page) with `CfnInclude`:
 * no Python, no construct library; the template is the stack the Python construct deploys.
 *
 * Before `cdk deploy`, upload the release's Lambda zip once (the template's CodeKey default names it):
 *   aws s3 cp drain-orchestrator-lambda-0.2.0.zip s3://my-artifacts/
 * then, with the template beside this file:
 *   cdk deploy -c clusterName=prod -c codeBucket=my-artifacts -c alarmEmail=oncall@example.com
 * One stack serves one cluster: add one DrainOrchestratorStack per cluster.
 */
import * as cdk from "aws-cdk-lib";
import * as include from "aws-cdk-lib/cloudformation-include";
import { Construct } from "constructs";

export interface DrainOrchestratorStackProps extends cdk.StackProps {
  /** The released template's path. */
  readonly templateFile: string;
  /** The EKS cluster the stack serves. */
  readonly clusterName: string;
  /** The bucket holding the release's Lambda zip. */
  readonly codeBucket: string;
  /** Other template parameters by name (LifecycleHookName, AlarmEmail, ActionRebalance, ...): docs/deploy.md. */
  readonly parameters?: Record<string, string>;
}

export class DrainOrchestratorStack extends cdk.Stack {
  readonly template: include.CfnInclude;

  constructor(scope: Construct, id: string, props: DrainOrchestratorStackProps) {
    super(scope, id, props);
    this.template = new include.CfnInclude(this, "DrainOrchestrator", {
      templateFile: props.templateFile,
      parameters: { ClusterName: props.clusterName, CodeBucket: props.codeBucket, ...props.parameters },
    });
    // the template's resources and outputs can be reached by their logical ids (this.template.getResource(id),
    // getOutput("FunctionAliasArn")), to add alarms or permissions of your own
  }
}

const app = new cdk.App();
const context = (key: string, otherwise?: string): string => {
  const value = app.node.tryGetContext(key) ?? otherwise;
  if (value === undefined) {
    throw new Error(`missing context: -c ${key}=...`);
  }
  return String(value);
};
const alarmEmail = app.node.tryGetContext("alarmEmail");
new DrainOrchestratorStack(app, "DrainOrchestrator", {
  templateFile: context("templateFile", "drain-orchestrator-0.2.0.template.json"),
  clusterName: context("clusterName"),
  codeBucket: context("codeBucket"),
  parameters: alarmEmail ? { AlarmEmail: String(alarmEmail) } : {},
});
app.synth();
