import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { raw } from 'objection';
import { ConflictError, DomainError, PermissionError, UnavailableError } from '../../core/errors';
import type { Db } from '../../db/connection';
import { storedError, WriteAction, WriteActionDecision } from '../../db/models';
import type { SnapshotInfo, WriteResult } from '../../plugins/capability';
import type { WriteActionRequest } from '../../schemas/source-writes';
import { decideWriteUpdate, WriteDecision } from '../../workflows/names';
import type { Principal } from '../tenancy/access';
import { principalOfKey } from '../tenancy/api-keys';
import type { ActivityDependencies } from '../operations/context';
import type { SourceWriteDependencies } from './source-writes';
import { meterWrite, prepareWrite, writeRequestOf, writeThrough } from './governed-write';
import { requireVisibleAction, viewOf, WriteActionView } from './write-actions';
import { logEvent } from './write-log';

// Approval of a proposed write: an approver's decision reaches the action's Temporal workflow as
// an update; the workflow's activities record decisions, apply the write or let it expire.

/**
 * An approver's decision, carried to the action's workflow as an update. The proposer cannot
 * decide; a member decides once; only a waiting action takes decisions.
 */
export async function decideSourceWrite(deps: SourceWriteDependencies, principal: Principal, endpointId: string, actionId: string, decision: 'approve' | 'reject', comment: string | null): Promise<WriteActionView> {
  const action = await requireVisibleAction(deps.db, principal, endpointId, actionId);
  if (action.proposedByMemberId === principal.memberId) {
    throw new PermissionError('proposer_cannot_decide', 'The member who proposed a write cannot approve or reject it; another member with policy:approve must.');
  }
  const notPending = (status: string) => new ConflictError('action_not_pending', `The action is ${status}, so it takes no more decisions.`, { status });
  if (action.status !== 'pending_approval' || !action.workflowId) throw notPending(action.status);
  const update: WriteDecision = { memberId: principal.memberId, apiKeyId: principal.apiKeyId, decision, comment };
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
  return viewOf(deps.db, (await WriteAction.query(deps.db).findById(action.id))!);
}

// Activities of the approval workflow. Each is a fenced transaction on the action row, so a
// retry, a late decision or a race with expiry never acts twice.

export async function recordWriteDecision(db: Db, writeActionId: string, decision: WriteDecision): Promise<{ status: string; approvals: number }> {
  return db.transaction(async (trx) => {
    const action = await WriteAction.query(trx).findById(writeActionId).forUpdate();
    if (!action) return { status: 'missing', approvals: 0 };
    const count = async () => Number((await WriteActionDecision.query(trx).where({ writeActionId, decision: 'approve' }).resultSize()));
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

/**
 * Applies an approved action in one transaction with its status and log; a business failure (a
 * stale snapshot) ends it failed. The actor is the member whose approval completed the count.
 */
export async function applyApprovedWrite(deps: ActivityDependencies, writeActionId: string, actor: { memberId: string; apiKeyId: string }): Promise<{ status: string }> {
  return deps.db.transaction(async (trx) => {
    const action = await WriteAction.query(trx).findById(writeActionId).forUpdate();
    if (!action) return { status: 'missing' };
    if (action.status !== 'pending_approval') return { status: action.status };
    const snapshotBefore = action.snapshotBefore as SnapshotInfo;
    let result: WriteResult | undefined;
    let failure: DomainError | undefined;
    try {
      // Applied as the proposing key, checked again now: a key revoked, a member gone, a policy
      // tightened, a grant withdrawn or an endpoint changed since the proposal stops the write.
      const proposer = await principalOfKey(trx, action.workspaceId, action.proposedByApiKeyId);
      if (!proposer.memberActive) throw new PermissionError('actor_not_accountable', 'The member who proposed this write is no longer in the workspace, so it is not applied.');
      const request = { projectId: action.projectId, actionId: action.actionId, idempotencyKey: action.idempotencyKey, input: action.input } as unknown as WriteActionRequest;
      const prepared = await prepareWrite({ db: trx, encryptionKey: deps.encryptionKey }, proposer, action.dataEndpointId, request);
      result = await writeThrough(trx, deps, prepared, writeRequestOf(request.input, action.actionId));
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      failure = error;
    }
    if (failure) {
      await action.$query(trx).patch({ status: 'failed', error: storedError(failure), endedAt: new Date(), updatedAt: raw('now()') as unknown as Date });
      await logEvent(trx, action, 'failed', actor, { snapshotBefore, detail: storedError(failure) as unknown as Record<string, unknown> });
      return { status: 'failed' };
    }
    await action.$query(trx).patch({ status: 'applied', snapshotAfter: result!.snapshot ?? null, affected: result!.affected, endedAt: new Date(), updatedAt: raw('now()') as unknown as Date });
    await logEvent(trx, action, 'applied', actor, { snapshotBefore, snapshotAfter: result!.snapshot ?? null, detail: { affected: result!.affected } });
    await meterWrite(trx, { ...action, affected: result!.affected } as WriteAction, actor);
    return { status: 'applied' };
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
