import { NotFoundError } from '../../core/errors';
import { DataEndpoint, WriteAction, WriteActionDecision } from '../../db/models';
import { authorizeProject, hasScope, Principal } from '../tenancy/access';
import { requireDataEndpoint } from './data-endpoints';
import { approvalStanding, standingIn } from './approval-standing';
import { mayReadEndpointRecords, ReadScope } from './data-guard';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext } from '../operations/context';
import { presentWriteAction, type WriteActionView } from './presenters';

// Write actions as callers read them: what the view needs (its decisions, their standing, and whether
// the caller may read the endpoint's records: presenters.ts withholds them otherwise), and which
// actions a caller may see.

/** source-writes.ts and its callers name the view from here. */
export type { WriteActionView };

/** May the context's key see the records of the action's endpoint (the read guard)? Otherwise the change set withholds them. */
async function mayReadRecordsOf(ctx: OperationContext, endpointId: string, readScope?: ReadScope): Promise<boolean> {
  const { db, principal: viewer } = ctx;
  const endpoint = await DataEndpoint.query(db).findOne({ id: endpointId, workspaceId: viewer.workspaceId });
  return Boolean(endpoint) && mayReadEndpointRecords(ctx.deps, db, viewer, endpoint!, readScope);
}

/**
 * An action as the context's key sees it. `readScope` is the scope that reads the records through the
 * door the viewer came by (sparql:query for the answer to a SPARQL update; data:read otherwise).
 */
export async function viewOf(ctx: OperationContext, action: WriteAction, readScope?: ReadScope): Promise<WriteActionView> {
  const { db, deps } = ctx;
  const decisions = await WriteActionDecision.query(db).where({ writeActionId: action.id }).orderBy('createdAt');
  const standing = standingIn(await approvalStanding(deps, db, decisions), action.id);
  return presentWriteAction(action, decisions, standing, await mayReadRecordsOf(ctx, action.dataEndpointId, readScope));
}

const canSeeEveryAction = (principal: Principal) => hasScope(principal, 'policy:approve') || hasScope(principal, 'policy:read');

/** An action of the endpoint that this caller may see: approvers and policy readers see all, a proposer its own. */
export async function requireVisibleAction(ctx: OperationContext, endpointId: string, actionId: string): Promise<WriteAction> {
  const { db, principal } = ctx;
  await requireDataEndpoint(ctx.deps, db, principal.workspaceId, endpointId);
  const action = await WriteAction.query(db).findOne({ workspaceId: principal.workspaceId, dataEndpointId: endpointId, actionId });
  if (!action || (!canSeeEveryAction(principal) && action.proposedByMemberId !== principal.memberId)) {
    throw new NotFoundError('write_action', 'No write action with this id on this endpoint that this API key can see.');
  }
  // Found through the action: refuse without naming its project to a key that may not know it.
  authorizeProject(principal, action.projectId, { named: false });
  return action;
}

export async function getSourceWrite(ctx: OperationContext, endpointId: string, actionId: string): Promise<WriteActionView> {
  return viewOf(ctx, await requireVisibleAction(ctx, endpointId, actionId));
}

export async function listSourceWrites(ctx: OperationContext, endpointId: string, page: PageRequest, filter: { status?: string }) {
  const { db, principal } = ctx;
  await requireDataEndpoint(ctx.deps, db, principal.workspaceId, endpointId);
  const base = WriteAction.query(db).where({ workspaceId: principal.workspaceId, dataEndpointId: endpointId });
  if (!canSeeEveryAction(principal)) base.where('proposedByMemberId', principal.memberId);
  if (principal.projectIds.length) base.whereIn('projectId', principal.projectIds as string[]);
  if (filter.status) base.where('status', filter.status);
  const { rows, pagination } = await pageOf(base, page, { column: 'createdAt', order: 'desc' });
  const decisions = rows.length ? await WriteActionDecision.query(db).whereIn('writeActionId', rows.map((row) => row.id)).orderBy('createdAt') : [];
  const standing = await approvalStanding(ctx.deps, db, decisions);
  const mayReadRecords = await mayReadRecordsOf(ctx, endpointId);
  return { writeActions: rows.map((row) => presentWriteAction(row, decisions.filter((d) => d.writeActionId === row.id), standingIn(standing, row.id), mayReadRecords)), pagination };
}
