import { DomainError, UnavailableError } from '../../core/errors';
import { QueryExecution, QueryJob, QueryVersion, storedError } from '../../db/models';
import type { Requirement } from '../tenancy/access';
import { actAs, isRefusal } from '../operations/act-as';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { defineOperation } from '../operations/operation';
import { checkGrants, EXECUTION_DEFAULTS, runQuery } from './query-execution';
import type { SnapshotPin } from './sparql-dataset';
import { executeQueryOperation } from './query-operations';

/**
 * An async query job runs later, in an activity, as the key or member that asked for it: with the access of
 * the execute operation that accepted it, checked again against that actor as it is now, and an
 * accountable actor. A synchronous execution reads and changes nothing, so it needs none (SPEC
 * 5.1 asks one of mutations and run access); a job is work done later in the name of the key's
 * member, metered to them, which SPEC 5.1 lets fail once the creator has lost membership, as every
 * other piece of later work does (a run's commit, a scheduled launch, an approved write).
 */
export const runQueryJobOperation = defineOperation({
  name: 'runQueryJob',
  summary: 'Run an accepted async query job and store its rows.',
  access: { ...(executeQueryOperation.access as Requirement), actor: 'accountable', grants: 'read' as const },
  effect: 'external',
  output: {
    200: {
      description: 'How the job ended: completed (its rows stored), failed, or canceled (a cancel came first); its status as found when it was no longer active',
      schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['completed', 'failed', 'canceled', 'expired', 'missing'] } } },
    },
  },
  run: (ctx, { jobId }: { projectId: string; jobId: string }) => runQueryJob(ctx, jobId),
});

/**
 * The job activity. A refusal (revoked key, narrowed allowlist, withdrawn grant, member gone)
 * fails the job with its reason; anything else, such as a lost race or a database briefly away,
 * is thrown so the activity is retried and the job stays active meanwhile.
 */
export async function runQueryJobAsItsKey(deps: ServiceDependencies, jobId: string): Promise<{ status: string }> {
  const job = await QueryJob.query(deps.db).findById(jobId);
  if (!job || job.status !== 'active') return { status: job?.status ?? 'missing' };
  try {
    return await actAs(deps, { workspaceId: job.workspaceId, memberId: job.memberId, apiKeyId: job.apiKeyId }, `query-job:${jobId}`, runQueryJobOperation, { projectId: job.projectId, jobId });
  } catch (error) {
    if (!isRefusal(error)) throw error;
    return refuseQueryJob(deps, jobId, error);
  }
}

/**
 * The job workflow's activity: runs the query with the job limit and stores the rows, unless the
 * job was canceled meanwhile. The job's project is the operation's (its input names the job's).
 */
export async function runQueryJob(ctx: OperationContext, jobId: string): Promise<{ status: string }> {
  const { deps } = ctx;
  const job = await QueryJob.query(deps.db).findById(jobId);
  if (!job || job.status !== 'active') return { status: job?.status ?? 'missing' };
  const version = await QueryVersion.query(deps.db).join('query_releases', 'query_releases.query_version_id', 'query_versions.id').where({ 'query_releases.query_id': job.queryId, 'query_releases.version': job.releaseVersion }).select('query_versions.*').first();
  // Jobs accepted before snapshots were pinned have none: they read the snapshots current now.
  const { input, page, snapshots } = job.input as { input: Record<string, unknown>; page: { limit: number; offset: number }; snapshots?: SnapshotPin };
  const started = Date.now();
  let rows: Array<Record<string, unknown>> | undefined;
  let failure: DomainError | undefined;
  try {
    // The key's grants as they are now, not as they were when the job was accepted.
    await checkGrants(ctx, version!);
    // At the snapshots the execution's first attempt read (a commit since does not change the answer).
    rows = await runQuery(ctx, version!, input, page, EXECUTION_DEFAULTS.jobTimeoutMs, snapshots ?? {});
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    failure = error;
  }
  // Only an active job takes its outcome: a cancel that came first wins.
  const updated = await QueryJob.query(deps.db).patch({
    status: failure ? 'failed' : 'completed',
    rows: rows ?? null,
    rowCount: rows?.length ?? null,
    error: failure ? storedError(failure) : null,
    finishedAt: new Date(),
    expiresAt: new Date(deps.clock.now() + EXECUTION_DEFAULTS.resultsTtlMs),
  }).where({ id: jobId, status: 'active' });
  await QueryExecution.query(deps.db).patch({ status: failure ? 'failed' : 'succeeded', durationMs: Date.now() - started, rowCount: rows?.length ?? null }).where({ jobId });
  // Keyed by the job: a retried activity meters it once.
  if (updated && !failure) await deps.metering.meter(deps.db, { workspaceId: job.workspaceId, projectId: job.projectId, kind: 'query_execution', ref: job.id, actor: { memberId: job.memberId, apiKeyId: job.apiKeyId }, quantities: { execution: 1, row: rows!.length } });
  return { status: updated ? (failure ? 'failed' : 'completed') : 'canceled' };
}

/**
 * A job whose key may no longer run it (revoked, expired, restricted, its member gone) fails with
 * the reason recorded, its answer kept for the results' time to live on the runtime's clock.
 */
export async function refuseQueryJob({ db, clock }: Pick<ServiceDependencies, 'db' | 'clock'>, jobId: string, refusal: DomainError): Promise<{ status: string }> {
  const updated = await QueryJob.query(db).patch({
    status: 'failed',
    error: storedError(refusal),
    finishedAt: new Date(),
    expiresAt: new Date(clock.now() + EXECUTION_DEFAULTS.resultsTtlMs),
  }).where({ id: jobId, status: 'active' });
  await QueryExecution.query(db).patch({ status: 'failed' }).where({ jobId });
  return { status: updated ? 'failed' : 'canceled' };
}

/**
 * A job whose activity ran out of retries (a database away for longer than the retry policy, a
 * worker bug) fails with the last error's message instead of staying active forever; its
 * workflow calls this once the activity gave up.
 */
export async function failQueryJob(deps: Pick<ServiceDependencies, 'db' | 'clock'>, jobId: string, cause: string): Promise<{ status: string }> {
  return refuseQueryJob(deps, jobId, new UnavailableError('query_job_failed', `The query job could not be run, after every retry: ${cause.slice(0, 500)} Execute the query again.`));
}
