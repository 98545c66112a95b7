// Evaluates recorded AWS calls against an identity policy with @cloud-copilot/iam-simulate (offline; a test-time
// devDependency under AGPL-3.0, never part of the Lambda asset). Reads {"account", "principal", "policies":
// [{name, policy}], "calls": [{action, resource, tags}]} on stdin, writes [{action, resource, result, errors}].
// A call's resource tags become `<service>:ResourceTag/<key>` and `aws:ResourceTag/<key>` context values, which
// is how IAM evaluates tag conditions on the resource acted on.
import { runSimulation } from '@cloud-copilot/iam-simulate'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const out = []
for (const call of input.calls) {
  const service = call.action.split(':')[0]
  const contextVariables = {}
  for (const [key, value] of Object.entries(call.tags || {})) {
    contextVariables[`aws:ResourceTag/${key}`] = value
    if (service === 'autoscaling') contextVariables[`autoscaling:ResourceTag/${key}`] = value
  }
  const response = await runSimulation(
    {
      identityPolicies: input.policies,
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      request: {
        action: call.action,
        principal: input.principal,
        resource: { accountId: input.account, resource: call.resource },
        contextVariables,
      },
    },
    {},
  )
  out.push({
    action: call.action,
    resource: call.resource,
    result: response.resultType === 'error' ? 'Error' : response.overallResult,
    errors: response.resultType === 'error' ? JSON.stringify(response.errors) : null,
  })
}
process.stdout.write(JSON.stringify(out))
