import { randomUUID } from 'node:crypto';
import { raw } from 'objection';
import { Client, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { logger } from '../../core/logger';
import { afterCommit } from '../../db/after-commit';
import { runHeartbeatTimeoutSettings } from '../../core/config';
import { InputError, NotFoundError } from '../../core/errors';
import { temporalSettings } from '../../core/temporal-config';
import { assertCredit } from '../usage/credit';
import type { Clock } from '../../core/clock';
import type { Executor } from '../../db/connection';
import { Pipeline, PipelineRun, PipelineVersion, Project, RunStatus } from '../../db/models';
import type { PipelineDocument } from '../../pipelines/document';
import { PipelineRunInput, runSearchAttributes, runWorkflowId } from '../../workflows/names';
import { authorizeProject, isUnrestricted } from '../tenancy/access';
import { PageRequest, pageOf } from '../shared/pagination';
import { assertRunnableDocument, guardPipelineData, requirePipeline } from './pipelines';
import { endRun } from './run-execution';
import type { OperationContext } from '../operations/context';
import { presentRunSummary, presentRunWithNodes, type NodeRow, type RunView } from './presenters';

export const RUN_STATUSES: RunStatus[] = ['queued', 'running', 'succeeded', 'failed', 'canceled'];

/** The run with its nodes' results as they stand now. */
async function viewOf(db: Executor, run: PipelineRun): Promise<RunView> {
  return presentRunWithNodes(run, (await db('pipelineRunNodes').where({ runId: run.id })) as NodeRow[]);
}

/**
 * Records a queued run of the pipeline's active version (a snapshot of its document: later edits
 * never change it), launched by the context's key or signed-in member: the run acts as that actor
 * (run-commit.ts), and the data guard checks it over the run's sources and destinations.
 */
export async function recordRun(ctx: OperationContext, pipeline: Pipeline, input: { trigger: 'api' | 'schedule'; actorMemberId: string; scheduleId?: string }): Promise<PipelineRun> {
  const { db, principal: launcher } = ctx;
  const version = pipeline.activeVersionId ? await PipelineVersion.query(db).findById(pipeline.activeVersionId) : undefined;
  if (!version) throw new InputError('no_active_version', 'The pipeline has no active version to run: activate one first.');
  await assertRunnableDocument(db, pipeline.workspaceId, version.document as unknown as PipelineDocument, '/activeVersion/document');
  // The run reads its sources and writes its destinations as the key that launched it.
  await guardPipelineData(ctx.deps, db, launcher, pipeline.projectId, version.document as unknown as PipelineDocument);
  return PipelineRun.query(db).insertAndFetch({
    ...runOfVersion(pipeline, version),
    trigger: input.trigger,
    scheduleId: input.scheduleId ?? null,
    actorMemberId: input.actorMemberId,
    // A member launching in the console has no key: the run acts as the member.
    ...(launcher.signedIn ? { actorKind: 'member' as const, apiKeyId: null } : { actorKind: 'key' as const, apiKeyId: launcher.apiKeyId }),
    status: 'queued',
  });
}

/**
 * The fields every run row takes from its pipeline and the version it runs. The id is chosen here,
 * so the workflow id is written with the row (one statement).
 */
export function runOfVersion(pipeline: Pipeline, version: PipelineVersion): Partial<PipelineRun> {
  const id = randomUUID();
  return {
    id,
    workspaceId: pipeline.workspaceId,
    projectId: pipeline.projectId,
    pipelineId: pipeline.id,
    pipelineName: pipeline.name,
    versionId: version.id,
    versionNumber: version.number,
    document: version.document,
    workflowId: runWorkflowId(id),
  };
}

/**
 * Launches the active version: records a queued run and, once the run row has committed, starts
 * its workflow (id from the run id, with the WorkspaceId, ProjectId and PipelineId search
 * attributes), so the workflow's first activity always finds the row. A launch while another run
 * of the pipeline is open is queued behind it. Answered 202 by the routes: poll the run. The
 * project is the operation's, or given: a workspace-level launch names none and finds it through
 * the pipeline. A process that dies between the commit and the start, or a start that fails,
 * leaves a queued run without a workflow: the housekeeping sweep starts it (startQueuedRuns).
 */
export async function launchRun(ctx: OperationContext, pipelineId: string, project: Project = ctx.project): Promise<RunView> {
  const { db, deps: { temporal }, principal } = ctx;
  await assertCredit(ctx.deps, db, principal.workspaceId, 'pipeline_run');
  const pipeline = await requirePipeline(db, project, pipelineId);
  const run = await recordRun(ctx, pipeline, { trigger: 'api', actorMemberId: principal.memberId });
  afterCommit(db, async () => {
    try {
      await startRunWorkflow(temporal, run);
    } catch (error) {
      logger.warn({ err: error, runId: run.id }, 'the run is recorded but its workflow did not start: the housekeeping sweep starts it');
      return;
    }
    // Unmarked, the sweep finds the workflow started (its start is refused) and marks it then.
    await markWorkflowStarted(ctx.deps.db, run.id).catch((error: unknown) => logger.warn({ err: error, runId: run.id }, 'the run\'s workflow started but is not marked so: the sweep marks it'));
  });
  // A run just recorded has no node rows yet (its claim creates them).
  return presentRunWithNodes(run, []);
}

/** Settings of a run's workflow that operators (and tests) may change: WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS, WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS. */
export function runWorkflowInput(runId: string): PipelineRunInput {
  return { runId, ...runHeartbeatTimeoutSettings() };
}

/**
 * Starts a recorded run's workflow. The workflow id derives from the run id, so a second start is
 * refused by Temporal and reported as 'already_started', whatever became of the first workflow: one
 * an operator terminated or canceled stays stopped.
 */
export async function startRunWorkflow(temporal: Client, run: Pick<PipelineRun, 'id' | 'workflowId' | 'workspaceId' | 'projectId' | 'pipelineId'>): Promise<'started' | 'already_started'> {
  try {
    await temporal.workflow.start('pipelineRunWorkflow', {
      workflowId: run.workflowId,
      taskQueue: temporalSettings().taskQueues.main,
      args: [runWorkflowInput(run.id)],
      typedSearchAttributes: runSearchAttributes(run),
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
    return 'started';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw error;
  }
}

/** Records that the run's workflow exists, so the sweep leaves the run alone. */
async function markWorkflowStarted(db: Executor, runId: string): Promise<void> {
  await PipelineRun.query(db).patch({ workflowStartedAt: db.fn.now() as unknown as Date }).where('id', runId).whereNull('workflowStartedAt');
}

/** Runs one sweep looks at, oldest first: the next sweep takes the rest. */
export const QUEUED_RUN_SWEEP_LIMIT = 100;

/**
 * The recovery sweep (services/shared/housekeeping.ts): starts the workflow of the runs queued
 * longer than `olderThanMs` whose workflow was never found started, and marks them. A run whose
 * launch died between its commit and the start gets its workflow here; one whose workflow exists
 * (a scheduled run, a launch that could not mark it) is refused by Temporal and only marked. A
 * run whose start fails is logged and left for the next sweep, without holding up the others.
 * A run's age is read at the clock's database time (its queuedAt is the database's, and every
 * process sweeps): the database's own in production, a test clock's when it holds one.
 */
export async function startQueuedRuns(deps: { db: Executor; temporal: Client; clock: Clock }, olderThanMs: number, limit = QUEUED_RUN_SWEEP_LIMIT): Promise<{ started: string[]; failed: string[] }> {
  const queuedBefore = raw("coalesce(?::timestamptz, clock_timestamp()) - ? * interval '1 millisecond'", [deps.clock.databaseTime(), olderThanMs]);
  const runs = await PipelineRun.query(deps.db).where('status', 'queued').whereNull('workflowStartedAt').where('queuedAt', '<', queuedBefore)
    .orderBy('queuedAt').limit(limit).select('id', 'workflowId', 'workspaceId', 'projectId', 'pipelineId');
  const started: string[] = [];
  const failed: string[] = [];
  for (const run of runs) {
    try {
      if ((await startRunWorkflow(deps.temporal, run)) === 'started') started.push(run.id);
      await markWorkflowStarted(deps.db, run.id);
    } catch (error) {
      failed.push(run.id);
      logger.warn({ err: error, runId: run.id }, 'the sweep could not start a queued run\'s workflow: the next sweep tries again');
    }
  }
  return { started, failed };
}

/**
 * A run of this workspace; with a project, one whose pipeline belongs to it. Runs of projects
 * outside a key's allowlist are refused. The project is an explicit optional parameter, not
 * ctx.project: the workspace-level operations declare none.
 */
export async function getRun(ctx: OperationContext, runId: string, project?: Project): Promise<RunView> {
  const { db, principal } = ctx;
  const run = await PipelineRun.query(db).findOne({ id: runId, workspaceId: principal.workspaceId, ...(project ? { projectId: project.id } : {}) });
  if (!run) throw new NotFoundError('run', project ? 'No run with this id in this project.' : 'No run with this id in this workspace.');
  // Found through the run: refuse without naming its project to a key that may not know it.
  authorizeProject(principal, run.projectId, { named: false });
  return viewOf(db, run);
}

export async function listRuns(ctx: OperationContext, page: PageRequest, filter: { project?: Project; pipelineId?: string; status?: RunStatus }) {
  const { db, principal } = ctx;
  const base = PipelineRun.query(db).where({ workspaceId: principal.workspaceId });
  if (filter.project) base.where('projectId', filter.project.id);
  else if (!isUnrestricted(principal)) base.whereIn('projectId', principal.projectIds as string[]);
  if (filter.pipelineId) base.where('pipelineId', filter.pipelineId);
  if (filter.status) base.where('status', filter.status);
  const { rows, pagination } = await pageOf(base, page, { column: 'queuedAt', order: 'desc' });
  return { runs: rows.map(presentRunSummary), pagination };
}

/** The project a workspace-level launch names through its pipeline (a pipeline of another workspace is a 404). */
export async function projectOfPipeline(ctx: OperationContext, pipelineId: string): Promise<Project> {
  const { db, principal } = ctx;
  const pipeline = await Pipeline.query(db).findOne({ id: pipelineId, workspaceId: principal.workspaceId });
  const project = pipeline && (await Project.query(db).findOne({ id: pipeline.projectId, workspaceId: principal.workspaceId }));
  if (!project) throw new InputError('unknown_pipeline', 'pipelineId is not a pipeline of this workspace.', [{ path: '/pipelineId', message: 'is not a pipeline of this workspace' }]);
  // Found through the pipeline: refuse without naming its project to a key that may not know it.
  authorizeProject(principal, project.id, { named: false });
  return project;
}

/**
 * Cancels a queued or running run (no public route: for MCP tools and operators). The workflow
 * is canceled; the run ends canceled with nothing committed. A run already ended is returned as is.
 */
export async function cancelRun(ctx: OperationContext, runId: string): Promise<RunView> {
  const { db, deps: { temporal } } = ctx;
  const run = await getRun(ctx, runId);
  if (run.status !== 'queued' && run.status !== 'running') return run;
  try {
    await temporal.workflow.getHandle(run.workflow.workflowId).cancel();
  } catch (error) {
    // A workflow that never started (or is gone) cannot end the run itself.
    if (!(error instanceof WorkflowNotFoundError)) throw error;
    await endRun(db, runId, 'canceled', null);
  }
  return getRun(ctx, runId);
}
