import { assertCredit } from '../usage/credit';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { DomainError, InputError, NotFoundError, PermissionError } from '../../core/errors';
import { logger } from '../../core/logger';
import { temporalSettings } from '../../core/temporal-config';
import type { Executor } from '../../db/connection';
import { Pipeline, PipelineRun, PipelineSchedule, PipelineVersion, Project } from '../../db/models';
import { runSearchAttributes, ScheduledLaunchInput, scheduleWorkflowIdPrefix } from '../../workflows/names';
import { actAs, isRefusal } from '../operations/act-as';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { defineOperation } from '../operations/operation';
import { uuid } from '../../schemas/common';
import { executePipelineOperation } from './operations';
import { errorEvidence } from './run-execution';
import { requirePipeline } from './pipelines';
import { recordRun, runOfVersion } from './runs';
import { presentSchedule } from './presenters';

/**
 * Pipeline schedules on Temporal Schedules. There is no public route (SPEC 4.3): these are the
 * service functions the MCP pipeline_schedule_* tools call. Each schedule starts a small launch
 * workflow that records a run (trigger schedule, acting as the key that made the schedule) and
 * starts the run workflow, which queues behind any open run of the pipeline.
 */
export interface ScheduleSpecInput {
  /** Every N seconds (at least 60). */
  intervalSeconds?: number;
  /** Standard five-field cron, in UTC. */
  cron?: string;
  paused?: boolean;
}

function checkSpec(input: ScheduleSpecInput): void {
  const given = [input.intervalSeconds !== undefined, input.cron !== undefined].filter(Boolean).length;
  if (given !== 1) throw new InputError('invalid_schedule', 'Give exactly one of intervalSeconds and cron.');
  if (input.intervalSeconds !== undefined && (!Number.isInteger(input.intervalSeconds) || input.intervalSeconds < 60 || input.intervalSeconds > 366 * 86400)) {
    throw new InputError('invalid_schedule', 'intervalSeconds must be a whole number from 60 to 31,622,400.', [{ path: '/intervalSeconds', message: 'must be 60 to 31622400' }]);
  }
  if (input.cron !== undefined && !/^\s*(\S+\s+){4}\S+\s*$/.test(input.cron)) {
    throw new InputError('invalid_schedule', 'cron must have five fields (minute hour day-of-month month day-of-week).', [{ path: '/cron', message: 'must have five fields' }]);
  }
}

export async function createPipelineSchedule(ctx: OperationContext, pipelineId: string, input: ScheduleSpecInput) {
  const { db, deps: { temporal }, principal, project } = ctx;
  checkSpec(input);
  const pipeline = await requirePipeline(db, project, pipelineId);
  const schedule = await PipelineSchedule.query(db).insertAndFetch({
    workspaceId: pipeline.workspaceId,
    projectId: pipeline.projectId,
    pipelineId: pipeline.id,
    spec: { ...input },
    temporalScheduleId: 'pending',
    createdByMemberId: principal.memberId,
    // A member signed in to the console has no key: the schedule launches as the member.
    ...(principal.signedIn ? { actorKind: 'member' as const, createdByApiKeyId: null } : { actorKind: 'key' as const, createdByApiKeyId: principal.apiKeyId }),
  });
  const temporalScheduleId = scheduleWorkflowIdPrefix(schedule.id);
  // The schedule and the launches it starts carry the run search attributes, so the Web UI finds them by workspace, project and pipeline.
  const typedSearchAttributes = runSearchAttributes({ workspaceId: pipeline.workspaceId, projectId: pipeline.projectId, pipelineId: pipeline.id });
  await temporal.schedule.create({
    scheduleId: temporalScheduleId,
    typedSearchAttributes,
    spec: input.cron !== undefined ? { cronExpressions: [input.cron] } : { intervals: [{ every: `${input.intervalSeconds}s` }] },
    action: {
      type: 'startWorkflow',
      // By name: services never import workflow code (workflows import activity types, which import services).
      workflowType: 'scheduledLaunchWorkflow',
      workflowId: temporalScheduleId,
      taskQueue: temporalSettings().taskQueues.main,
      args: [{ scheduleId: schedule.id } satisfies ScheduledLaunchInput],
      typedSearchAttributes,
    },
    // Launches only record runs; the runs themselves queue per pipeline.
    policies: { overlap: ScheduleOverlapPolicy.ALLOW_ALL },
    state: { paused: input.paused ?? false },
  });
  return presentSchedule(await schedule.$query(db).patchAndFetch({ temporalScheduleId }));
}

export async function listPipelineSchedules(ctx: OperationContext, pipelineId: string) {
  const { db, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId);
  return (await PipelineSchedule.query(db).where({ pipelineId: pipeline.id }).orderBy('createdAt')).map(presentSchedule);
}

async function requireSchedule(db: Executor, project: Project, pipelineId: string, scheduleId: string, forUpdate = false): Promise<PipelineSchedule> {
  const pipeline = await requirePipeline(db, project, pipelineId);
  const query = PipelineSchedule.query(db).findOne({ id: scheduleId, pipelineId: pipeline.id });
  const schedule = await (forUpdate ? query.forUpdate() : query);
  if (!schedule) throw new NotFoundError('pipeline_schedule', 'No schedule with this id on this pipeline.');
  return schedule;
}

/** Deletes a schedule (the MCP tool asks for confirm: true before calling this). Runs it launched stay. */
export async function deletePipelineSchedule(ctx: OperationContext, pipelineId: string, scheduleId: string): Promise<void> {
  const { db, deps: { temporal }, project } = ctx;
  const schedule = await requireSchedule(db, project, pipelineId, scheduleId);
  await temporal.schedule.getHandle(schedule.temporalScheduleId).delete();
  await schedule.$query(db).delete();
}

/**
 * Pauses or resumes a schedule: its Temporal Schedule launches nothing while paused. The row (its
 * spec's paused, locked) changes in the operation's transaction, which a refused Temporal call undoes.
 */
export async function setPipelineSchedulePaused(ctx: OperationContext, pipelineId: string, scheduleId: string, paused: boolean) {
  const { db, deps: { temporal }, project } = ctx;
  const schedule = await requireSchedule(db, project, pipelineId, scheduleId, true);
  const updated = await schedule.$query(db).patchAndFetch({ spec: { ...schedule.spec, paused } });
  const handle = temporal.schedule.getHandle(schedule.temporalScheduleId);
  await (paused ? handle.pause('Paused in Weft') : handle.unpause('Resumed in Weft'));
  return presentSchedule(updated);
}

/** Starts a scheduled launch now, outside the schedule's times (operators and tests). */
export async function triggerPipelineSchedule(ctx: OperationContext, pipelineId: string, scheduleId: string): Promise<void> {
  const { db, deps: { temporal }, project } = ctx;
  const schedule = await requireSchedule(db, project, pipelineId, scheduleId);
  await temporal.schedule.getHandle(schedule.temporalScheduleId).trigger();
}

/**
 * A scheduled launch, as an operation: the launch operation's access, checked against the key that
 * made the schedule as it is now (actAs), then the data guard over the pipeline's sources and
 * destinations as that key (recordRun).
 */
export const launchScheduledRunOperation = defineOperation({
  name: 'launchScheduledRun',
  summary: 'Record a queued run of the pipeline’s active version for its schedule, as the key that made the schedule.',
  access: executePipelineOperation.access,
  effect: 'write',
  output: {
    200: {
      description: 'The queued run’s record (db/models/pipeline-run.ts), whose workflow the launch then starts; null when the schedule or its pipeline is gone',
      schema: { type: ['object', 'null'], required: ['id', 'workflowId', 'workspaceId', 'projectId', 'pipelineId'], properties: { id: uuid, workflowId: { type: 'string' }, workspaceId: uuid, projectId: uuid, pipelineId: uuid, status: { type: 'string', enum: ['queued'] } } },
    },
  },
  async run(ctx, { scheduleId }: { projectId: string; scheduleId: string }): Promise<PipelineRun | null> {
    const { db, project } = ctx;
    const schedule = await PipelineSchedule.query(db).findOne({ id: scheduleId, projectId: project.id });
    const pipeline = schedule && (await Pipeline.query(db).findOne({ id: schedule.pipelineId, projectId: project.id }));
    if (!schedule || !pipeline) return null;
    await assertCredit(ctx.deps, db, project.workspaceId, 'pipeline_run');
    return recordRun(ctx, pipeline, { trigger: 'schedule', actorMemberId: schedule.createdByMemberId, scheduleId: schedule.id });
  },
});

/** Recorded for a launch its key may no longer make, so the schedule's owner sees why nothing ran. Nothing runs. */
async function recordRefusedRun(db: Executor, schedule: PipelineSchedule, pipeline: Pipeline, refusal: DomainError): Promise<PipelineRun | undefined> {
  const version = pipeline.activeVersionId ? await PipelineVersion.query(db).findById(pipeline.activeVersionId) : undefined;
  if (!version) return undefined;
  return PipelineRun.query(db).insertAndFetch({
    ...runOfVersion(pipeline, version),
    trigger: 'schedule',
    scheduleId: schedule.id,
    actorMemberId: schedule.createdByMemberId,
    actorKind: schedule.actorKind,
    apiKeyId: schedule.createdByApiKeyId,
    status: 'failed',
    finishedAt: new Date(),
    error: errorEvidence(refusal),
  });
}

/**
 * The launch activity of a scheduled run: records a queued run of the active version, acting as the
 * schedule's key (launchScheduledRunOperation through actAs). Returns null, launching nothing,
 * when the schedule or pipeline is gone, and when the key may no longer launch it (revoked,
 * expired, narrowed, its member gone, a grant withdrawn): that refusal is recorded as a failed run
 * with its reason. A schedule made before schedules had keys has no key to act as, and is refused
 * the same way. Anything else (a database that is briefly away) is thrown, for the activity to retry.
 */
export async function recordScheduledRun(deps: ServiceDependencies, scheduleId: string): Promise<{ runId: string; workspaceId: string; projectId: string; pipelineId: string } | null> {
  const { db } = deps;
  const schedule = await PipelineSchedule.query(db).findById(scheduleId);
  const pipeline = schedule && (await Pipeline.query(db).findById(schedule.pipelineId));
  if (!schedule || !pipeline) {
    logger.warn({ scheduleId }, 'scheduled launch skipped: schedule or pipeline is gone');
    return null;
  }
  let refusal: DomainError | undefined;
  let run: PipelineRun | null = null;
  try {
    if (schedule.actorKind === 'key' && !schedule.createdByApiKeyId) {
      throw new PermissionError('schedule_without_key', 'This schedule predates per-key schedules, so it has no API key to launch as and launches nothing: recreate it (pipeline_schedule_create) with the key its runs should act as, and delete this one.');
    }
    run = await actAs(deps, { workspaceId: schedule.workspaceId, memberId: schedule.createdByMemberId, apiKeyId: schedule.createdByApiKeyId }, `schedule:${scheduleId}`, launchScheduledRunOperation, { projectId: schedule.projectId, scheduleId });
  } catch (error) {
    if (!isRefusal(error)) throw error;
    refusal = error;
  }
  if (refusal) {
    const refused = await recordRefusedRun(db, schedule, pipeline, refusal);
    logger.warn({ scheduleId, runId: refused?.id, code: refusal.code }, 'scheduled launch refused: its key may no longer launch this pipeline');
    return null;
  }
  if (!run) return null;
  return { runId: run.id, workspaceId: run.workspaceId, projectId: run.projectId, pipelineId: run.pipelineId };
}
