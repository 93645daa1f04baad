import { DomainError } from '../../core/errors';
import { QueryJob } from '../../db/models';
import { actAsKey, ActivityDependencies } from '../operations/act-as-key';
import { defineOperation } from '../operations/operation';
import { refuseQueryJob, runQueryJob } from './published-queries';
import { executeQueryOperation } from './query-operations';

/**
 * An async query job runs later, in an activity, as the key that asked for it: with the access of
 * the execute operation that accepted it, checked again against the key as it is now.
 */
export const runQueryJobOperation = defineOperation({
  name: 'runQueryJob',
  summary: 'Run an accepted async query job and store its rows.',
  access: executeQueryOperation.access,
  effect: 'external',
  run: ({ deps, principal }, { jobId }: { projectId: string; jobId: string }) => runQueryJob(deps, jobId, principal),
});

/** The job activity: a refusal (revoked key, narrowed allowlist, withdrawn grant) fails the job with its reason. */
export async function runQueryJobAsItsKey(deps: ActivityDependencies, jobId: string): Promise<{ status: string }> {
  const job = await QueryJob.query(deps.db).findById(jobId);
  if (!job || job.status !== 'active') return { status: job?.status ?? 'missing' };
  try {
    return await actAsKey(deps, { workspaceId: job.workspaceId, apiKeyId: job.apiKeyId }, `query-job:${jobId}`, runQueryJobOperation, { projectId: job.projectId, jobId });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return refuseQueryJob(deps.db, jobId, error);
  }
}
