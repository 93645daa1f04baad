import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import Decimal from 'decimal.js';
import { createDb } from '../../../db/connection';
import { assertCredit } from '../../../services/usage/credit';
import { DefinitionCache } from '../../../services/shared/definition-cache';
import { Metering } from '../../../services/usage/metering';
import { env } from '../../support/environment';
import { newWorkspace } from '../../support/fixtures';

// A credit-limited free workspace's reads never pause, but their charge lease counts as spent in
// every credit check (assertCredit, weft_take_charge_lease): an idle read lease kept the default
// WEFT_LEASE_IDLE_MS (10 s) paused the workspace's paid work (402) that long after its last read
// (review s30 R2). A lease of a workspace whose plan pauses paid work goes back within 1 s.
describe('An idle records_read lease of a credit-limited workspace', function () {
  this.timeout(60_000);
  it('is handed back within 1 s of idleness, or does not pause paid work while it is held', async () => {
    const ws = (await newWorkspace()).workspaceId;
    await env().db('workspaces').where({ id: ws }).update({ plan: 'free', credit_limit: 'plan' });
    // 4.97 of the free plan's 5.00 spent this month.
    await env().db('metered_operations').insert({ workspace_id: ws, kind: 'sparql_query', operation_ref: randomUUID(), quantities: { query: 1 }, amount: '4.97' });
    const clock = { now: Date.now() };
    const db = createDb(process.env.DATABASE_URL!, { max: 4 });
    const holderClock = { now: () => clock.now, databaseTime: () => null };
    const definitions = new DefinitionCache(db, holderClock);
    const metering = new Metering(db, holderClock, definitions);
    try {
      let leased = false;
      for (let i = 0; i < 200 && !leased; i += 1) {
        const ref = randomUUID();
        await metering.meter(db, { workspaceId: ws, kind: 'records_read', ref, quantities: { request: 1, record: 500 } });
        leased = await metering.leaseCovers(ws, 'records_read', ref);
      }
      assert.ok(leased, 'reads were answered from a lease');
      await metering.settled(ws); // the queued reads are written
      const direct = new Decimal((await env().db('metered_operations').where({ workspace_id: ws }).sum('amount as s'))[0].s);
      assert.ok(direct.lt('5.00'), `written spend ${direct} is under the credit`);

      // The reads stop. Two seconds later (past the 1 s meant for leases that count as spent), at
      // the holder's next sweep (its timer's, every 500 ms of real time, or this one):
      clock.now += 2000;
      await metering.leases.sweep();
      const held: Array<{ kind: string; remaining: string }> = await env().db('charge_leases').where({ workspace_id: ws });
      const paused = await assertCredit({ metering, clock: holderClock, definitions }, db, ws, 'sparql_query').then(() => false, (error: { code?: string }) => error.code === 'usage_limit_reached');
      assert.ok(
        held.length === 0 || !paused,
        `an idle read lease (${held.map((l) => `${l.kind} ${l.remaining}`).join(', ')}) is still held after 2 s and pauses paid work (402) although written spend is ${direct.toFixed(4)} of 5.00`,
      );
    } finally {
      await metering.close();
      await definitions.close();
      await db.destroy();
    }
  });
});
