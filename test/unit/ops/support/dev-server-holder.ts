/**
 * A Weft process of some clone that uses the local Temporal dev server, as `npm start` or `npm test`
 * does: starts or joins it through the leases, prints `ready <dev server pid>`, and on SIGTERM
 * gives its lease back (stopping the server if it was the last) and prints `released`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startShared } from '../../../../scripts/infra/leases';
import { startLocalTemporal, temporalLease } from '../../../../scripts/infra/temporal-server';

async function main(): Promise<void> {
  const { server, release } = await startShared(temporalLease(), startLocalTemporal, (started) => started.stop());
  const pid = readFileSync(path.join(temporalLease(), 'dev-server.pid'), 'utf8').trim();
  process.stdout.write(`ready ${pid} ${server.startedHere ? 'started' : 'reused'}\n`);
  // Stays, as a running API or worker would, until told to go.
  const alive = setInterval(() => undefined, 60_000);
  process.once('SIGTERM', () => {
    clearInterval(alive);
    void release().then(() => {
      process.stdout.write('released\n');
      process.exit(0);
    });
  });
}

main().catch((error: Error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
