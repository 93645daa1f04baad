import type { Client } from '@temporalio/client';
import { assertCredit } from '../usage/usage';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { DomainError, InputError, NotFoundError } from '../../core/errors';
import { logger } from '../../core/logger';
import { temporalSettings } from '../../core/temporal-config';
import type { Executor } from '../../db/connection';
import { Member, Pipeline, PipelineRun, PipelineSchedule, Project } from '../../db/models';
import { runSearchAttributes, ScheduledLaunchInput, scheduleWorkflowIdPrefix } from '../../workflows/names';
import { isPublic } from '../operations/operation';
import { authorize, authorizeProject, Principal } from '../tenancy/access';
import { principalOfKey } from '../tenancy/api-keys';
import { executePipelineOperation } from './operations';
import { endRun, errorEvidence } from './run-execution';
import { requirePipeline } from './pipelines';
import { recordRun } from './runs';

/**
 * Pipeline schedules on Temporal Schedules. There is no public route (SPEC 4.3): these are the
 * service functions the MCP pipeline_schedule_* tools call. Each schedule starts a small launch
 * workflow that records a run (trigger schedule, actor: the schedule's creator) and starts the run
 * workflow, which queues behind any open run of the pipeline.
 */
export interface ScheduleSpecInput {
  /** Every N seconds (at least 60). */
  intervalSeconds?: number;
  /** Standard five-field cron, in UTC. */
  cron?: string;
  paused?: boolean;
}

const presentSchedule = (s: PipelineSchedule) => ({
  id: s.id,
  pipelineId: s.pipelineId,
  projectId: s.projectId,
  spec: s.spec,
  temporalScheduleId: s.temporalScheduleId,
  createdByMemberId: s.createdByMemberId,
  createdAt: s.createdAt.toISOString(),
});

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

export async function createPipelineSchedule(db: Executor, temporal: Client, principal: Principal, project: Project, pipelineId: string, input: ScheduleSpecInput) {
  checkSpec(input);
  const pipeline = await requirePipeline(db, project, pipelineId);
  const schedule = await PipelineSchedule.query(db).insertAndFetch({
    workspaceId: pipeline.workspaceId,
    projectId: pipeline.projectId,
    pipelineId: pipeline.id,
    spec: { ...input },
    temporalScheduleId: 'pending',
    createdByMemberId: principal.memberId,
    createdByApiKeyId: principal.apiKeyId,
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

export async function listPipelineSchedules(db: Executor, project: Project, pipelineId: string) {
  const pipeline = await requirePipeline(db, project, pipelineId);
  return (await PipelineSchedule.query(db).where({ pipelineId: pipeline.id }).orderBy('createdAt')).map(presentSchedule);
}

async function requireSchedule(db: Executor, project: Project, pipelineId: string, scheduleId: string): Promise<PipelineSchedule> {
  const pipeline = await requirePipeline(db, project, pipelineId);
  const schedule = await PipelineSchedule.query(db).findOne({ id: scheduleId, pipelineId: pipeline.id });
  if (!schedule) throw new NotFoundError('pipeline_schedule', 'No schedule with this id on this pipeline.');
  return schedule;
}

/** Deletes a schedule (the MCP tool asks for confirm: true before calling this). Runs it launched stay. */
export async function deletePipelineSchedule(db: Executor, temporal: Client, project: Project, pipelineId: string, scheduleId: string): Promise<void> {
  const schedule = await requireSchedule(db, project, pipelineId, scheduleId);
  await temporal.schedule.getHandle(schedule.temporalScheduleId).delete();
  await schedule.$query(db).delete();
}

/** Starts a scheduled launch now, outside the schedule's times (operators and tests). */
export async function triggerPipelineSchedule(db: Executor, temporal: Client, project: Project, pipelineId: string, scheduleId: string): Promise<void> {
  const schedule = await requireSchedule(db, project, pipelineId, scheduleId);
  await temporal.schedule.getHandle(schedule.temporalScheduleId).trigger();
}

/**
 * The launch activity of a scheduled run: records a queued run of the active version. Returns null
 * (and launches nothing) when the schedule or pipeline is gone or its creator left the workspace:
 * a scheduled run needs an accountable actor like any other.
 */
export async function recordScheduledRun(db: Executor, scheduleId: string): Promise<{ runId: string; workspaceId: string; projectId: string; pipelineId: string } | null> {
  const schedule = await PipelineSchedule.query(db).findById(scheduleId);
  const pipeline = schedule && (await Pipeline.query(db).findById(schedule.pipelineId));
  const actor = schedule && (await Member.query(db).findOne({ id: schedule.createdByMemberId, workspaceId: schedule.workspaceId }));
  if (!schedule || !pipeline || !actor || actor.removedAt) {
    logger.warn({ scheduleId }, 'scheduled launch skipped: schedule, pipeline or accountable member is gone');
    return null;
  }
  await assertCredit(db, schedule.workspaceId, 'pipeline_run');
  if (!schedule.createdByApiKeyId) {
    const run = await recordRun(db, pipeline, { trigger: 'schedule', actorMemberId: actor.id, apiKeyId: null, scheduleId: schedule.id });
    return { runId: run.id, workspaceId: run.workspaceId, projectId: run.projectId, pipelineId: run.pipelineId };
  }
  // The launch acts as the schedule's key as it is now, with the launch operation's access.
  let refusal: DomainError | undefined;
  let run: PipelineRun;
  const record = (launcher?: Principal) => recordRun(db, pipeline, { trigger: 'schedule', actorMemberId: actor.id, apiKeyId: schedule.createdByApiKeyId, scheduleId: schedule.id }, launcher);
  try {
    const launcher = await principalOfKey(db, schedule.workspaceId, schedule.createdByApiKeyId);
    if (isPublic(executePipelineOperation.access)) throw new Error('launching a pipeline is never public');
    authorize(launcher, executePipelineOperation.access);
    authorizeProject(launcher, schedule.projectId, { named: false });
    run = await record(launcher);
  } catch (error) {
    if (!(error instanceof DomainError) || (error.kind !== 'forbidden' && error.kind !== 'unauthenticated')) throw error;
    refusal = error;
    run = await record();
  }
  if (refusal) {
    // Recorded as a failed run, with the reason, so the schedule's owner sees why nothing ran.
    await endRun(db, run.id, 'failed', errorEvidence(refusal));
    logger.warn({ scheduleId, runId: run.id, code: refusal.code }, 'scheduled launch refused: its key may no longer launch this pipeline');
    return null;
  }
  return { runId: run.id, workspaceId: run.workspaceId, projectId: run.projectId, pipelineId: run.pipelineId };
}
