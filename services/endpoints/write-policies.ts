import { raw } from 'objection';
import { InputError, NotFoundError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import { DataEndpoint, PluginInstallation, WritePolicy } from '../../db/models';
import { findCapability } from '../../plugins';
import type { CapabilityRuntime } from '../../plugins/capability';
import type { WritePolicyInput } from '../../schemas/source-writes';
import { requireDataEndpoint } from './data-endpoints';
import { assertProjectsInWorkspace } from '../tenancy/projects';
import type { OperationContext } from '../operations/context';

export function presentWritePolicy(policy: WritePolicy) {
  return {
    id: policy.id,
    dataEndpointId: policy.dataEndpointId,
    allowedOperations: policy.allowedOperations,
    projectIds: policy.projectIds,
    approval: { required: policy.approvalRequired, approvers: policy.approvalsRequired, timeoutSeconds: policy.approvalTimeoutSeconds },
    requiredReadPermissions: policy.requiredReadPermissions,
    requiredWritePermissions: policy.requiredWritePermissions,
    revision: policy.revision,
    createdByMemberId: policy.createdByMemberId,
    updatedByMemberId: policy.updatedByMemberId,
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}

export type WritePolicyView = ReturnType<typeof presentWritePolicy>;

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

export async function findWritePolicy(db: Executor, workspaceId: string, endpointId: string, forUpdate = false): Promise<WritePolicy | undefined> {
  const query = WritePolicy.query(db).findOne({ workspaceId, dataEndpointId: endpointId });
  return forUpdate ? query.forUpdate() : query;
}

export async function getWritePolicy(ctx: OperationContext, endpointId: string): Promise<WritePolicyView> {
  const { db, principal: { workspaceId } } = ctx;
  await requireDataEndpoint(db, workspaceId, endpointId);
  const policy = await findWritePolicy(db, workspaceId, endpointId);
  if (!policy) throw new NotFoundError('write_policy', 'This endpoint has no write policy, so it takes no governed writes. Create one with PUT (policy:manage).');
  return presentWritePolicy(policy);
}

/**
 * Creates or replaces an endpoint's policy. A change applies to actions proposed from then on;
 * actions already waiting keep the approval count and expiry they were proposed with.
 */
export async function putWritePolicy(ctx: OperationContext, endpointId: string, input: WritePolicyInput): Promise<{ policy: WritePolicyView; created: boolean }> {
  const { db, principal } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(db, principal.workspaceId, endpointId, true);
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
    updatedByMemberId: principal.memberId,
  };
  const existing = await findWritePolicy(db, principal.workspaceId, endpointId, true);
  if (existing) {
    const updated = await existing.$query(db).patchAndFetch({ ...fields, revision: existing.revision + 1, updatedAt: raw('now()') as unknown as Date });
    return { policy: presentWritePolicy(updated), created: false };
  }
  const created = await WritePolicy.query(db).insertAndFetch({ ...fields, workspaceId: principal.workspaceId, dataEndpointId: endpointId, createdByMemberId: principal.memberId });
  return { policy: presentWritePolicy(created), created: true };
}

/** Removes the policy: the endpoint takes no governed writes until a new one is made. Waiting actions still apply if approved. */
export async function deleteWritePolicy(ctx: OperationContext, endpointId: string): Promise<void> {
  const { db, principal: { workspaceId } } = ctx;
  await requireDataEndpoint(db, workspaceId, endpointId);
  const deleted = await WritePolicy.query(db).delete().where({ workspaceId, dataEndpointId: endpointId });
  if (!deleted) throw new NotFoundError('write_policy', 'This endpoint has no write policy.');
}
