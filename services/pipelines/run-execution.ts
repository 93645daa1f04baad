import { randomUUID } from 'node:crypto';
import { ConflictError, DomainError, InputError } from '../../core/errors';
import type { Db, Executor } from '../../db/connection';
import { PipelineRun, RunErrorEvidence, RunWarning } from '../../db/models';
import type { CapabilityRuntime, RecordsQuery, StopReason } from '../../plugins/capability';
import { findCapability } from '../../plugins';
import { rowKey } from '../../plugins/sql/write-request';
import { DestinationNode, isDestination, isSource, PipelineDocument, SourceNode } from '../../pipelines/document';
import { flowPage, FlowPlan, FlowSink, planFlow } from '../../pipelines/flow';
import type { Row } from '../../pipelines/transforms';
import { capabilityContext, requireDataEndpoint } from '../endpoints/data-endpoints';
import { afterCommit } from '../../db/after-commit';
import { errorCode, pagesFetched, recordRunEnd, recordsRead, recordsWritten as recordsWrittenTotal, remoteErrors, runsStarted } from '../../observability/metrics';
import { inSpan } from '../../observability/tracing';
import { discardStaging, passDedupe, stagedRows, StagedRecord, stageRecords, unstageFrom } from './run-staging';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { guardPipelineData } from './pipelines';

// The rules of executing a run, called by the run workflow's activities. Every step reads and
// writes PostgreSQL only (never workflow history): the run row and its node rows are what users
// read over HTTP while the run is in flight.

/**
 * Records asked of a source per read call: one staged page, one heartbeat, one progress update.
 * Small enough that progress moves every few seconds on a slow API, large enough that staging
 * a million records takes a thousand transactions. It matches the records API's cap and the
 * common remote page sizes (100, 250, 500, 1,000): a remote page is fetched once, not again for
 * the records a smaller call left on it (bench/ingest.ts measures this path).
 */
export const RECORDS_PER_PAGE = 1000;

export type TurnClaim =
  | { state: 'granted'; sourceNodeIds: string[] }
  | { state: 'waiting'; behindRunId: string }
  | { state: 'ended'; status: string };

/**
 * A run may start when no earlier run of its pipeline is queued or running, so two runs never
 * read or advance one source position at once. Granting moves the run to running, fixes its sync
 * time (a retry keeps it) and creates its node rows. Idempotent for a run already running.
 */
export async function claimRunTurn(db: Db, runId: string): Promise<TurnClaim> {
  return db.transaction(async (trx) => {
    const run = await PipelineRun.query(trx).findById(runId).forUpdate();
    // The launch starts the workflow after the run row commits (see launchRun), so a missing row
    // was never recorded: nothing to retry. (The recovery sweep starts a run's workflow again
    // if a launch from before this rule raced its own commit and lost.)
    if (!run) throw new InputError('run_missing', `Run ${runId} is not recorded.`);
    if (run.status !== 'queued' && run.status !== 'running') return { state: 'ended', status: run.status };
    const document = run.document as unknown as PipelineDocument;
    const sourceNodeIds = document.nodes.filter(isSource).map((node) => node.id);
    if (run.status === 'running') return { state: 'granted', sourceNodeIds };
    // One pipeline's claims take turns: the earliest open run is the one that may go.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(\'weft.pipeline_turn\'), hashtext(?))', [run.pipelineId]);
    const first = await PipelineRun.query(trx).where({ pipelineId: run.pipelineId }).whereIn('status', ['queued', 'running'])
      .orderBy([{ column: 'queuedAt' }, { column: 'id' }]).first();
    if (first && first.id !== run.id) return { state: 'waiting', behindRunId: first.id };
    await run.$query(trx).patch({ status: 'running', startedAt: trx.fn.now() as unknown as Date, syncTime: trx.raw('date_trunc(\'milliseconds\', now())') as unknown as Date });
    afterCommit(trx, () => runsStarted.inc({ trigger: run.trigger }));
    await trx('pipelineRunNodes').insert(document.nodes.map((node) => ({ runId, nodeId: node.id, nodeType: node.type }))).onConflict(['runId', 'nodeId']).ignore();
    return { state: 'granted', sourceNodeIds };
  });
}

/** What an extraction heartbeats: enough to resume after the last staged page. */
export interface ExtractProgress {
  /** Pages staged so far (the next page is page + 1). */
  page: number;
  continuation: unknown | null;
  recordsRead: number;
  pagesFetched: number;
  stopReason: StopReason | null;
  window: { start: string; end: string } | null;
  /** Largest cursorField value read (table sources in incremental mode). */
  maxCursor: string | number | null;
  /** Records into and out of each node downstream of this source. */
  flow: Record<string, { in: number; out: number }>;
}

export interface ExtractHooks {
  /** The activity's attempt number: a later attempt fences out an earlier one still running, never the reverse. */
  attempt: number;
  /** The last heartbeat's progress, after a retry. */
  resume?: ExtractProgress;
  /** Heartbeats progress; throws when the run was canceled. */
  checkpoint(progress: ExtractProgress): void;
  /** Heartbeats without new progress: the capability calls it while it waits on a remote system. */
  heartbeat?(): void;
  /** Aborted when the run is canceled: the capability aborts its remote request in flight. */
  signal?: AbortSignal;
}

/** Committed position of a source: a window end (windowed remote sources) or a cursor value (table sources). */
export type SourcePosition = { windowEnd: string } | { cursorField: string; value: string | number };

interface RunContext {
  run: PipelineRun;
  document: PipelineDocument;
}

async function loadRun(db: Executor, runId: string): Promise<RunContext> {
  const run = await PipelineRun.query(db).findById(runId);
  if (!run) throw new InputError('run_missing', `Run ${runId} does not exist.`);
  return { run, document: run.document as unknown as PipelineDocument };
}

/** An endpoint a node names, with its capability and decrypted installation, in the run's workspace. */
async function openEndpoint(deps: ServiceDependencies, db: Executor, workspaceId: string, nodeId: string, endpointId: string) {
  try {
    const { endpoint, installation } = await requireDataEndpoint(deps, db, workspaceId, endpointId);
    return { endpoint, runtime: findCapability(installation.capability, installation.capabilityVersion), ctx: capabilityContext(db, installation, deps) };
  } catch (error) {
    if (error instanceof DomainError && error.kind === 'not_found') throw new InputError('endpoint_missing', `Node "${nodeId}" names endpoint ${endpointId}, which no longer exists.`, [], { nodeId });
    throw error;
  }
}

async function committedPosition(db: Executor, pipelineId: string, node: SourceNode): Promise<SourcePosition | undefined> {
  const row = await db('pipelinePositions').where({ pipelineId, nodeId: node.id, endpointId: node.endpointId }).first('position');
  const position = row?.position as SourcePosition | undefined;
  // A position made for another cursor field means nothing to this one.
  if (position && 'cursorField' in position && position.cursorField !== node.cursorField) return undefined;
  return position;
}

/** The read of one page of a source: windows for remote sources, "past the cursor" for tables. */
function sourceQuery(node: SourceNode, run: PipelineRun, position: SourcePosition | undefined, after: unknown): RecordsQuery {
  const query: RecordsQuery = { where: [], orderBy: [], limit: RECORDS_PER_PAGE, after: after ?? undefined };
  if (node.cursorField !== undefined) {
    if (node.mode === 'incremental' && position && 'value' in position) query.where = [{ field: node.cursorField, op: 'gt', value: position.value }];
  } else {
    const lastPosition = node.mode === 'incremental' && position && 'windowEnd' in position ? position.windowEnd : undefined;
    query.incremental = { syncTime: run.syncTime!.toISOString(), lastPosition };
  }
  return query;
}

const larger = (a: string | number | null, b: unknown): string | number | null => {
  if (typeof b !== 'string' && typeof b !== 'number') return a;
  if (a === null || typeof a !== typeof b) return a === null ? b : a;
  return b > a ? b : a;
};

/** The record key of each destination downstream of a source: staging keys records with it. */
async function destinationKeys(deps: ServiceDependencies, db: Executor, context: RunContext, plan: FlowPlan): Promise<Map<string, string[] | null>> {
  const keys = new Map<string, string[] | null>();
  for (const id of plan.destinationIds) {
    const node = context.document.nodes.find((n): n is DestinationNode => n.id === id && isDestination(n))!;
    const { endpoint, runtime, ctx } = await openEndpoint(deps, db, context.run.workspaceId, id, node.endpointId);
    keys.set(id, endpoint.schemaHints?.primaryKey?.length ? endpoint.schemaHints.primaryKey : ((await runtime.recordKey?.(ctx, endpoint.target)) ?? null));
  }
  return keys;
}

/** A flow sink in the page's transaction: dedupe keys in pipeline_run_keys, records staged in pipeline_run_rows. */
function stagingSink(trx: Executor, runId: string, sourceId: string, page: number, keys: Map<string, string[] | null>): FlowSink {
  return {
    passDedupe: (nodeId, records) => passDedupe(trx, runId, nodeId, sourceId, records.map((r) => ({ ...r, page }))),
    async deliver(destinationId, records) {
      const key = keys.get(destinationId) ?? null;
      const staged = records.map((data): StagedRecord => ({ data, key: key ? stagingKey(destinationId, data, key) : null }));
      await stageRecords(trx, runId, destinationId, sourceId, page, staged);
    },
  };
}

function stagingKey(nodeId: string, record: Row, key: string[]): string {
  try {
    return rowKey(record, key);
  } catch (error) {
    throw new InputError('invalid_record_key', `Node "${nodeId}" received a record without a usable key (${key.join(', ')}): ${(error as Error).message}`, [], { nodeId });
  }
}

/**
 * Fails unless this execution still owns the node (its claim is the node's) and the run is still
 * running: a canceled run or a newer execution stops it, its writes fenced out.
 */
async function holdNode(trx: Executor, runId: string, nodeId: string, claim: string): Promise<void> {
  const row = await trx('pipelineRunNodes as n').join('pipelineRuns as r', 'r.id', 'n.runId')
    .where({ 'n.runId': runId, 'n.nodeId': nodeId }).forUpdate('n').first('n.claim', 'n.status', 'r.status as runStatus');
  if (row?.runStatus !== 'running') throw runEnded(runId, nodeId, row?.runStatus);
  if (row.claim !== claim || row.status !== 'running') throw superseded(runId, nodeId);
}

/**
 * A newer execution of the extraction owns the node: this one stops, and its report is not an
 * outcome of the run. Temporal drops a superseded attempt's report; should it ever take one, the
 * failure is retryable and the retry answers from the node's state (attempt_superseded is one of
 * the codes asActivity retries), so it never ends the workflow.
 */
const superseded = (runId: string, nodeId: string) => new ConflictError('attempt_superseded', `Node "${nodeId}" of run ${runId} is being extracted by a newer attempt; this one stopped.`, { nodeId });

/** The run ended (failed, canceled) while this extraction ran: it cannot succeed any more. */
const runEnded = (runId: string, nodeId: string, status: string | undefined) => new ConflictError('run_not_running', `Run ${runId} is ${status ?? 'gone'}, so node "${nodeId}" is not extracted.`, { nodeId });

export interface ExtractionResult {
  recordsRead: number;
  pages: number;
  stopReason: StopReason | null;
}

/**
 * What an execution of the extraction answers when it cannot claim the node: an extraction that
 * already finished (an attempt whose report never reached Temporal, which then started this one)
 * answers its recorded counts, as that attempt did; a newer execution's node is not this one's.
 */
async function unclaimedExtraction(db: Executor, runId: string, nodeId: string): Promise<ExtractionResult> {
  const row = await db('pipelineRunNodes as n').join('pipelineRuns as r', 'r.id', 'n.runId')
    .where({ 'n.runId': runId, 'n.nodeId': nodeId }).first('n.status', 'n.recordsIn', 'n.pages', 'n.stopReason', 'r.status as runStatus');
  if (row?.status === 'succeeded') return { recordsRead: Number(row.recordsIn), pages: row.pages, stopReason: row.stopReason ?? null };
  if (row?.runStatus !== 'running') throw runEnded(runId, nodeId, row?.runStatus);
  throw superseded(runId, nodeId);
}

/**
 * Reads one source page by page: each page goes through the downstream transforms and is staged
 * for its destinations in one transaction with the node's progress, then heartbeated. A retry
 * resumes after the last heartbeated page and stages the pages after it again (replacing what a
 * dead attempt left), so nothing is staged twice. The next page is read while one is staged, so
 * memory holds at most two pages.
 */
export async function extractSource(ctx: OperationContext, runId: string, nodeId: string, hooks: ExtractHooks): Promise<ExtractionResult> {
  const { deps } = ctx;
  const { db } = deps;
  const context = await loadRun(db, runId);
  // As the launching key, before anything is read: the data guard over every endpoint of the run,
  // as at launch and at commit (a key narrowed since reads nothing).
  await guardPipelineData(deps, db, ctx.principal, context.run.projectId, context.document);
  const node = context.document.nodes.find((n): n is SourceNode => n.id === nodeId && isSource(n));
  if (!node) throw new InputError('node_missing', `Run ${runId} has no source node "${nodeId}".`);
  // Each execution claims the node with a claim of its own, so the newest one owns it: a later
  // attempt, or the same attempt started again by a cluster that lost track of it. An earlier
  // attempt never takes the node back from a later one.
  const claim = randomUUID();
  const claimed = await db('pipelineRunNodes').where({ runId, nodeId }).where('attempt', '<=', hooks.attempt).whereIn('status', ['pending', 'running'])
    .update({ attempt: hooks.attempt, claim, status: 'running', startedAt: db.raw('coalesce(started_at, now())') });
  if (!claimed) return unclaimedExtraction(db, runId, nodeId);

  const opened = await openEndpoint(deps, db, context.run.workspaceId, nodeId, node.endpointId);
  const source = { ...opened, ctx: { ...opened.ctx, signal: hooks.signal, heartbeat: hooks.heartbeat } };
  const plan = planFlow(context.document, nodeId);
  const keys = await destinationKeys(deps, db, context, plan);
  const position = node.mode === 'incremental' ? await committedPosition(db, context.run.pipelineId, node) : undefined;
  const progress: ExtractProgress = hooks.resume ?? { page: 0, continuation: null, recordsRead: 0, pagesFetched: 0, stopReason: null, window: null, maxCursor: null, flow: {} };
  await unstageFrom(db, runId, nodeId, progress.page + 1);
  if (progress.page > 0 && progress.continuation === null) return finishExtraction(deps, context, node, progress, claim);

  const read = (after: unknown) => {
    const reading = readPage(source.runtime, source.ctx, source.endpoint.target, sourceQuery(node, context.run, position, after), nodeId);
    // Read ahead: left unawaited when staging fails or the run is canceled, and then dropped.
    reading.catch(() => undefined);
    return reading;
  };
  let reading = read(progress.continuation);
  for (;;) {
    const page = await reading;
    // The next page is read while this one is staged (its continuation is known now): the remote
    // API and PostgreSQL work at the same time, and memory holds at most these two pages. Progress
    // still moves only after this page is staged, so a retry resumes exactly as before.
    if (page.continuation !== null && page.continuation !== undefined) reading = read(page.continuation);
    const next: ExtractProgress = structuredClone(progress);
    next.page += 1;
    next.continuation = page.continuation ?? null;
    next.recordsRead += page.records.length;
    next.pagesFetched += page.pagesFetched ?? 1;
    next.stopReason = page.stopReason ?? (page.continuation ? null : 'exhausted');
    next.window = page.window ?? next.window;
    if (node.cursorField !== undefined) for (const record of page.records) next.maxCursor = larger(next.maxCursor, record[node.cursorField]);
    await db.transaction(async (trx) => {
      await holdNode(trx, runId, nodeId, claim);
      await flowPage(plan, page.records, stagingSink(trx, runId, nodeId, next.page, keys), next.flow);
      await trx('pipelineRunNodes').where({ runId, nodeId }).update({
        recordsIn: next.recordsRead, recordsOut: next.recordsRead, pages: next.pagesFetched, stopReason: next.stopReason,
        window: next.window ? JSON.stringify(next.window) : null, flow: JSON.stringify(next.flow),
      });
    });
    Object.assign(progress, next);
    recordsRead.inc({ capability: source.runtime.definition.name }, page.records.length);
    pagesFetched.inc({ capability: source.runtime.definition.name }, page.pagesFetched ?? 1);
    hooks.checkpoint(progress);
    if (progress.continuation === null) break;
  }
  return finishExtraction(deps, context, node, progress, claim);
}

/** One read call; remote failures keep their code and status and name the node. */
async function readPage(runtime: CapabilityRuntime, ctx: Parameters<CapabilityRuntime['readRecords']>[0], target: Record<string, unknown>, query: RecordsQuery, nodeId: string) {
  try {
    return await inSpan('remote read', { 'weft.capability': runtime.definition.name, 'weft.node': nodeId }, () => runtime.readRecords(ctx, target, query));
  } catch (error) {
    remoteErrors.inc({ capability: runtime.definition.name, operation: 'read', code: errorCode(error) });
    if (error instanceof DomainError && error.details?.nodeId === undefined) Object.assign(error, { details: { ...error.details, nodeId } });
    throw error;
  }
}

/**
 * Where the source's position moves when the run commits. A read cut short by maxPages (or a
 * looping remote cursor) does not move it: the records it did not read are read next time.
 */
async function finishExtraction(deps: ServiceDependencies, context: RunContext, node: SourceNode, progress: ExtractProgress, claim: string): Promise<ExtractionResult> {
  const warnings: RunWarning[] = [];
  const truncated = progress.stopReason === 'max_pages' || progress.stopReason === 'repeated_cursor';
  if (progress.stopReason === 'max_pages') {
    warnings.push({ nodeId: node.id, code: 'truncated', message: `Node "${node.id}" stopped at the target's maxPages after ${progress.pagesFetched} pages: later records were not read, so the source position did not advance.` });
  } else if (progress.stopReason === 'repeated_cursor') {
    warnings.push({ nodeId: node.id, code: 'repeated_cursor', message: `Node "${node.id}" stopped because the remote API repeated a cursor: later records may not have been read, so the source position did not advance.` });
  }
  let next: SourcePosition | null = null;
  if (node.mode === 'incremental' && !truncated) {
    if (node.cursorField !== undefined) next = progress.maxCursor === null ? null : { cursorField: node.cursorField, value: progress.maxCursor };
    else if (progress.window) next = { windowEnd: progress.window.end };
  }
  await deps.db.transaction(async (trx) => {
    await holdNode(trx, context.run.id, node.id, claim);
    await trx('pipelineRunNodes').where({ runId: context.run.id, nodeId: node.id }).update({
      status: 'succeeded', finishedAt: trx.fn.now(), nextPosition: next ? JSON.stringify(next) : null, warnings: JSON.stringify(warnings),
    });
  });
  return { recordsRead: progress.recordsRead, pages: progress.pagesFetched, stopReason: progress.stopReason };
}

export interface RunEnd {
  status: string;
  /** The workflow id of the next queued run of the same pipeline, to wake. */
  nextWorkflowId: string | null;
}

/**
 * What the commit of a run that already ended answers: its status and the next run to wake, as the
 * attempt that committed it answered (a retry whose first attempt's report never reached Temporal).
 */
export async function endedRunOutcome(db: Executor, run: PipelineRun): Promise<RunEnd> {
  return { status: run.status, nextWorkflowId: await nextQueuedWorkflow(db, run.pipelineId) };
}

async function nextQueuedWorkflow(db: Executor, pipelineId: string): Promise<string | null> {
  const next = await PipelineRun.query(db).where({ pipelineId, status: 'queued' }).orderBy([{ column: 'queuedAt' }, { column: 'id' }]).first();
  return next?.workflowId ?? null;
}

/**
 * The one commit of a run: every destination takes its staged records (a managed table as one
 * snapshot), every source position advances and the run succeeds, all in one transaction of
 * Weft's database, so a failure leaves no trace and the next run reads the same records again.
 * External destinations commit their own transaction inside it (docs/architecture/run.md: at-least-once there).
 * Idempotent: a retried commit of a run already ended changes nothing.
 */
export async function commitRun(ctx: OperationContext, runId: string): Promise<RunEnd> {
  const { deps, principal: launcher } = ctx;
  return deps.db.transaction(async (trx) => {
    const run = await PipelineRun.query(trx).findById(runId).forUpdate();
    if (!run) return { status: 'missing', nextWorkflowId: null };
    if (run.status !== 'running') return endedRunOutcome(trx, run);
    const document = run.document as unknown as PipelineDocument;
    // Committed as the key that launched the run, as it is now: access withdrawn since stops it.
    await guardPipelineData(deps, trx, launcher, run.projectId, document);
    const nodes = await trx('pipelineRunNodes').where({ runId });
    const unfinished = nodes.filter((n) => n.nodeType === 'source' && n.status !== 'succeeded');
    if (unfinished.length) throw new ConflictError('run_incomplete', `Sources ${unfinished.map((n) => n.nodeId).join(', ')} of run ${runId} have not finished.`);

    let recordsWritten = 0;
    for (const node of document.nodes.filter(isDestination)) {
      const { endpoint, runtime, ctx } = await openEndpoint(deps, trx, run.workspaceId, node.id, node.endpointId);
      if (!runtime.commitStagedWrite) throw new InputError('destination_not_writable', `Node "${node.id}": ${runtime.definition.name} endpoints cannot be written by a pipeline.`, [], { nodeId: node.id });
      const written = await withNode(node.id, () => runtime.commitStagedWrite!(ctx, endpoint.target, { mode: node.writeMode, rows: stagedRows(trx, runId, node.id), provenance: { kind: 'run', id: runId } }));
      recordsWritten += written.affected;
      afterCommit(trx, () => recordsWrittenTotal.inc({ capability: runtime.definition.name }, written.affected));
      await trx('pipelineRunNodes').where({ runId, nodeId: node.id }).update({
        status: 'succeeded', recordsOut: written.affected, finishedAt: trx.fn.now(),
        window: written.snapshot ? JSON.stringify({ snapshot: written.snapshot }) : null,
      });
    }
    for (const node of nodes.filter((n) => n.nodeType === 'source' && n.nextPosition)) {
      const source = document.nodes.find((n): n is SourceNode => n.id === node.nodeId && isSource(n))!;
      // A pipeline deleted while this run was in flight keeps no positions.
      await trx.raw(
        `INSERT INTO pipeline_positions (pipeline_id, node_id, endpoint_id, position, run_id, updated_at)
         SELECT ?, ?, ?, ?::jsonb, ?, now() WHERE EXISTS (SELECT 1 FROM pipelines WHERE id = ?)
         ON CONFLICT (pipeline_id, node_id) DO UPDATE SET endpoint_id = EXCLUDED.endpoint_id, position = EXCLUDED.position, run_id = EXCLUDED.run_id, updated_at = now()`,
        [run.pipelineId, node.nodeId, source.endpointId, JSON.stringify(node.nextPosition), runId, run.pipelineId],
      );
    }
    await trx('pipelineRunNodes').where({ runId }).whereNot('nodeType', 'destination').whereNot('status', 'succeeded').update({ status: 'succeeded', finishedAt: trx.fn.now() });
    const warnings = nodes.flatMap((n) => n.warnings as RunWarning[]);
    await run.$query(trx).patch({ status: 'succeeded', finishedAt: trx.fn.now() as unknown as Date, warnings: warnings as never });
    afterCommit(trx, () => recordRunEnd(run, 'succeeded'));
    await discardStaging(trx, runId);
    // Metered with the commit, keyed by the run: a retried commit meters nothing again.
    await deps.metering.meter(trx, { workspaceId: run.workspaceId, projectId: run.projectId, kind: 'pipeline_run', ref: runId, actor: { memberId: run.actorMemberId, apiKeyId: run.apiKeyId }, quantities: { run: 1, record: recordsWritten } });
    return { status: 'succeeded', nextWorkflowId: await nextQueuedWorkflow(trx, run.pipelineId) };
  });
}

async function withNode<T>(nodeId: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DomainError && error.details?.nodeId === undefined) Object.assign(error, { details: { ...error.details, nodeId } });
    throw error;
  }
}

/**
 * Ends a run that will not commit (failed or canceled): its staged records are dropped and no
 * position moves. A run already ended keeps its status (a commit that won the race stays).
 */
export async function endRun(db: Executor, runId: string, status: 'failed' | 'canceled', error: RunErrorEvidence | null): Promise<RunEnd> {
  return db.transaction(async (trx) => {
    const run = await PipelineRun.query(trx).findById(runId).forUpdate();
    if (!run) return { status: 'missing', nextWorkflowId: null };
    if (run.status === 'queued' || run.status === 'running') {
      await run.$query(trx).patch({ status, error: error as never, finishedAt: trx.fn.now() as unknown as Date });
      afterCommit(trx, () => recordRunEnd(run, status));
      await trx('pipelineRunNodes').where({ runId }).whereIn('status', ['pending', 'running']).update({ status: status === 'canceled' ? 'canceled' : 'failed', finishedAt: trx.fn.now() });
      if (error?.nodeId) await trx('pipelineRunNodes').where({ runId, nodeId: error.nodeId }).update({ status: 'failed' });
      await discardStaging(trx, runId);
    }
    return { status: run.status === 'queued' || run.status === 'running' ? status : run.status, nextWorkflowId: await nextQueuedWorkflow(trx, run.pipelineId) };
  });
}

/** Error evidence from any failure: the node it names, a stable code, the message and the remote status. */
export function errorEvidence(error: unknown): RunErrorEvidence {
  if (error instanceof DomainError) {
    const status = error.details?.status ?? error.details?.upstreamStatus;
    return { nodeId: typeof error.details?.nodeId === 'string' ? error.details.nodeId : null, code: error.code, message: error.message, remoteStatus: typeof status === 'number' ? status : null };
  }
  return { nodeId: null, code: 'internal_error', message: 'The run failed unexpectedly.', remoteStatus: null };
}
