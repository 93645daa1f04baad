import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { DomainError } from '../core/errors';
import type { RunErrorEvidence } from '../db/models';
import { claimRunTurn, commitRun, endRun, errorEvidence, ExecutionDependencies, ExtractProgress, extractSource } from '../services/run-execution';
import { recordScheduledRun } from '../services/pipeline-schedules';

/** Business errors that a retry can cure: a remote system or Weft's own database being briefly away. */
const RETRYABLE = new Set(['upstream_failed', 'unavailable']);

/**
 * Runs a service call as an activity: business errors become ApplicationFailures typed by their
 * code, carrying the run's error evidence; rule violations are not retried, remote failures are.
 */
async function asActivity<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DomainError) {
      throw ApplicationFailure.create({ type: error.code, message: error.message, nonRetryable: !RETRYABLE.has(error.kind), details: [errorEvidence(error)] });
    }
    throw error;
  }
}

export function createPipelineRunActivities(deps: ExecutionDependencies) {
  return {
    claimRunTurn: ({ runId }: { runId: string }) => asActivity(() => claimRunTurn(deps.db, runId)),

    /** Reads, transforms and stages one source; heartbeats after every staged page and resumes from the last one. */
    extractSource({ runId, nodeId }: { runId: string; nodeId: string }) {
      const context = Context.current();
      return asActivity(() => extractSource(deps, runId, nodeId, {
        attempt: context.info.attempt,
        resume: context.info.heartbeatDetails as ExtractProgress | undefined,
        checkpoint(progress) {
          context.heartbeat(progress);
          if (context.cancellationSignal.aborted) throw new CancelledFailure('The run was canceled.');
        },
      }));
    },

    commitRun: ({ runId }: { runId: string }) => asActivity(() => commitRun(deps, runId)),

    endRun: ({ runId, status, error }: { runId: string; status: 'failed' | 'canceled'; error: RunErrorEvidence | null }) => asActivity(() => endRun(deps.db, runId, status, error)),

    createScheduledRun: ({ scheduleId }: { scheduleId: string }) => asActivity(() => recordScheduledRun(deps.db, scheduleId)),
  };
}

export type PipelineRunActivities = ReturnType<typeof createPipelineRunActivities>;
