import { PipelineRun } from '../../db/models';
import { actAsKey, ActivityDependencies } from '../operations/act-as-key';
import { defineOperation } from '../operations/operation';
import { executePipelineOperation } from './operations';
import { commitRun, RunEnd } from './run-execution';

/**
 * A run commits as the key that launched it, with the launch operation's access checked again
 * against the key as it is now, and the data guard over its sources and destinations.
 */
export const commitRunOperation = defineOperation({
  name: 'commitRun',
  summary: 'Commit a run\'s staged records to its destinations, as the key that launched it.',
  access: executePipelineOperation.access,
  effect: 'external',
  run: ({ deps, principal }, { runId }: { projectId: string; runId: string }) => commitRun(deps, runId, principal),
});

/** The commit activity's work. Scheduled runs have no key: their schedule's member was checked when they were recorded. */
export async function commitRunAsItsLauncher(deps: ActivityDependencies, runId: string): Promise<RunEnd> {
  const run = await PipelineRun.query(deps.db).findById(runId);
  if (!run?.apiKeyId) return commitRun(deps, runId);
  return actAsKey(deps, { workspaceId: run.workspaceId, apiKeyId: run.apiKeyId }, `run:${runId}`, commitRunOperation, { projectId: run.projectId, runId });
}
