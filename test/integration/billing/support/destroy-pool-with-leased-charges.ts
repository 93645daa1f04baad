import { randomUUID } from 'node:crypto';
import { createDb } from '../../../../db/connection';
import { DefinitionCache } from '../../../../services/shared/definition-cache';
import { systemClock } from '../../../../core/clock';
import { Metering } from '../../../../services/usage/metering';

// A script that meters charges through a pool of its own until one is answered from a charge
// lease, then destroys the pool without closing its metering while that charge is still queued
// (charge-lease-failures.test.ts). It must still exit: the queued charge's flush finds the pool
// gone and stops trying. Prints the leased charge's ref as one JSON line.

async function main(): Promise<void> {
  const [workspaceId] = process.argv.slice(2);
  const db = createDb(process.env.DATABASE_URL!, { max: 2 });
  const definitions = new DefinitionCache(db, systemClock);
  const metering = new Metering(db, systemClock, definitions);
  let leasedRef: string | undefined;
  for (let i = 0; i < 5000 && !leasedRef; i += 1) {
    const ref = randomUUID();
    await metering.meter(db, { workspaceId, kind: 'sparql_query', ref, quantities: { query: 1 } });
    if (await metering.leaseCovers(workspaceId, 'sparql_query', ref)) leasedRef = ref;
  }
  if (!leasedRef) throw new Error('no charge was answered from a lease');
  // Still queued (its flush is due in 200 ms): the pool goes first.
  await Promise.all([db.destroy(), definitions.close()]);
  console.log(JSON.stringify({ leasedRef }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
