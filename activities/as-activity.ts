import { ApplicationFailure } from '@temporalio/common';
import { DomainError } from '../core/errors';
import { errorEvidence } from '../services/pipelines/run-execution';

/** Business errors that a retry can cure: a remote system or Weft's own database being briefly away. */
const RETRYABLE = new Set(['upstream_failed', 'unavailable']);

/**
 * Runs a service call as an activity: business errors become ApplicationFailures typed by their
 * code, carrying the run's error evidence; rule violations are not retried, remote failures are.
 */
export async function asActivity<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DomainError) {
      throw ApplicationFailure.create({ type: error.code, message: error.message, nonRetryable: !RETRYABLE.has(error.kind), details: [{ ...errorEvidence(error), details: error.details ?? null }] });
    }
    throw error;
  }
}
