# EKS Drain Orchestrator from its released CloudFormation template, deployed with Terraform: the release's Lambda zip
# and template uploaded to a bucket of yours, one CloudFormation stack per served cluster.
#
#   terraform init
#   terraform apply -var cluster_name=prod -var code_bucket=my-artifacts -var alarm_email=oncall@example.com
#
# with the release's files (make release, or the release page) in var.release_dir. The template's parameters and
# what they mean: docs/deploy.md, "The plain CloudFormation template". The template is larger than the 51,200
# bytes CloudFormation takes inline, hence template_url.

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0.0, < 7.0.0"
    }
  }
}

variable "cluster_name" {
  description = "The EKS cluster the stack serves (one stack per cluster)"
  type        = string
}

variable "code_bucket" {
  description = "An existing S3 bucket in the stack's region for the Lambda zip and the template"
  type        = string
}

variable "release" {
  description = "The release's version: its files are drain-orchestrator-lambda-VERSION.zip and drain-orchestrator-VERSION.template.json"
  type        = string
  default     = "0.2.0"
}

variable "release_dir" {
  description = "Where the release's files are"
  type        = string
  default     = "dist"
}

variable "lifecycle_hook_name" {
  description = "The terminate (and launch) lifecycle hook the function answers on the cluster's Auto Scaling groups"
  type        = string
  default     = "drain-orchestrator"
}

variable "alarm_email" {
  description = "Address subscribed to the alarm topic; empty: none"
  type        = string
  default     = ""
}

variable "settings" {
  description = "Other template parameters by name, e.g. { ActionRebalance = \"drain\", LogLevel = \"DEBUG\" }"
  type        = map(string)
  default     = {}
}

locals {
  zip      = "drain-orchestrator-lambda-${var.release}.zip"
  template = "drain-orchestrator-${var.release}.template.json"
  parameters = {
    ClusterName       = var.cluster_name
    CodeBucket        = aws_s3_object.lambda_zip.bucket
    CodeKey           = aws_s3_object.lambda_zip.key
    LifecycleHookName = var.lifecycle_hook_name
    AlarmEmail        = var.alarm_email
  }
}

data "aws_s3_bucket" "code" {
  bucket = var.code_bucket
}

resource "aws_s3_object" "lambda_zip" {
  bucket = data.aws_s3_bucket.code.id
  key    = local.zip
  source = "${var.release_dir}/${local.zip}"
  etag   = filemd5("${var.release_dir}/${local.zip}")
}

resource "aws_s3_object" "template" {
  bucket = data.aws_s3_bucket.code.id
  key    = local.template
  source = "${var.release_dir}/${local.template}"
  etag   = filemd5("${var.release_dir}/${local.template}")
}

resource "aws_cloudformation_stack" "drain_orchestrator" {
  name         = "drain-orchestrator-${var.cluster_name}"
  template_url = "https://${data.aws_s3_bucket.code.bucket_regional_domain_name}/${aws_s3_object.template.key}"
  capabilities = ["CAPABILITY_IAM"]

  parameters   = merge(var.settings, local.parameters)
}

output "function_alias_arn" {
  value = aws_cloudformation_stack.drain_orchestrator.outputs["FunctionAliasArn"]
}

output "function_role_arn" {
  description = "For the aws-auth mapping when CreateAccessEntries is false"
  value       = aws_cloudformation_stack.drain_orchestrator.outputs["FunctionRoleArn"]
}

output "notification_topic_arn" {
  value = aws_cloudformation_stack.drain_orchestrator.outputs["NotificationTopicArn"]
}
