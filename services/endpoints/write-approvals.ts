import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { raw } from 'objection';
import { ConflictError, PermissionError, UnavailableError } from '../../core/errors';
import type { Db } from '../../db/connection';
import { WriteAction, WriteActionDecision } from '../../db/models';
import type { SnapshotInfo } from '../../plugins/capability';
import { decideWriteUpdate, WriteDecision } from '../../workflows/names';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { approvalStandingOf } from './approval-standing';
import { requireVisibleAction, viewOf } from './write-actions';
import type { WriteActionView } from './presenters';
import { logEvent } from './write-log';
import { actorOf } from '../tenancy/actors';

// Approval of a proposed write: an approver's decision reaches the action's Temporal workflow as
// an update; the workflow's activities record decisions, apply the write (write-apply.ts, as the
// proposing key) or let it expire.

/**
 * An approver's decision, carried to the action's workflow as an update. The proposer cannot
 * decide; a member decides once; only a waiting action takes decisions.
 */
export async function decideSourceWrite(ctx: OperationContext, endpointId: string, actionId: string, decision: 'approve' | 'reject', comment: string | null): Promise<WriteActionView> {
  const { deps, principal } = ctx;
  const action = await requireVisibleAction(ctx, endpointId, actionId);
  if (action.proposedByMemberId === principal.memberId) {
    throw new PermissionError('proposer_cannot_decide', 'The member who proposed a write cannot approve or reject it; another member with policy:approve must.');
  }
  const notPending = (status: string) => new ConflictError('action_not_pending', `The action is ${status}, so it takes no more decisions.`, { status });
  if (action.status !== 'pending_approval' || !action.workflowId) throw notPending(action.status);
  const update: WriteDecision = { ...actorOf(principal), decision, comment };
  try {
    await deps.temporal.workflow.getHandle(action.workflowId).executeUpdate(decideWriteUpdate, { args: [update] });
  } catch (error) {
    if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
      const code = error.cause.type ?? 'decision_refused';
      if (code === 'proposer_cannot_decide') throw new PermissionError(code, error.cause.message);
      throw new ConflictError(code, error.cause.message);
    }
    // The workflow ended meanwhile (expired, or decided by someone else): report what the action is now.
    const now = await WriteAction.query(deps.db).findById(action.id);
    if (now && now.status !== 'pending_approval') throw notPending(now.status);
    throw new UnavailableError('temporal_unavailable', 'The decision could not reach the approval workflow; try again.');
  }
  return viewOf(ctx, (await WriteAction.query(deps.db).findById(action.id))!);
}

// Activities of the approval workflow. Each is a fenced transaction on the action row, so a
// retry, a late decision or a race with expiry never acts twice.

/**
 * Records a decision and answers the action's status with the approvals that count now
 * (approval-standing.ts): an approval whose key or member lapsed since it was given does not
 * complete the count.
 */
export async function recordWriteDecision(deps: Pick<ServiceDependencies, 'db' | 'clock'>, writeActionId: string, decision: WriteDecision): Promise<{ status: string; approvals: number }> {
  return deps.db.transaction(async (trx) => {
    const action = await WriteAction.query(trx).findById(writeActionId).forUpdate();
    if (!action) return { status: 'missing', approvals: 0 };
    const count = async () => (await approvalStandingOf(deps, trx, writeActionId)).counted;
    if (action.status !== 'pending_approval') return { status: action.status, approvals: await count() };
    // The row lock serializes decisions on this action: a retried activity finds its decision and records nothing twice.
    const earlier = await WriteActionDecision.query(trx).findOne({ writeActionId, memberId: decision.memberId });
    if (earlier) return { status: action.status, approvals: await count() };
    await WriteActionDecision.query(trx).insert({ writeActionId, memberId: decision.memberId, apiKeyId: decision.apiKeyId, decision: decision.decision, comment: decision.comment });
    const actor = { memberId: decision.memberId, apiKeyId: decision.apiKeyId };
    await logEvent(trx, action, decision.decision === 'approve' ? 'approved' : 'rejected', actor, { snapshotBefore: action.snapshotBefore as SnapshotInfo, detail: decision.comment ? { comment: decision.comment } : null });
    if (decision.decision === 'reject') {
      await action.$query(trx).patch({ status: 'rejected', endedAt: new Date(), updatedAt: raw('now()') as unknown as Date });
      return { status: 'rejected', approvals: await count() };
    }
    return { status: 'pending_approval', approvals: await count() };
  });
}

export async function expireWriteAction(db: Db, writeActionId: string): Promise<{ status: string }> {
  return db.transaction(async (trx) => {
    const action = await WriteAction.query(trx).findById(writeActionId).forUpdate();
    if (!action) return { status: 'missing' };
    if (action.status !== 'pending_approval') return { status: action.status };
    await action.$query(trx).patch({ status: 'expired', endedAt: new Date(), updatedAt: raw('now()') as unknown as Date });
    await logEvent(trx, action, 'expired', { memberId: null, apiKeyId: null }, { snapshotBefore: action.snapshotBefore as SnapshotInfo, detail: { expiresAt: action.expiresAt?.toISOString() ?? null } });
    return { status: 'expired' };
  });
}
