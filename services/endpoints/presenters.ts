import type { DataEndpoint, PluginInstallation, WriteAction, WriteActionDecision, WriteActionEvent, WritePolicy } from '../../db/models';
import type { CapabilityDefinition } from '../../plugins/capability';
import type { ApprovalStanding } from './approval-standing';

// The views the endpoint, plugin and governed-write operations answer with. A presenter shapes rows
// and what its service read for them, and queries nothing.

export function presentDataEndpoint(endpoint: DataEndpoint, installation: PluginInstallation) {
  return {
    id: endpoint.id,
    workspaceId: endpoint.workspaceId,
    name: endpoint.name,
    namespace: endpoint.namespace,
    role: endpoint.role,
    pluginCapabilityInstallationId: endpoint.pluginInstallationId,
    capability: { name: installation.capability, version: installation.capabilityVersion },
    contractKind: endpoint.contractKind,
    target: endpoint.target,
    dataIdentity: endpoint.dataIdentity,
    schemaHints: endpoint.schemaHints,
    freshness: endpoint.freshness,
    ownerTeam: endpoint.ownerTeam,
    trustRank: endpoint.trustRank,
    description: endpoint.description,
    accepts: endpoint.accepts,
    emits: endpoint.emits,
    createdByMemberId: endpoint.createdByMemberId,
    createdAt: endpoint.createdAt.toISOString(),
    updatedAt: endpoint.updatedAt.toISOString(),
  };
}

export type DataEndpointView = ReturnType<typeof presentDataEndpoint>;

/**
 * An installed plugin with the contract of the version it was installed with (undefined when this
 * Weft no longer serves that version: listed unavailable, with an empty contract) and the newest
 * version this Weft serves.
 */
export function presentInstallation(row: PluginInstallation, definition: CapabilityDefinition | undefined, latestVersion: string | null) {
  return {
    installationId: row.id,
    capability: row.capability,
    version: row.capabilityVersion,
    latestVersion,
    available: definition !== undefined,
    title: definition?.title ?? row.capability,
    description: definition?.description ?? '',
    roles: definition?.roles ?? [],
    targetSchema: definition?.targetSchema ?? {},
    accepts: definition?.accepts ?? [],
    emits: definition?.emits ?? [],
    supports: definition?.supports ?? {},
    createdAt: row.createdAt.toISOString(),
  };
}

/** A policy as read through one endpoint over its data, with every endpoint it governs. */
export function presentWritePolicy(policy: WritePolicy, throughEndpointId: string, guardedEndpointIds: string[]) {
  return {
    id: policy.id,
    dataEndpointId: throughEndpointId,
    dataIdentity: policy.dataIdentity,
    guardedEndpointIds,
    allowedOperations: policy.allowedOperations,
    projectIds: policy.projectIds,
    approval: { required: policy.approvalRequired, approvers: policy.approvalsRequired, timeoutSeconds: policy.approvalTimeoutSeconds },
    requiredReadPermissions: policy.requiredReadPermissions,
    requiredWritePermissions: policy.requiredWritePermissions,
    allowPipelineRuns: policy.allowPipelineRuns,
    revision: policy.revision,
    createdByMemberId: policy.createdByMemberId,
    updatedByMemberId: policy.updatedByMemberId,
    createdAt: policy.createdAt.toISOString(),
    updatedAt: policy.updatedAt.toISOString(),
  };
}

export type WritePolicyView = ReturnType<typeof presentWritePolicy>;

function presentDecision(decision: WriteActionDecision) {
  return { memberId: decision.memberId, decision: decision.decision, comment: decision.comment, decidedAt: decision.createdAt.toISOString() };
}

/**
 * A change set as a key that may not read the endpoint's records sees it. Rows that were there
 * before the write are existing record values: a changed row's before values, and its after values
 * too (they keep every field the write left alone), and a removed row. Which of the action's rows
 * were added rather than changed says whether a record with that key existed, so the added list
 * and the split of the counts go as well: what stays is how many records the action touches (the
 * rows it writes are in its input) and the truncation flag.
 */
function withoutExistingRecords(changeSet: Record<string, unknown> | null): Record<string, unknown> | null {
  if (!changeSet) return changeSet;
  const counts = changeSet.counts as { added: number; changed: number; removed: number };
  return { ...changeSet, added: [], changed: [], removed: [], counts: { affected: counts.added + counts.changed + counts.removed }, recordsWithheld: true };
}

export function presentWriteAction(action: WriteAction, decisions: WriteActionDecision[], standing: ApprovalStanding, mayReadRecords: boolean) {
  return {
    actionId: action.actionId,
    dataEndpointId: action.dataEndpointId,
    projectId: action.projectId,
    idempotencyKey: action.idempotencyKey,
    operation: action.operation,
    status: action.status,
    input: action.input,
    approval: {
      required: action.approvalsRequired > 0,
      approvers: action.approvalsRequired,
      expiresAt: action.expiresAt?.toISOString() ?? null,
      decisions: decisions.map(presentDecision),
      counted: standing.counted,
      notCounted: standing.notCounted,
    },
    changeSet: mayReadRecords ? action.changePreview : withoutExistingRecords(action.changePreview),
    snapshotBefore: action.snapshotBefore,
    snapshotAfter: action.snapshotAfter,
    affected: action.affected,
    error: action.error ? { code: action.error.code, message: action.error.message, details: action.error.details ?? {} } : null,
    proposedByMemberId: action.proposedByMemberId,
    workflowId: action.workflowId,
    createdAt: action.createdAt.toISOString(),
    endedAt: action.endedAt?.toISOString() ?? null,
  };
}

export type WriteActionView = ReturnType<typeof presentWriteAction>;

export function presentLogEntry(event: WriteActionEvent) {
  return {
    id: event.id,
    actionId: event.actionId,
    kind: event.kind,
    actorMemberId: event.actorMemberId,
    actorApiKeyId: event.actorApiKeyId,
    idempotencyKey: event.idempotencyKey,
    snapshotBefore: event.snapshotBefore,
    snapshotAfter: event.snapshotAfter,
    detail: event.detail,
    createdAt: event.createdAt.toISOString(),
  };
}
