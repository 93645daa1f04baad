import type { Executor } from '../../db/connection';
import { WriteAction, WriteActionEvent, WriteActionEventKind } from '../../db/models';
import type { SnapshotInfo } from '../../plugins/capability';
import { requireDataEndpoint } from './data-endpoints';
import { isUnrestricted } from '../tenancy/access';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext } from '../operations/context';
import { afterCommit } from '../../db/after-commit';
import { governedWriteEvents } from '../../observability/metrics';
import { presentLogEntry } from './presenters';

// The action log of an endpoint: an event for every step of every action (proposed, approved,
// rejected, expired, applied, failed), written in the step's own transaction.

export async function logEvent(db: Executor, action: WriteAction, kind: WriteActionEventKind, actor: { memberId: string | null; apiKeyId: string | null }, fields: { snapshotBefore?: SnapshotInfo | null; snapshotAfter?: SnapshotInfo | null; detail?: Record<string, unknown> | null } = {}) {
  await WriteActionEvent.query(db).insert({
    workspaceId: action.workspaceId,
    dataEndpointId: action.dataEndpointId,
    writeActionId: action.id,
    actionId: action.actionId,
    kind,
    actorMemberId: actor.memberId,
    actorApiKeyId: actor.apiKeyId,
    idempotencyKey: action.idempotencyKey,
    snapshotBefore: fields.snapshotBefore ?? null,
    snapshotAfter: fields.snapshotAfter ?? null,
    detail: fields.detail ?? null,
  });
  afterCommit(db, () => governedWriteEvents.inc({ event: kind }));
}

/**
 * The endpoint's action log, newest first. A project-restricted key sees the events of actions of
 * its projects only, as it lists only those actions (write-actions.ts): the endpoint is shared, its
 * actions are not.
 */
export async function listWriteLog(ctx: OperationContext, endpointId: string, page: PageRequest, filter: { actionId?: string; kind?: string }) {
  const { db, principal } = ctx;
  await requireDataEndpoint(ctx.deps, db, principal.workspaceId, endpointId);
  const base = WriteActionEvent.query(db).where({ workspaceId: principal.workspaceId, dataEndpointId: endpointId });
  if (!isUnrestricted(principal)) {
    base.whereIn('writeActionId', WriteAction.query(db).select('id').where({ workspaceId: principal.workspaceId, dataEndpointId: endpointId }).whereIn('projectId', principal.projectIds as string[]));
  }
  if (filter.actionId) base.where('actionId', filter.actionId);
  if (filter.kind) base.where('kind', filter.kind);
  const { rows, pagination } = await pageOf(base, page, { column: 'createdAt', order: 'desc' });
  return { entries: rows.map(presentLogEntry), pagination };
}
