import { isCancellation, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { PublishedQueryActivities } from '../activities/published-queries';
import type { PublishReleaseInput } from './names';

const { runQueryJob } = proxyActivities<PublishedQueryActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { maximumAttempts: 3 },
});

const { checkReleaseVersion, activateRelease, failQueryJob } = proxyActivities<PublishedQueryActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 5 },
});

/** One asynchronous query: the activity evaluates and stores the rows; canceling the workflow cancels the job. */
export async function queryJobWorkflow({ jobId }: { jobId: string }): Promise<string> {
  try {
    return (await runQueryJob({ jobId })).status;
  } catch (error) {
    // Out of retries, the job fails with the reason instead of staying active; runs that started
    // before this ended without the extra activity, and replay as they ran.
    if (isCancellation(error) || !patched('query-job-fails-when-out-of-retries')) throw error;
    const cause = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
    return (await failQueryJob({ jobId, cause })).status;
  }
}

/** Publishing a release: validate the version against the active ontology, diff its contracts, activate it. */
export async function publishReleaseWorkflow(input: PublishReleaseInput): Promise<unknown> {
  await checkReleaseVersion({ queryId: input.queryId, queryVersionId: input.queryVersionId });
  return activateRelease({ ...input, workflowId: workflowInfo().workflowId });
}
