import type { ServiceDependencies } from '../services/operations/context';
import { activateRelease, checkReleaseVersion } from '../services/ontology/query-releases';
import { failQueryJob, runQueryJobAsItsKey } from '../services/ontology/query-jobs';
import { asActivity } from './as-activity';

export function createPublishedQueryActivities(deps: ServiceDependencies) {
  return {
    runQueryJob: ({ jobId }: { jobId: string }) => asActivity(() => runQueryJobAsItsKey(deps, jobId)),
    failQueryJob: ({ jobId, cause }: { jobId: string; cause: string }) => asActivity(() => failQueryJob(deps, jobId, cause)),
    checkReleaseVersion: (args: { queryId: string; queryVersionId: string }) => asActivity(() => checkReleaseVersion(deps.db, args.queryId, args.queryVersionId)),
    activateRelease: (args: { queryId: string; queryVersionId: string; memberId: string; acknowledge: boolean; workflowId: string }) => asActivity(() => activateRelease(deps.db, args)),
  };
}

export type PublishedQueryActivities = ReturnType<typeof createPublishedQueryActivities>;
