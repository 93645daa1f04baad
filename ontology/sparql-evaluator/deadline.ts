import { performance } from 'node:perf_hooks';
import { InputError } from '../../core/errors';

/**
 * The evaluation's time limit, checked cooperatively: evaluation is synchronous, so no timer can
 * interrupt it; the inner loops tick, and every few thousand ticks the clock is read.
 */
export class Deadline {
  private ticks = 0;
  private endsAt: number;

  constructor(private timeoutMs: number) {
    this.endsAt = performance.now() + timeoutMs;
  }

  /** The limit counted afresh from now: a kept plan (index.ts) is evaluated again. */
  restart(timeoutMs: number): void {
    this.timeoutMs = timeoutMs;
    this.endsAt = performance.now() + timeoutMs;
    this.ticks = 0;
  }

  tick(): void {
    if ((++this.ticks & 0x7ff) === 0) this.check();
  }

  check(): void {
    if (performance.now() > this.endsAt) throw timeoutError(this.timeoutMs);
  }
}

/** The same refusal as the Comunica path gives (sparql-engine.ts). */
export function timeoutError(timeoutMs: number): InputError {
  return new InputError('query_timeout', `The query ran longer than ${timeoutMs / 1000} seconds and was stopped; narrow it or add a LIMIT.`);
}
