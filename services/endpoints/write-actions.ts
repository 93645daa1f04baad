import { NotFoundError } from '../../core/errors';
import { DataEndpoint, WriteAction, WriteActionDecision } from '../../db/models';
import { authorizeProject, hasScope, Principal } from '../tenancy/access';
import { requireDataEndpoint } from './data-endpoints';
import { approvalStanding, ApprovalStanding, standingIn } from './approval-standing';
import { mayReadEndpointRecords, ReadScope } from './data-guard';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext } from '../operations/context';

// Write actions as callers read them: the view with its decisions (its change set withholding the
// rows that were there from keys that may not read the endpoint's records), and which actions a caller may see.

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

function presentWriteAction(action: WriteAction, decisions: WriteActionDecision[], standing: ApprovalStanding, mayReadRecords: boolean) {
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
