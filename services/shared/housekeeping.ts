import type { Db } from '../../db/connection';
import type { ServiceDependencies } from '../operations/context';
import { startQueuedRuns } from '../pipelines/runs';

/** Idempotency records are kept 24 hours; expired ones are swept hourly by each API process. */
export async function cleanExpiredIdempotencyRecords(db: Db): Promise<number> {
  return db('idempotency_records').where('expiresAt', '<', db.fn.now()).delete();
}

/**
 * Runs queued this long without a workflow are started by the sweep: a launch starts its run's
 * workflow right after the commit, so only a process that died in between (or a Temporal outage
 * at that moment) leaves one behind.
 */
export const QUEUED_RUN_SWEEP_AFTER_MS = 60_000;

/**
 * Runs `sweep` every `intervalMs`, one at a time: a tick while the previous sweep is still in flight
 * is skipped. stop() ends the ticks and waits for the sweep in flight.
 */
export function sweepEvery(intervalMs: number, sweep: () => Promise<unknown>): { tick(): Promise<void>; stop(): Promise<void> } {
  let inFlight: Promise<void> | undefined;
  const tick = () => {
    inFlight ??= sweep().then(() => undefined, () => undefined).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  const timer = setInterval(() => void tick(), intervalMs);
  timer.unref();
  return {
    tick,
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}

/** Every minute in each API process: starts the workflow of queued runs that have none (see startQueuedRuns). */
export async function startStrandedRuns(deps: Pick<ServiceDependencies, 'db' | 'temporal' | 'clock'>): Promise<string[]> {
  return (await startQueuedRuns(deps, QUEUED_RUN_SWEEP_AFTER_MS)).started;
}
