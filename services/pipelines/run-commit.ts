import { PermissionError } from '../../core/errors';
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

/**
 * The commit activity's work, always as the run's key. A run with none (launched by a schedule made
 * before schedules had keys, and still queued when they got them) is refused: the workflow ends it
 * failed with this reason, and nothing is committed.
 */
export async function commitRunAsItsLauncher(deps: ActivityDependencies, runId: string): Promise<RunEnd> {
  const run = await PipelineRun.query(deps.db).findById(runId);
  if (!run) return { status: 'missing', nextWorkflowId: null };
  if (!run.apiKeyId) {
    // A retried commit of a run that already ended changes nothing, as commitRun would answer.
    if (run.status !== 'running') return { status: run.status, nextWorkflowId: null };
    throw new PermissionError('run_without_key', 'This run was launched by a schedule made before schedules had API keys, so there is no key to commit it as and nothing was committed: recreate the schedule (pipeline_schedule_create) with the key its runs should act as.');
  }
  return actAsKey(deps, { workspaceId: run.workspaceId, apiKeyId: run.apiKeyId }, `run:${runId}`, commitRunOperation, { projectId: run.projectId, runId });
}
