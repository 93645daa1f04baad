import { raw } from 'objection';
import { InputError, NotFoundError } from '../../core/errors';
import { DataEndpoint, PluginInstallation, WritePolicy } from '../../db/models';
import { findCapability } from '../../plugins';
import type { CapabilityRuntime } from '../../plugins/capability';
import type { WritePolicyInput } from '../../schemas/source-writes';
import { requireDataEndpoint } from './data-endpoints';
import { dataWritePolicy, endpointsOverData } from './data-guard';
import { assertProjectsInWorkspace } from '../tenancy/projects';
import type { OperationContext } from '../operations/context';
import { presentWritePolicy, type WritePolicyView } from './presenters';

/**
 * The capability behind an endpoint, if it takes governed writes: transactional writes and a
 * snapshot to check them against. Others are refused with a clear 4xx.
 */
export function governedWriteRuntime(endpoint: DataEndpoint, installation: PluginInstallation): CapabilityRuntime {
  const runtime = findCapability(installation.capability, installation.capabilityVersion);
  if (!runtime.definition.supports.transactionalWrites || !runtime.writeRecords || !runtime.currentSnapshot) {
    throw new InputError(
      'writes_not_supported',
      `Endpoint ${endpoint.namespace}/${endpoint.name} uses ${runtime.definition.name}, which has no transactional writes, so it takes no governed writes. Managed tables and PostgreSQL tables do.`,
    );
  }
  return runtime;
}

/** The write policy of an endpoint's data, and the endpoints it governs. */
async function policyThrough(ctx: OperationContext, workspaceId: string, endpointId: string, forUpdate = false) {
  const { db } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId, forUpdate);
  const policy = await dataWritePolicy(db, workspaceId, endpoint.dataIdentity, forUpdate);
  return { endpoint, installation, policy };
}

export async function getWritePolicy(ctx: OperationContext, endpointId: string): Promise<WritePolicyView> {
  const { db, principal: { workspaceId } } = ctx;
  const { endpoint, policy } = await policyThrough(ctx, workspaceId, endpointId);
  if (!policy) throw new NotFoundError('write_policy', "This endpoint's data has no write policy, so it takes no governed writes. Create one with PUT (policy:manage).");
  return presentWritePolicy(policy, endpointId, await endpointsOverData(db, workspaceId, endpoint.dataIdentity));
}

/**
 * Creates or replaces the policy of the endpoint's data: one per data, so setting it through any
 * endpoint over the data sets the policy of all of them. A change applies to actions proposed from
 * then on; actions already waiting keep the approval count and expiry they were proposed with.
 */
export async function putWritePolicy(ctx: OperationContext, endpointId: string, input: WritePolicyInput): Promise<{ policy: WritePolicyView; created: boolean }> {
  const { db, principal } = ctx;
  const { endpoint, installation, policy: existing } = await policyThrough(ctx, principal.workspaceId, endpointId, true);
  governedWriteRuntime(endpoint, installation);
  await assertProjectsInWorkspace(db, principal.workspaceId, input.projectIds);
  const fields = {
    allowedOperations: input.allowedOperations,
    projectIds: input.projectIds,
    approvalRequired: input.approval.required,
    approvalsRequired: input.approval.required ? input.approval.approvers : 0,
    approvalTimeoutSeconds: input.approval.timeoutSeconds,
    requiredReadPermissions: input.requiredReadPermissions,
    requiredWritePermissions: input.requiredWritePermissions,
    allowPipelineRuns: input.allowPipelineRuns ?? false,
    dataEndpointId: endpoint.id,
    updatedByMemberId: principal.memberId,
  };
  const guarded = await endpointsOverData(db, principal.workspaceId, endpoint.dataIdentity);
  if (existing) {
    const updated = await existing.$query(db).patchAndFetch({ ...fields, revision: existing.revision + 1, updatedAt: raw('now()') as unknown as Date });
    return { policy: presentWritePolicy(updated, endpointId, guarded), created: false };
  }
  const created = await WritePolicy.query(db).insertAndFetch({ ...fields, workspaceId: principal.workspaceId, dataIdentity: endpoint.dataIdentity, createdByMemberId: principal.memberId });
  return { policy: presentWritePolicy(created, endpointId, guarded), created: true };
}

/** Removes the policy of the endpoint's data: no endpoint over it takes governed writes until a new one is made. Waiting actions still apply if approved. */
export async function deleteWritePolicy(ctx: OperationContext, endpointId: string): Promise<void> {
  const { db, principal: { workspaceId } } = ctx;
  const { endpoint } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId);
  const deleted = await WritePolicy.query(db).delete().where({ workspaceId, dataIdentity: endpoint.dataIdentity });
  if (!deleted) throw new NotFoundError('write_policy', "This endpoint's data has no write policy.");
}
