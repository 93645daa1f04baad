import { Context } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { asActivity } from './as-activity';
import type { RunErrorEvidence } from '../db/models';
import type { ServiceDependencies } from '../services/operations/context';
import { claimRunTurn, endRun, ExtractProgress } from '../services/pipelines/run-execution';
import { recordScheduledRun } from '../services/pipelines/pipeline-schedules';
import { commitRunAsItsLauncher, extractAsItsLauncher } from '../services/pipelines/run-commit';
import { runWorkflowInput } from '../services/pipelines/runs';

export function createPipelineRunActivities(deps: ServiceDependencies) {
  return {
    claimRunTurn: ({ runId }: { runId: string }) => asActivity(() => claimRunTurn(deps.db, runId)),

    /**
     * Reads, transforms and stages one source as the run's key; heartbeats after every staged page
     * (and resumes from the last one) and, through the capability's heartbeat, while a slow remote
     * page is awaited. Canceling the activity aborts the remote request in flight.
     */
    extractSource({ runId, nodeId }: { runId: string; nodeId: string }) {
      const context = Context.current();
      let last = context.info.heartbeatDetails as ExtractProgress | undefined;
      return asActivity(() => extractAsItsLauncher(deps, runId, nodeId, {
        attempt: context.info.attempt,
        resume: last,
        checkpoint(progress) {
          last = progress;
          context.heartbeat(progress);
          if (context.cancellationSignal.aborted) throw new CancelledFailure('The run was canceled.');
        },
        // Beats with the last staged page's progress: a retry still resumes after it. (The SDK sends at most one per throttle interval.)
        heartbeat: () => context.heartbeat(last),
        signal: context.cancellationSignal,
      }));
    },

    /**
     * One transaction, which may take minutes on a large run: it heartbeats while it works, so a
     * dead worker is noticed within the heartbeat timeout instead of the start-to-close timeout.
     * A killed attempt's transaction rolls back, and the retry commits (or finds it committed).
     */
    commitRun({ runId }: { runId: string }) {
      const context = Context.current();
      context.heartbeat();
      // A few beats within the heartbeat timeout, whatever the run's input set it to.
      const beat = setInterval(() => context.heartbeat(), Math.min(5_000, (context.info.heartbeatTimeoutMs ?? 30_000) / 3));
      return asActivity(() => commitRunAsItsLauncher(deps, runId)).finally(() => clearInterval(beat));
    },

    endRun: ({ runId, status, error }: { runId: string; status: 'failed' | 'canceled'; error: RunErrorEvidence | null }) => asActivity(() => endRun(deps.db, runId, status, error)),

    /** Records a scheduled run; `input` is its workflow's input, with the settings a launch reads (see runWorkflowInput). */
    createScheduledRun: ({ scheduleId }: { scheduleId: string }) => asActivity(async () => {
      const launch = await recordScheduledRun(deps, scheduleId);
      return launch && { ...launch, input: runWorkflowInput(launch.runId) };
    }),
  };
}

export type PipelineRunActivities = ReturnType<typeof createPipelineRunActivities>;
