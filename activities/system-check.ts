import os from 'node:os';
import type { Db } from '../db/connection';

/** Matches the Temporal SDK's default worker identity, so the Web UI and this result agree. */
export const workerIdentity = (): string => `${process.pid}@${os.hostname()}`;

export function createSystemActivities({ db }: { db: Db }) {
  return {
    async probeDatabase(): Promise<{ databaseTime: string; workerIdentity: string }> {
      const result = await db.raw<{ rows: Array<{ now: Date }> }>('SELECT now() AS now');
      return { databaseTime: result.rows[0].now.toISOString(), workerIdentity: workerIdentity() };
    },
  };
}

export type SystemActivities = ReturnType<typeof createSystemActivities>;
