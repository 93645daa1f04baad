import type { ExecutionDependencies } from '../services/pipelines/run-execution';
import { activateRelease, checkReleaseVersion } from '../services/ontology/query-releases';
import { runQueryJobAsItsKey } from '../services/ontology/query-jobs';
import { asActivity } from './as-activity';

export function createPublishedQueryActivities(deps: ExecutionDependencies) {
  return {
    runQueryJob: ({ jobId }: { jobId: string }) => asActivity(() => runQueryJobAsItsKey(deps, jobId)),
    checkReleaseVersion: (args: { queryId: string; queryVersionId: string }) => asActivity(() => checkReleaseVersion(deps.db, args.queryId, args.queryVersionId)),
    activateRelease: (args: { queryId: string; queryVersionId: string; memberId: string; acknowledge: boolean; workflowId: string }) => asActivity(() => activateRelease(deps.db, args)),
  };
}

export type PublishedQueryActivities = ReturnType<typeof createPublishedQueryActivities>;
