import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { env } from '../../support/environment';
import { newWorkspace } from '../../support/fixtures';

// A lease whose every charge is withdrawn (the queries failed) has nothing to write, yet its holder
// is alive and answering from it: it is renewed all the same, so the crash sweep never bills it.
describe('A charge lease in use with nothing to write', function () {
  this.timeout(120_000);

  it('is renewed by its holder and never billed as a crashed holder’s remainder', async () => {
    const workspaceId = (await newWorkspace()).workspaceId;
    const { metering } = env().dependencies();
    let leased = false;
    for (let i = 0; i < 5000 && !leased; i++) {
      const ref = randomUUID();
      await metering.meter(env().db, { workspaceId, kind: 'sparql_query', ref, quantities: { query: 1 } });
      leased = await metering.leaseCovers(workspaceId, 'sparql_query', ref);
    }
    assert.ok(leased, 'a lease was taken');
    await metering.settled(workspaceId);
    const written = await env().db('metered_operations').where({ workspaceId }).count<{ count: string }[]>('* as count');
    // Past the lease's time to live (10 s), every charge answered from the lease and withdrawn, a
    // charge every 250 ms of the held clock, and the holder's sweep (which renews) at each.
    const { clock } = env();
    clock.set(Date.now());
    let answered = 0;
    for (let elapsed = 0; elapsed < 13_000; elapsed += 250) {
      const ref = randomUUID();
      await metering.meter(env().db, { workspaceId, kind: 'sparql_query', ref, quantities: { query: 1 } });
      if (await metering.leaseCovers(workspaceId, 'sparql_query', ref)) answered += 1;
      await metering.withdraw(env().db, workspaceId, 'sparql_query', ref);
      clock.advance(250);
      await metering.leases.sweep();
    }
    assert.ok(answered > 10, `charges were answered from the lease (${answered})`);
    await metering.billExpiredChargeLeases();
    const remainders = await env().db('metered_operations').where({ workspaceId }).where('operationRef', 'like', 'lease:%');
    assert.deepEqual(remainders, [], 'a lease in use is not billed as a remainder');
    const after = await env().db('metered_operations').where({ workspaceId }).count<{ count: string }[]>('* as count');
    assert.equal(after[0].count, written[0].count, 'withdrawn charges are never written');
  });
});
