import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  startChild,
} from '@temporalio/workflow';
import type { PipelineRunActivities } from '../activities/pipeline-runs';
import type { RunErrorEvidence } from '../db/models';
import { PipelineRunInput, runSearchAttributes, runTurnSignal, runWorkflowId, ScheduledLaunchInput } from './names';

const RETRY = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 } as const;

const { claimRunTurn, endRun } = proxyActivities<PipelineRunActivities>({ startToCloseTimeout: '10 minutes', retry: RETRY });

/** The commit activity's heartbeat timeout unless the run's input sets one (WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS). */
const COMMIT_HEARTBEAT_TIMEOUT_MS = 30_000;

// The commit heartbeats while its transaction runs: a worker killed mid-commit is retried within
// the heartbeat timeout. (Activity options are not part of replay, so running workflows take this too.)
const commitActivity = (heartbeatTimeoutMs = COMMIT_HEARTBEAT_TIMEOUT_MS) => proxyActivities<PipelineRunActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: heartbeatTimeoutMs,
  retry: RETRY,
}).commitRun;

/**
 * The turn claim is one short transaction: run as a local activity (in the worker that runs the
 * workflow task, recorded as a marker), it saves an activity task's round trip through the server
 * and a workflow task before extraction can start. The launch starts the workflow after the run
 * row commits, so the claim finds it at once; its retries span minutes, as the activity's do, for
 * a database that is briefly away. (Retry options are not part of replay.)
 */
const { claimRunTurn: claimRunTurnLocally } = proxyLocalActivities<PipelineRunActivities>({
  startToCloseTimeout: '1 minute',
  retry: RETRY,
});

/** Runs recorded before the local claim keep claiming their turn with the activity (see claimRunTurnLocally). */
const CLAIM_LOCALLY = 'claim-run-turn-locally';

/** The extract activity's heartbeat timeout unless the run's input sets one (WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS). */
const EXTRACT_HEARTBEAT_TIMEOUT_MS = 15_000;

/**
 * Extraction heartbeats every page and while a remote page is awaited: a dead worker is noticed
 * within the heartbeat timeout and the retry resumes from the last heartbeated page; a slow but
 * healthy page keeps it alive. Remote failures are retried a few times, then the run fails.
 */
const extractActivity = (heartbeatTimeoutMs = EXTRACT_HEARTBEAT_TIMEOUT_MS) => proxyActivities<PipelineRunActivities>({
  startToCloseTimeout: '12 hours',
  heartbeatTimeout: heartbeatTimeoutMs,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 4 },
}).extractSource;

const { createScheduledRun } = proxyActivities<PipelineRunActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 5 },
});

/** The evidence an activity attached to its failure (see activities/pipeline-runs.ts), or a generic one. */
function evidenceOf(error: unknown): RunErrorEvidence {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof ApplicationFailure) {
    const attached = cause.details?.[0] as RunErrorEvidence | undefined;
    if (attached && typeof attached.message === 'string') return attached;
    return { nodeId: null, code: cause.type ?? 'failed', message: cause.message, remoteStatus: null };
  }
  return { nodeId: null, code: 'internal_error', message: error instanceof Error ? error.message : 'The run failed.', remoteStatus: null };
}

/**
 * One pipeline run: wait for the pipeline's turn, extract every source (each activity reads,
 * transforms and stages page by page), then commit once. Records never pass through here; the
 * run's state lives in PostgreSQL, written by the activities.
 */
export async function pipelineRunWorkflow({ runId, extractHeartbeatTimeoutMs, commitHeartbeatTimeoutMs }: PipelineRunInput): Promise<string> {
  const extractSource = extractActivity(extractHeartbeatTimeoutMs);
  const commitRun = commitActivity(commitHeartbeatTimeoutMs);
  let turnSignaled = false;
  setHandler(runTurnSignal, () => {
    turnSignaled = true;
  });
  let nextWorkflowId: string | null = null;
  try {
    let sourceNodeIds: string[];
    for (;;) {
      const claim = patched(CLAIM_LOCALLY) ? await claimRunTurnLocally({ runId }) : await claimRunTurn({ runId });
      if (claim.state === 'granted') {
        sourceNodeIds = claim.sourceNodeIds;
        break;
      }
      if (claim.state === 'ended') return claim.status;
      // Woken by the run ahead when it ends; the timeout covers a signal that never comes.
      await condition(() => turnSignaled, '30 seconds');
      turnSignaled = false;
    }
    await Promise.all(sourceNodeIds.map((nodeId) => extractSource({ runId, nodeId })));
    const end = await commitRun({ runId });
    nextWorkflowId = end.nextWorkflowId;
    return end.status;
  } catch (error) {
    const canceled = isCancellation(error);
    const evidence = canceled ? null : evidenceOf(error);
    const end = await CancellationScope.nonCancellable(() => endRun({ runId, status: canceled ? 'canceled' : 'failed', error: evidence }));
    nextWorkflowId = end.nextWorkflowId;
    if (canceled) throw error;
    log.warn('pipeline run failed', { runId, code: evidence!.code });
    // The workflow fails too, so the Web UI shows the run red with its reason.
    throw ApplicationFailure.create({ type: evidence!.code, message: evidence!.message, nonRetryable: true, details: [evidence] });
  } finally {
    if (nextWorkflowId) {
      const next = nextWorkflowId;
      await CancellationScope.nonCancellable(() => getExternalWorkflowHandle(next).signal(runTurnSignal)).catch(() => undefined);
    }
  }
}

/** Started by a Temporal Schedule: records a run (trigger schedule) and starts its run workflow. */
export async function scheduledLaunchWorkflow({ scheduleId }: ScheduledLaunchInput): Promise<string | null> {
  const launch = await createScheduledRun({ scheduleId });
  if (!launch) return null;
  await startChild(pipelineRunWorkflow, {
    workflowId: runWorkflowId(launch.runId),
    // Launches recorded before the activity returned the input carry none.
    args: [launch.input ?? { runId: launch.runId }],
    parentClosePolicy: ParentClosePolicy.ABANDON,
    typedSearchAttributes: runSearchAttributes(launch),
  });
  return launch.runId;
}
