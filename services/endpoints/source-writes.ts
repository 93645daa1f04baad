import { randomUUID } from 'node:crypto';
import { UniqueViolationError } from 'objection';
import { ConflictError, DomainError, restoredError, UnavailableError } from '../../core/errors';
import { actorOf } from '../tenancy/actors';
import { canonicalJson } from '../../core/json-shape';
import { sha256Hex } from '../../core/secrets';
import { temporalSettings } from '../../core/temporal-config';
import { ProposingOperation, storedError, WriteAction } from '../../db/models';
import type { SnapshotInfo, WriteResult } from '../../plugins/capability';
import type { WriteActionRequest } from '../../schemas/source-writes';
import { writeActionSearchAttributes, writeApprovalWorkflowId } from '../../workflows/names';
import { inTransaction, OperationContext } from '../operations/context';
import { capabilityContext, requireDataEndpoint } from './data-endpoints';
import { assertCredit } from '../usage/credit';
import { governedWriteRuntime } from './write-policies';
import { meterWrite, prepareWrite, writeRequestOf, writeThrough } from './governed-write';
import { viewOf, WriteActionView } from './write-actions';
import type { ReadScope } from './data-guard';
import { logEvent } from './write-log';

// Governed source writes (SPEC 2.9): a policy decides who may write what; the write applies in one
// transaction against the snapshot the writer read, at once or after approval (write-approvals.ts);
// the idempotency key makes every retry return the first outcome; every step is logged (write-log.ts).
// Here: the snapshot a writer names, the dry run, and the submission.

// The view a submission answers with; sparql-updates.ts takes it from here with submitSourceWrite.
export type { WriteActionView } from './write-actions';

/** A dry run answers the change set, rows before included: it needs the read guard as well (prepareWrite). */
export async function dryRunSourceWrite(ctx: OperationContext, endpointId: string, request: WriteActionRequest) {
  const prepared = await prepareWrite(ctx, endpointId, request, { dryRun: true });
  const result = await writeThrough(ctx, prepared, writeRequestOf(request.input, request.actionId, { dryRun: true }));
  return { dryRun: true as const, operation: request.input.operation, expectedSourceSnapshot: request.input.expectedSourceSnapshot, affected: result.affected, changeSet: result.changes! };
}

export interface SubmitOutcome {
  /** True when the action waits for approval (answered 202). */
  pending: boolean;
  replayed: boolean;
  writeAction: WriteActionView;
}

/** The same key and body returns the first outcome (a failure is raised again); another body is a conflict. */
async function replay(ctx: OperationContext, existing: WriteAction, digest: string, readScope: ReadScope): Promise<SubmitOutcome> {
  if (existing.requestDigest !== digest) {
    throw new ConflictError('idempotency_key_reused', 'This idempotencyKey was already used on this endpoint for a different request. Send the same body to get its outcome, or use a new key for a new action.', {
      actionId: existing.actionId,
    });
  }
  if (existing.status === 'failed' && existing.error) throw restoredError({ ...existing.error, details: { ...existing.error.details, actionId: existing.actionId, replayed: true } });
  return { pending: existing.status === 'pending_approval', replayed: true, writeAction: await viewOf(ctx, existing, readScope) };
}

const isUniqueViolation = (error: unknown) => error instanceof UniqueViolationError || (error as { code?: string }).code === '23505' || (error as { nativeError?: { code?: string } }).nativeError?.code === '23505';

/**
 * Submits a governed write. Without approval it applies at once, in one transaction with its
 * action record and log; with approval it is checked by a dry run, recorded as pending and
 * handed to a Temporal workflow that waits for decisions or expiry.
 */
export async function submitSourceWrite(ctx: OperationContext, endpointId: string, request: WriteActionRequest, options: { requestDigest?: string; proposedBy?: ProposingOperation } = {}): Promise<SubmitOutcome> {
  const { deps, principal } = ctx;
  // The operation that proposed it decides how it is checked again at apply (write-apply.ts), and
  // which scope reads the records where it came from.
  const proposedBy = options.proposedBy ?? 'submitSourceWrite';
  const readScope: ReadScope = proposedBy === 'sparqlUpdate' ? 'sparql:query' : 'data:read';
  const prepared = await prepareWrite(ctx, endpointId, request, { readScope });
  await assertCredit(deps, deps.db, principal.workspaceId, 'governed_write');
  // What a retry with the same idempotencyKey must repeat to get the first outcome: the body, or
  // for an action derived from another request (a SPARQL update) that request, since each attempt
  // derives a new actionId and, once the first applied, a new expected snapshot.
  const digest = options.requestDigest ?? sha256Hex(canonicalJson(request));
  const actor = actorOf(principal);
  let failure: DomainError | undefined;
  let outcome: SubmitOutcome;
  try {
    outcome = await deps.db.transaction(async (trx) => {
      const inTrx = inTransaction(ctx, trx);
      // Retries of one key queue here; the first decides the outcome every later one returns.
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))', [`weft.source_write:${endpointId}`, request.idempotencyKey]);
      const existing = await WriteAction.query(trx).findOne({ workspaceId: principal.workspaceId, dataEndpointId: endpointId, idempotencyKey: request.idempotencyKey });
      if (existing) return replay(inTrx, existing, digest, readScope);
      const id = randomUUID();
      const approvals = prepared.policy.approvalRequired ? prepared.policy.approvalsRequired : 0;
      const base = {
        id,
        workspaceId: principal.workspaceId,
        dataEndpointId: endpointId,
        projectId: request.projectId,
        actionId: request.actionId,
        idempotencyKey: request.idempotencyKey,
        requestDigest: digest,
        operation: request.input.operation,
        input: request.input as unknown as Record<string, unknown>,
        approvalsRequired: approvals,
        proposedByMemberId: actor.memberId,
        proposedByApiKeyId: actor.apiKeyId,
        proposedByOperation: proposedBy,
        snapshotBefore: request.input.expectedSourceSnapshot,
      };

      if (approvals > 0) {
        // Checked now, so a stale snapshot or a bad field fails the proposal instead of the approval.
        let preview: WriteResult | undefined;
        try {
          preview = await writeThrough(inTrx, prepared, writeRequestOf(request.input, request.actionId, { dryRun: true }));
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          failure = error;
        }
        const expiresAt = new Date(deps.clock.now() + prepared.policy.approvalTimeoutSeconds * 1000);
        const action = await WriteAction.query(trx).insertAndFetch({
          ...base,
          status: failure ? 'failed' : 'pending_approval',
          expiresAt: failure ? null : expiresAt,
          changePreview: (preview?.changes as unknown as Record<string, unknown>) ?? null,
          error: failure ? storedError(failure) : null,
          workflowId: failure ? null : writeApprovalWorkflowId(id),
          endedAt: failure ? new Date() : null,
        });
        await logEvent(trx, action, 'proposed', actor, { snapshotBefore: request.input.expectedSourceSnapshot as SnapshotInfo, detail: { approvalsRequired: approvals, expiresAt: expiresAt.toISOString() } });
        if (failure) {
          await logEvent(trx, action, 'failed', actor, { snapshotBefore: request.input.expectedSourceSnapshot as SnapshotInfo, detail: storedError(failure) as unknown as Record<string, unknown> });
          return { pending: false, replayed: false, writeAction: await viewOf(inTrx, action, readScope) };
        }
        // Started inside the transaction: if the commit then fails, the workflow finds no action and ends.
        try {
          await deps.temporal.workflow.start('writeApprovalWorkflow', {
            workflowId: action.workflowId!,
            taskQueue: temporalSettings().taskQueues.main,
            args: [{ writeActionId: id, proposerMemberId: principal.memberId, approvalsRequired: approvals, expiresAt: expiresAt.toISOString() }],
            typedSearchAttributes: writeActionSearchAttributes({ workspaceId: principal.workspaceId, projectId: request.projectId, dataEndpointId: endpointId }),
          });
        } catch (error) {
          const cause = (error as { cause?: { message?: string } }).cause?.message;
          throw new UnavailableError('temporal_unavailable', `The approval workflow could not be started, so nothing was recorded; retry with the same idempotencyKey. (${cause ?? (error as Error).message})`);
        }
        return { pending: true, replayed: false, writeAction: await viewOf(inTrx, action, readScope) };
      }

      // Recorded before the write: a taken actionId fails here, before anything reaches a remote store.
      const recorded = await WriteAction.query(trx).insertAndFetch({ ...base, status: 'applied', endedAt: new Date() });
      let result: WriteResult | undefined;
      try {
        result = await writeThrough(inTrx, prepared, writeRequestOf(request.input, request.actionId));
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        failure = error;
      }
      const action = await recorded.$query(trx).patchAndFetch({
        status: failure ? 'failed' : 'applied',
        snapshotAfter: result?.snapshot ?? null,
        affected: result?.affected ?? null,
        error: failure ? storedError(failure) : null,
      });
      const snapshotBefore = request.input.expectedSourceSnapshot as SnapshotInfo;
      await logEvent(trx, action, 'proposed', actor, { snapshotBefore });
      if (failure) await logEvent(trx, action, 'failed', actor, { snapshotBefore, detail: storedError(failure) as unknown as Record<string, unknown> });
      else {
        await logEvent(trx, action, 'applied', actor, { snapshotBefore, snapshotAfter: result!.snapshot ?? null, detail: { affected: result!.affected } });
        await meterWrite(deps, trx, action, actor);
      }
      return { pending: false, replayed: false, writeAction: await viewOf(inTrx, action, readScope) };
    });
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new ConflictError('action_id_taken', 'This actionId is already used by another action in this workspace; every action needs its own actionId.', { actionId: request.actionId });
    }
    throw error;
  }
  // The failure is recorded (and logged) with the action; the caller gets it as the error it is.
  if (failure) throw restoredError({ ...storedError(failure), details: { ...failure.details, actionId: request.actionId } });
  return outcome;
}

/** The snapshot a writer names as expectedSourceSnapshot. */
export async function currentSourceSnapshot(ctx: OperationContext, endpointId: string): Promise<SnapshotInfo> {
  const { db, principal: { workspaceId } } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId);
  const runtime = governedWriteRuntime(endpoint, installation);
  return runtime.currentSnapshot!(capabilityContext(db, installation, ctx.deps), endpoint.target);
}
