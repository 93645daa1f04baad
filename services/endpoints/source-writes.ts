import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { raw, UniqueViolationError } from 'objection';
import { ConflictError, DomainError, NotFoundError, PermissionError, restoredError, UnavailableError } from '../../core/errors';
import { canonicalJson } from '../../core/json-shape';
import { sha256Hex } from '../../core/secrets';
import { temporalSettings } from '../../core/temporal-config';
import type { Db, Executor } from '../../db/connection';
import { DataEndpoint, PluginInstallation, Project, StoredError, WriteAction, WriteActionDecision, WriteActionEvent, WriteActionEventKind, WritePolicy } from '../../db/models';
import type { CapabilityRuntime, SnapshotInfo, WriteRequest, WriteResult } from '../../plugins/capability';
import type { WriteActionRequest } from '../../schemas/source-writes';
import { decideWriteUpdate, WriteDecision, writeActionSearchAttributes, writeApprovalWorkflowId } from '../../workflows/names';
import { authorizeProject, hasScope, missingReadPermissions, Principal } from '../tenancy/access';
import { principalOfKey } from '../tenancy/api-keys';
import type { ActivityDependencies, ServiceDependencies } from '../operations/context';
import { guardEndpointData } from './data-guard';
import { capabilityContext, requireDataEndpoint } from './data-endpoints';
import { PageRequest, pageOf } from '../shared/pagination';
import { assertCredit, meter } from '../usage/usage';
import { findWritePolicy, governedWriteRuntime } from './write-policies';

// Governed source writes (SPEC 2.9): a policy decides who may write what; the write applies in one
// transaction against the snapshot the writer read, at once or after approval in a Temporal
// workflow; the idempotency key makes every retry return the first outcome; every step is logged.

export type SourceWriteDependencies = ServiceDependencies;

function presentDecision(decision: WriteActionDecision) {
  return { memberId: decision.memberId, decision: decision.decision, comment: decision.comment, decidedAt: decision.createdAt.toISOString() };
}

function presentWriteAction(action: WriteAction, decisions: WriteActionDecision[]) {
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
    },
    changeSet: action.changePreview,
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

async function viewOf(db: Executor, action: WriteAction): Promise<WriteActionView> {
  const decisions = await WriteActionDecision.query(db).where({ writeActionId: action.id }).orderBy('createdAt');
  return presentWriteAction(action, decisions);
}

const storedError = (error: DomainError): StoredError => ({ kind: error.kind, code: error.code, message: error.message, details: error.details });

async function logEvent(db: Executor, action: WriteAction, kind: WriteActionEventKind, actor: { memberId: string | null; apiKeyId: string | null }, fields: { snapshotBefore?: SnapshotInfo | null; snapshotAfter?: SnapshotInfo | null; detail?: Record<string, unknown> | null } = {}) {
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
}

/** The capability request an action makes; provenance is the caller's actionId, stored with each record. */
function writeRequestOf(input: WriteActionRequest['input'], actionId: string, extra: Pick<WriteRequest, 'dryRun'> = {}): WriteRequest {
  return {
    operation: input.operation,
    rows: input.rows,
    where: input.where,
    set: input.set,
    provenance: { kind: 'write', id: actionId },
    expectedSnapshot: input.expectedSourceSnapshot,
    ...extra,
  };
}

/** Every policy layer of SPEC 5.2, in the order a caller would fix them. */
function authorizeByPolicy(principal: Principal, endpoint: DataEndpoint, policy: WritePolicy | undefined, request: WriteActionRequest): WritePolicy {
  if (!policy) {
    throw new PermissionError('write_policy_missing', `Endpoint ${endpoint.namespace}/${endpoint.name} has no write policy, so it takes no governed writes. A policy:manage key can create one.`);
  }
  const { operation } = request.input;
  if (!policy.allowedOperations.includes(operation)) {
    throw new PermissionError('operation_not_allowed', `The write policy of this endpoint allows ${policy.allowedOperations.join(', ')}, not ${operation}.`, { allowedOperations: policy.allowedOperations });
  }
  if (policy.projectIds.length && !policy.projectIds.includes(request.projectId)) {
    throw new PermissionError('project_not_allowed', 'The write policy of this endpoint does not let this project write to it.', { projectId: request.projectId });
  }
  const missingRead = missingReadPermissions(principal, policy.requiredReadPermissions);
  const missingWrite = policy.requiredWritePermissions.filter((grant) => !principal.writePermissions.includes(grant));
  if (missingRead.length || missingWrite.length) {
    throw new PermissionError('missing_grants', `The write policy needs named grants this API key lacks: ${[...missingRead.map((g) => `read ${g}`), ...missingWrite.map((g) => `write ${g}`)].join(', ')}.`, {
      missingReadPermissions: missingRead,
      missingWritePermissions: missingWrite,
    });
  }
  if (policy.approvalRequired && !hasScope(principal, 'policy:propose')) {
    throw new PermissionError('insufficient_scope', 'Writes to this endpoint need approval, and proposing one needs the policy:propose scope.', { requiredScopes: ['policy:propose'] });
  }
  return policy;
}

async function requireProjectOf(db: Executor, principal: Principal, projectId: string): Promise<void> {
  const project = await Project.query(db).findOne({ id: projectId, workspaceId: principal.workspaceId });
  if (!project) throw new NotFoundError('project', 'No project with this projectId in this workspace.');
  authorizeProject(principal, projectId);
}

interface Prepared {
  endpoint: DataEndpoint;
  installation: PluginInstallation;
  runtime: CapabilityRuntime;
  policy: WritePolicy;
}

async function prepare(deps: ActivityDependencies, principal: Principal, endpointId: string, request: WriteActionRequest): Promise<Prepared> {
  const { endpoint, installation } = await requireDataEndpoint(deps.db, principal.workspaceId, endpointId);
  const runtime = governedWriteRuntime(endpoint, installation);
  await requireProjectOf(deps.db, principal, request.projectId);
  await guardEndpointData(deps.db, principal, endpoint, { channel: 'governed', mode: request.input.operation === 'delete' ? 'delete' : 'write', projectId: request.projectId });
  const policy = authorizeByPolicy(principal, endpoint, await findWritePolicy(deps.db, principal.workspaceId, endpointId), request);
  return { endpoint, installation, runtime, policy };
}

/** Writes through the capability: inside `db`'s transaction for stores in Weft's database (as a savepoint), remotely for others. */
function writeThrough(db: Executor, deps: ActivityDependencies, prepared: Pick<Prepared, 'endpoint' | 'installation' | 'runtime'>, request: WriteRequest): Promise<WriteResult> {
  return prepared.runtime.writeRecords!(capabilityContext(db, prepared.installation, deps.encryptionKey), prepared.endpoint.target, request);
}

export async function dryRunSourceWrite(deps: ActivityDependencies, principal: Principal, endpointId: string, request: WriteActionRequest) {
  const prepared = await prepare(deps, principal, endpointId, request);
  const result = await writeThrough(deps.db, deps, prepared, writeRequestOf(request.input, request.actionId, { dryRun: true }));
  return { dryRun: true as const, operation: request.input.operation, expectedSourceSnapshot: request.input.expectedSourceSnapshot, affected: result.affected, changeSet: result.changes! };
}

export interface SubmitOutcome {
  /** True when the action waits for approval (answered 202). */
  pending: boolean;
  replayed: boolean;
  writeAction: WriteActionView;
}

/** The same key and body returns the first outcome (a failure is raised again); another body is a conflict. */
async function replay(db: Executor, existing: WriteAction, digest: string): Promise<SubmitOutcome> {
  if (existing.requestDigest !== digest) {
    throw new ConflictError('idempotency_key_reused', 'This idempotencyKey was already used on this endpoint for a different request. Send the same body to get its outcome, or use a new key for a new action.', {
      actionId: existing.actionId,
    });
  }
  if (existing.status === 'failed' && existing.error) throw restoredError({ ...existing.error, details: { ...existing.error.details, actionId: existing.actionId, replayed: true } });
  return { pending: existing.status === 'pending_approval', replayed: true, writeAction: await viewOf(db, existing) };
}

const isUniqueViolation = (error: unknown) => error instanceof UniqueViolationError || (error as { code?: string }).code === '23505' || (error as { nativeError?: { code?: string } }).nativeError?.code === '23505';

/**
 * Submits a governed write. Without approval it applies at once, in one transaction with its
 * action record and log; with approval it is checked by a dry run, recorded as pending and
 * handed to a Temporal workflow that waits for decisions or expiry.
 */
export async function submitSourceWrite(deps: SourceWriteDependencies, principal: Principal, endpointId: string, request: WriteActionRequest, options: { requestDigest?: string } = {}): Promise<SubmitOutcome> {
  const prepared = await prepare(deps, principal, endpointId, request);
  await assertCredit(deps.db, principal.workspaceId, 'governed_write');
  // What a retry with the same idempotencyKey must repeat to get the first outcome: the body, or
  // for an action derived from another request (a SPARQL update) that request, since each attempt
  // derives a new actionId and, once the first applied, a new expected snapshot.
  const digest = options.requestDigest ?? sha256Hex(canonicalJson(request));
  const actor = { memberId: principal.memberId, apiKeyId: principal.apiKeyId };
  let failure: DomainError | undefined;
  let outcome: SubmitOutcome;
  try {
    outcome = await deps.db.transaction(async (trx) => {
      // Retries of one key queue here; the first decides the outcome every later one returns.
      await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))', [`weft.source_write:${endpointId}`, request.idempotencyKey]);
      const existing = await WriteAction.query(trx).findOne({ workspaceId: principal.workspaceId, dataEndpointId: endpointId, idempotencyKey: request.idempotencyKey });
      if (existing) return replay(trx, existing, digest);
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
        proposedByMemberId: principal.memberId,
        proposedByApiKeyId: principal.apiKeyId,
        snapshotBefore: request.input.expectedSourceSnapshot,
      };

      if (approvals > 0) {
        // Checked now, so a stale snapshot or a bad field fails the proposal instead of the approval.
        let preview: WriteResult | undefined;
        try {
          preview = await writeThrough(trx, deps, prepared, writeRequestOf(request.input, request.actionId, { dryRun: true }));
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          failure = error;
        }
        const expiresAt = new Date(Date.now() + prepared.policy.approvalTimeoutSeconds * 1000);
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
          return { pending: false, replayed: false, writeAction: await viewOf(trx, action) };
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
        return { pending: true, replayed: false, writeAction: await viewOf(trx, action) };
      }

      // Recorded before the write: a taken actionId fails here, before anything reaches a remote store.
      const recorded = await WriteAction.query(trx).insertAndFetch({ ...base, status: 'applied', endedAt: new Date() });
      let result: WriteResult | undefined;
      try {
        result = await writeThrough(trx, deps, prepared, writeRequestOf(request.input, request.actionId));
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
        await meterWrite(trx, action, actor);
      }
      return { pending: false, replayed: false, writeAction: await viewOf(trx, action) };
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

/** An applied action is metered in its own transaction, keyed by the action: once, however often it is retried. */
function meterWrite(db: Executor, action: WriteAction, actor: { memberId: string | null; apiKeyId: string | null }) {
  return meter(db, { workspaceId: action.workspaceId, projectId: action.projectId, kind: 'governed_write', ref: action.id, actor, quantities: { action: 1, row: action.affected ?? 0 } });
}

const canSeeEveryAction = (principal: Principal) => hasScope(principal, 'policy:approve') || hasScope(principal, 'policy:read');

/** An action of the endpoint that this caller may see: approvers and policy readers see all, a proposer its own. */
async function requireVisibleAction(db: Executor, principal: Principal, endpointId: string, actionId: string): Promise<WriteAction> {
  await requireDataEndpoint(db, principal.workspaceId, endpointId);
  const action = await WriteAction.query(db).findOne({ workspaceId: principal.workspaceId, dataEndpointId: endpointId, actionId });
  if (!action || (!canSeeEveryAction(principal) && action.proposedByMemberId !== principal.memberId)) {
    throw new NotFoundError('write_action', 'No write action with this id on this endpoint that this API key can see.');
  }
  // Found through the action: refuse without naming its project to a key that may not know it.
  authorizeProject(principal, action.projectId, { named: false });
  return action;
}

export async function getSourceWrite(db: Executor, principal: Principal, endpointId: string, actionId: string): Promise<WriteActionView> {
  return viewOf(db, await requireVisibleAction(db, principal, endpointId, actionId));
}

export async function listSourceWrites(db: Executor, principal: Principal, endpointId: string, page: PageRequest, filter: { status?: string }) {
  await requireDataEndpoint(db, principal.workspaceId, endpointId);
  const base = WriteAction.query(db).where({ workspaceId: principal.workspaceId, dataEndpointId: endpointId });
  if (!canSeeEveryAction(principal)) base.where('proposedByMemberId', principal.memberId);
  if (principal.projectIds.length) base.whereIn('projectId', principal.projectIds as string[]);
  if (filter.status) base.where('status', filter.status);
  const { rows, pagination } = await pageOf(base, page, { column: 'createdAt', order: 'desc' });
  const decisions = rows.length ? await WriteActionDecision.query(db).whereIn('writeActionId', rows.map((row) => row.id)).orderBy('createdAt') : [];
  return { writeActions: rows.map((row) => presentWriteAction(row, decisions.filter((d) => d.writeActionId === row.id))), pagination };
}

function presentLogEntry(event: WriteActionEvent) {
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

/** The endpoint's action log, newest first. */
export async function listWriteLog(db: Executor, principal: Principal, endpointId: string, page: PageRequest, filter: { actionId?: string; kind?: string }) {
  await requireDataEndpoint(db, principal.workspaceId, endpointId);
  const base = WriteActionEvent.query(db).where({ workspaceId: principal.workspaceId, dataEndpointId: endpointId });
  if (filter.actionId) base.where('actionId', filter.actionId);
  if (filter.kind) base.where('kind', filter.kind);
  const { rows, pagination } = await pageOf(base, page, { column: 'createdAt', order: 'desc' });
  return { entries: rows.map(presentLogEntry), pagination };
}

/** The snapshot a writer names as expectedSourceSnapshot. */
export async function currentSourceSnapshot(deps: ActivityDependencies, workspaceId: string, endpointId: string): Promise<SnapshotInfo> {
  const { endpoint, installation } = await requireDataEndpoint(deps.db, workspaceId, endpointId);
  const runtime = governedWriteRuntime(endpoint, installation);
  return runtime.currentSnapshot!(capabilityContext(deps.db, installation, deps.encryptionKey), endpoint.target);
}

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
      const prepared = await prepare({ db: trx, encryptionKey: deps.encryptionKey }, proposer, action.dataEndpointId, request);
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
