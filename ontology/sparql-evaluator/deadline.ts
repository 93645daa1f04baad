import { performance } from 'node:perf_hooks';
import { InputError } from '../../core/errors';

/**
 * The evaluation's time limit, checked cooperatively: evaluation is synchronous, so no timer can
 * interrupt it; the inner loops tick, and every few thousand ticks the clock is read.
 */
export class Deadline {
  private ticks = 0;
  private endsAt: number;

  /** `stopped`: whether the caller has gone (its client closed the connection), read with the clock. */
  constructor(private timeoutMs: number, private stopped?: () => boolean) {
    this.endsAt = performance.now() + timeoutMs;
  }

  /** The limit counted afresh from now: a kept plan (index.ts) is evaluated again. */
  restart(timeoutMs: number, stopped?: () => boolean): void {
    this.timeoutMs = timeoutMs;
    this.stopped = stopped;
    this.endsAt = performance.now() + timeoutMs;
    this.ticks = 0;
  }

  tick(): void {
    if ((++this.ticks & 0x7ff) === 0) this.check();
  }

  check(): void {
    if (performance.now() > this.endsAt) throw timeoutError(this.timeoutMs);
    if (this.stopped?.()) throw callerGoneError();
  }
}

/** The one refusal of a query past its time limit, wherever it ran (the evaluator, a query thread's watchdog, PostgreSQL). */
export function timeoutError(timeoutMs: number): InputError {
  return new InputError('query_timeout', `The query ran longer than ${timeoutMs / 1000} seconds and was stopped; narrow it or add a LIMIT.`);
}

/** A query stopped because its client closed the connection: no one reads the answer (logged as a 499 would be). */
export function callerGoneError(): InputError {
  return new InputError('client_closed_request', 'The client closed the connection before the answer; the query was stopped.');
}
