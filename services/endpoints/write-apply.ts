import { raw } from 'objection';
import { DomainError } from '../../core/errors';
import { storedError, Workspace, WriteAction } from '../../db/models';
import type { SnapshotInfo, WriteResult } from '../../plugins/capability';
import { snapshotInfoSchema, type WriteActionRequest } from '../../schemas/source-writes';
import { requireSemanticMode } from '../ontology/sparql-dataset';
import { sparqlUpdateOperation } from '../ontology/sparql-operations';
import { actAs } from '../operations/act-as';
import type { Actor } from '../tenancy/actors';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { defineOperation } from '../operations/operation';
import { bothRequirements, Requirement } from '../tenancy/access';
import type { ReadScope } from './data-guard';
import { approvalStandingOf } from './approval-standing';
import { meterWrite, prepareWrite, writeRequestOf, writeThrough } from './governed-write';
import { logEvent } from './write-log';
import { submitSourceWriteOperation } from './write-operations';

// An approved write is applied as the key that proposed it, through the operation that proposed
// it, checked again now: the proposing operation's declared access (a governed write's, or a SPARQL
// update's with its semantic mode), then the data guard and the write policy as they are at apply
// time (prepareWrite). A key revoked or expired, a member gone, a narrowed allowlist, a withdrawn
// grant, a tightened policy or a workspace that closed SPARQL updates since stops the write.

type ApplyInput = { projectId: string; writeActionId: string };

/** What the apply activity gets from either operation: the rows it wrote and the snapshot after. */
const applied = {
  200: {
    description: 'The write, applied',
    schema: { type: 'object', required: ['affected'], properties: { affected: { type: 'integer' }, snapshot: snapshotInfoSchema } },
  },
};

/** Both apply operations, once their access holds: the action checked again as at proposal, and written. */
async function applyAction(ctx: OperationContext, writeActionId: string, readScope: ReadScope): Promise<WriteResult> {
  // Locked by the activity's transaction, which this operation's runs inside.
  const action = (await WriteAction.query(ctx.db).findById(writeActionId))!;
  const request = { projectId: action.projectId, actionId: action.actionId, idempotencyKey: action.idempotencyKey, input: action.input } as unknown as WriteActionRequest;
  const prepared = await prepareWrite(ctx, action.dataEndpointId, request, { readScope });
  return writeThrough(ctx, prepared, writeRequestOf(request.input, action.actionId));
}

/** Applying a write proposed through the governed-write route, with that route's access. */
export const applyApprovedWriteOperation = defineOperation({
  name: 'applyApprovedWrite',
  summary: 'Apply an approved governed write as the key that proposed it, with submitSourceWrite’s access checked again.',
  access: submitSourceWriteOperation.access,
  effect: 'write',
  output: applied,
  run: (ctx, { writeActionId }: ApplyInput) => applyAction(ctx, writeActionId, 'data:read'),
});

/**
 * Applying a write a SPARQL update proposed, with the access of that update (sparqlUpdate's, and the
 * governed write's it went through), and the workspace's semantic consumer mode still write.
 */
export const applyApprovedSparqlUpdateOperation = defineOperation({
  name: 'applyApprovedSparqlUpdate',
  summary: 'Apply an approved governed write that a SPARQL update proposed, as the proposing key, with the SPARQL update’s access checked again.',
  access: bothRequirements(sparqlUpdateOperation.access as Requirement, submitSourceWriteOperation.access as Requirement),
  effect: 'write',
  output: applied,
  async run(ctx, { writeActionId }: ApplyInput) {
    const workspace = await Workspace.query(ctx.db).findById(ctx.principal.workspaceId);
    requireSemanticMode({ semanticConsumerMode: workspace?.semanticConsumerMode ?? 'off' }, 'write');
    return applyAction(ctx, writeActionId, 'sparql:query');
  },
});

export const writeApplyOperations = [applyApprovedWriteOperation, applyApprovedSparqlUpdateOperation];

/**
 * A lost race or a database briefly away, as invoke maps them: not an outcome of the action. The
 * activity throws it (its transaction rolls back) and Temporal retries.
 */
const passing = (error: DomainError) => error.kind === 'unavailable' || error.code === 'concurrent_change';

/**
 * The apply activity of the approval workflow: one transaction with the action's status and log,
 * the write in a savepoint of it. A refusal or a business failure (a stale snapshot) ends the action
 * failed with its reason. The actor of the log is the member whose approval completed the count.
 * Approvals that no longer suffice leave the action pending_approval, unchanged.
 */
export async function applyApprovedWrite(deps: ServiceDependencies, writeActionId: string, actor: Actor): Promise<{ status: string }> {
  return deps.db.transaction(async (trx) => {
    const action = await WriteAction.query(trx).findById(writeActionId).forUpdate();
    if (!action) return { status: 'missing' };
    if (action.status !== 'pending_approval') return { status: action.status };
    // The approvals are counted again, their keys and members locked until this commits: one whose
    // key was revoked or expired, or whose member was removed, since it was given no longer counts.
    // Short of the count, nothing is written and the action waits for more approvals (the workflow
    // takes decisions again) until it expires; its view lists the approvals that lapsed.
    if ((await approvalStandingOf(deps, trx, action.id, { lock: true })).counted < action.approvalsRequired) return { status: 'pending_approval' };
    const snapshotBefore = action.snapshotBefore as SnapshotInfo;
    const operation = action.proposedByOperation === 'sparqlUpdate' ? applyApprovedSparqlUpdateOperation : applyApprovedWriteOperation;
    let result: WriteResult | undefined;
    let failure: DomainError | undefined;
    try {
      // On the activity's transaction: the operation's own transaction is a savepoint of it.
      result = await actAs({ ...deps, db: trx }, { workspaceId: action.workspaceId, memberId: action.proposedByMemberId, apiKeyId: action.proposedByApiKeyId }, `write-action:${action.id}`, operation, { projectId: action.projectId, writeActionId });
    } catch (error) {
      if (!(error instanceof DomainError) || passing(error)) throw error;
      failure = error;
    }
    if (failure) {
      await action.$query(trx).patch({ status: 'failed', error: storedError(failure), endedAt: new Date(), updatedAt: raw('now()') as unknown as Date });
      await logEvent(trx, action, 'failed', actor, { snapshotBefore, detail: storedError(failure) as unknown as Record<string, unknown> });
      return { status: 'failed' };
    }
    await action.$query(trx).patch({ status: 'applied', snapshotAfter: result!.snapshot ?? null, affected: result!.affected, endedAt: new Date(), updatedAt: raw('now()') as unknown as Date });
    await logEvent(trx, action, 'applied', actor, { snapshotBefore, snapshotAfter: result!.snapshot ?? null, detail: { affected: result!.affected } });
    await meterWrite(deps, trx, { ...action, affected: result!.affected } as WriteAction, actor);
    return { status: 'applied' };
  });
}
