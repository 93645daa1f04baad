import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createDb } from '../../../db/connection';
import { logger } from '../../../core/logger';
import { systemClock } from '../../../core/clock';
import { DefinitionCache } from '../../../services/shared/definition-cache';
import { Metering } from '../../../services/usage/metering';
import { env } from '../../support/environment';
import { newWorkspace } from '../../support/fixtures';
import { until } from '../../support/polling';

// A process stopping writes its leased charges; each write starts its workspace's usage-alert
// check after it. The pool was destroyed right after the charges were written, so the check met a
// destroyed pool: it waited for knex's acquire timeout (a minute, holding the process) and then
// logged "usage alert check failed" (review s29 R9). Metering.close waits for those checks before
// the pool goes.
describe('Stopping a process that holds leased charges', function () {
  this.timeout(60_000);

  it('writes them and finishes their alert checks before the pool is destroyed', async () => {
    const ws = (await newWorkspace()).workspaceId;
    // A budget, so the alert check reads the month's spend and records each threshold it passed,
    // one statement each.
    await env().db('usage_alert_settings').insert({ workspace_id: ws, monthly_budget: '0.0001', thresholds: [50, 80] });
    const db = createDb(process.env.DATABASE_URL!, { max: 4 });
    const definitions = new DefinitionCache(db, systemClock);
    const metering = new Metering(db, systemClock, definitions);
    const failures: unknown[] = [];
    const logError = logger.error.bind(logger);
    logger.error = ((...args: Parameters<typeof logger.error>) => {
      failures.push(args);
      return logError(...args);
    }) as typeof logger.error;
    try {
      let leased = false;
      for (let i = 0; i < 200 && !leased; i += 1) {
        const ref = randomUUID();
        await metering.meter(db, { workspaceId: ws, kind: 'sparql_query', ref, quantities: { query: 1 } });
        leased = await metering.leaseCovers(ws, 'sparql_query', ref);
      }
      assert.ok(leased, 'queries were answered from a lease');
      // The alert checks' statements wait (a lock on their table), so the check that the last
      // charge's write starts is still running when its writing is done; the lock goes once that
      // charge is written and a check waits for it (while close() waits for the checks), or once
      // the pool's destruction has begun (were close() not to wait).
      const locker = await env().db.transaction();
      await locker.raw('LOCK TABLE usage_alert_events IN ACCESS EXCLUSIVE MODE');
      const last = randomUUID();
      let destroying = false;
      const released = until('the last charge written and an alert check waiting for the lock (or the pool being destroyed)', async () => {
        const [{ written, waiting }] = (await env().db.raw(
          "SELECT (SELECT count(*) FROM metered_operations WHERE workspace_id = ? AND operation_ref = ?)::int AS written, (SELECT count(*) FROM pg_locks WHERE relation = 'usage_alert_events'::regclass AND NOT granted)::int AS waiting",
          [ws, last],
        )).rows;
        return written > 0 && (waiting > 0 || destroying);
      }, 30_000).finally(() => locker.commit());
      // One more, still queued when the process stops: metering.close() writes it and checks its alert.
      await metering.meter(db, { workspaceId: ws, kind: 'sparql_query', ref: last, quantities: { query: 1 } });
      await metering.close();
      await definitions.close();
      destroying = true;
      await db.destroy();
      await released;
      // A check still running would now wait on the destroyed pool for knex's acquire timeout (a
      // minute), then log its failure: none is left, so settled() answers before the event loop
      // turns (setImmediate), waiting for nothing.
      const settled = await Promise.race([metering.settled(ws).then(() => true), new Promise<false>((resolve) => setImmediate(() => resolve(false)))]);
      assert.ok(settled, 'an alert check was still running after the pool was destroyed');
    } finally {
      logger.error = logError;
    }
    assert.deepEqual(failures, [], 'nothing was logged as failed');
    const charges = await env().db('metered_operations').where({ workspace_id: ws }).count('* as n');
    assert.ok(Number(charges[0].n) > 0, 'the charges were written');
    const alerts = await env().db('usage_alert_events').where({ workspace_id: ws }).orderBy('threshold');
    assert.deepEqual(alerts.map((alert: { threshold: number }) => alert.threshold), [50, 80], 'the alert checks ran to their end');
  });
});
