import { ConflictError, PermissionError } from '../../core/errors';
import { PipelineRun } from '../../db/models';
import { actAs } from '../operations/act-as';
import type { Actor } from '../tenancy/actors';
import type { ServiceDependencies } from '../operations/context';
import { defineOperation } from '../operations/operation';
import { stopReasonSchema } from '../../schemas/data-endpoints';
import { executePipelineOperation } from './operations';
import { commitRun, endedRunOutcome, ExtractHooks, extractSource, RunEnd } from './run-execution';

/**
 * A run commits as the key or member that launched it, with the launch operation's access
 * checked again against that actor as it is now, and the data guard over its sources and destinations.
 */
export const commitRunOperation = defineOperation({
  name: 'commitRun',
  summary: 'Commit a run\'s staged records to its destinations, as the key or member that launched it.',
  access: executePipelineOperation.access,
  effect: 'external',
  output: {
    200: {
      description: 'How the run ended, and the next queued run of its pipeline to wake',
      schema: { type: 'object', required: ['status', 'nextWorkflowId'], properties: { status: { type: 'string' }, nextWorkflowId: { type: ['string', 'null'] } } },
    },
  },
  run: (ctx, { runId }: { projectId: string; runId: string }) => commitRun(ctx, runId),
});

/**
 * A run reads its sources as its launching actor too: the launch operation's access and the
 * data guard hold before the first page is read, not only at commit.
 */
export const extractRunSourceOperation = defineOperation({
  name: 'extractRunSource',
  summary: 'Read one source of a run into staging, as the key or member that launched it.',
  access: executePipelineOperation.access,
  effect: 'external',
  output: {
    200: {
      description: 'What the source gave: its records and pages read, and why the reading stopped',
      schema: { type: 'object', required: ['recordsRead', 'pages', 'stopReason'], properties: { recordsRead: { type: 'integer' }, pages: { type: 'integer' }, stopReason: stopReasonSchema } },
    },
  },
  run: (ctx, { runId, nodeId, hooks }: { projectId: string; runId: string; nodeId: string; hooks: ExtractHooks }) => extractSource(ctx, runId, nodeId, hooks),
});

const RUN_WITHOUT_KEY = 'This run was launched by a schedule made before schedules had API keys, so there is no key to run it as, and nothing was read or committed: recreate the schedule (pipeline_schedule_create) with the key its runs should act as.';

/** What a run acts as: its key, or its member for a run launched in the console; none for a keyless schedule's run. */
function actorOfRun(run: PipelineRun): (Actor & { workspaceId: string }) | undefined {
  if (run.actorKind === 'member') return { workspaceId: run.workspaceId, memberId: run.actorMemberId, apiKeyId: null };
  return run.apiKeyId ? { workspaceId: run.workspaceId, memberId: run.actorMemberId, apiKeyId: run.apiKeyId } : undefined;
}

/** The run and its actor, or the refusal of a running run that has none. */
async function launcherOf(deps: ServiceDependencies, runId: string): Promise<{ run?: PipelineRun; actor?: Actor & { workspaceId: string } }> {
  const run = await PipelineRun.query(deps.db).findById(runId);
  const actor = run && actorOfRun(run);
  if (run && !actor && run.status === 'running') throw new PermissionError('run_without_key', RUN_WITHOUT_KEY);
  return { run, actor };
}

/**
 * The extract activity's work, as the run's key or member. A run with no actor (launched by a
 * schedule made before schedules had keys, and still queued when they got them) is refused before
 * it reads anything: the workflow ends it failed with this reason.
 */
export async function extractAsItsLauncher(deps: ServiceDependencies, runId: string, nodeId: string, hooks: ExtractHooks): Promise<{ recordsRead: number; pages: number; stopReason: unknown }> {
  const { run, actor } = await launcherOf(deps, runId);
  if (!run || !actor) throw new ConflictError('run_not_running', `Run ${runId} is not running, so there is nothing to read.`);
  return actAs(deps, actor, `run:${runId}`, extractRunSourceOperation, { projectId: run.projectId, runId, nodeId, hooks });
}

/** The commit activity's work, always as the run's actor; a run without one is refused as above, and nothing is committed. */
export async function commitRunAsItsLauncher(deps: ServiceDependencies, runId: string): Promise<RunEnd> {
  const { run, actor } = await launcherOf(deps, runId);
  if (!run) return { status: 'missing', nextWorkflowId: null };
  // A retried commit of a run that already ended (its first attempt's report never reached
  // Temporal) answers what that attempt did, without acting as the actor again: a key revoked (a
  // member removed) since would otherwise fail a run that committed.
  if (run.status !== 'running' || !actor) return endedRunOutcome(deps.db, run);
  return actAs(deps, actor, `run:${runId}`, commitRunOperation, { projectId: run.projectId, runId });
}
