import os from 'node:os';
import type { Db } from '../db/connection';

/** Matches the Temporal SDK's default worker identity, so the Web UI and this result agree. */
export const workerIdentity = (): string => `${process.pid}@${os.hostname()}`;

export interface SystemCheckResult {
  databaseTime: string;
  workerIdentity: string;
}

export function createSystemActivities({ db }: { db: Db }) {
  return {
    async probeDatabase({ holdMs = 0 }: { holdMs?: number } = {}): Promise<SystemCheckResult> {
      // pg_sleep holds a real database session, as a long activity would.
      const result = await db.raw<{ rows: Array<{ now: Date }> }>('SELECT now() AS now, pg_sleep(?)', [holdMs / 1000]);
      return { databaseTime: result.rows[0].now.toISOString(), workerIdentity: workerIdentity() };
    },
  };
}

export type SystemActivities = ReturnType<typeof createSystemActivities>;
