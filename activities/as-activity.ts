import { ApplicationFailure } from '@temporalio/common';
import { DomainError } from '../core/errors';
import { domainErrorFromDatabase } from '../services/operations/database-errors';
import { errorEvidence } from '../services/pipelines/run-execution';

/** Business errors that a retry can cure: a remote system or Weft's own database being briefly away. */
const RETRYABLE_KINDS = new Set(['upstream_failed', 'unavailable']);
/**
 * A transaction that lost a race (serialization failure, deadlock, lock timeout) succeeds when run
 * again; an attempt that a newer one superseded is not an outcome of the work (its report is
 * normally dropped as stale; taken, the retry answers from the recorded state), so it never ends
 * a workflow.
 */
const RETRYABLE_CODES = new Set(['concurrent_change', 'attempt_superseded']);

/**
 * Runs a service call as an activity: business errors (and a database outage or lost race, mapped
 * as every door maps them) become ApplicationFailures typed by their code, carrying the run's error
 * evidence; rule violations are not retried, remote failures and lost races are.
 */
export async function asActivity<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // Of database errors, only an outage or a lost race becomes a typed failure: any other one is
    // left as it is (and retried), as before the mapping existed.
    const mapped = error instanceof DomainError ? undefined : domainErrorFromDatabase(error);
    const known = error instanceof DomainError ? error : mapped && (mapped.kind === 'unavailable' || RETRYABLE_CODES.has(mapped.code)) ? mapped : undefined;
    if (known) {
      const retryable = RETRYABLE_KINDS.has(known.kind) || RETRYABLE_CODES.has(known.code);
      throw ApplicationFailure.create({ type: known.code, message: known.message, nonRetryable: !retryable, details: [{ ...errorEvidence(known), details: known.details ?? null }] });
    }
    throw error;
  }
}
