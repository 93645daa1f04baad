import type { Db } from '../../db/connection';
import { logger } from '../../core/logger';

/**
 * Records when keys were last used without a database write per request: uses are collected in
 * memory and written in one statement every few seconds (and at shutdown).
 */
export class KeyUsageRecorder {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout;

  constructor(private readonly db: Db, intervalMs = 10_000) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  record(apiKeyId: string): void {
    this.pending.set(apiKeyId, new Date());
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = [...this.pending];
    this.pending = new Map();
    try {
      const values = batch.map(() => '(?::uuid, ?::timestamptz)').join(', ');
      await this.db.raw(
        `UPDATE api_keys SET last_used_at = used.at
           FROM (VALUES ${values}) AS used(id, at)
          WHERE api_keys.id = used.id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < used.at)`,
        batch.flatMap(([id, at]) => [id, at.toISOString()]),
      );
    } catch (error) {
      logger.warn({ err: (error as Error).message, keys: batch.length }, 'could not record API key last use');
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
