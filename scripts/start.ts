/**
 * `npm start` (api + worker), `npm run api`, `npm run worker`: they build first (scripts/build.ts:
 * the service into dist/, the console's bundle) and run this module built. Starts PostgreSQL and
 * the Temporal dev server when DATABASE_URL / TEMPORAL_ADDRESS are not set, migrates its local
 * database (an external DATABASE_URL must be current: `npm run migrate`), serves, and on Ctrl-C or
 * SIGTERM drains and stops everything it started.
 */
import { prepareInfrastructure } from './infra/environment';
import { say } from './infra/process';
import { RunningService, startApi, startWorkerProcess } from './runtime';

type Role = 'all' | 'api' | 'worker';

async function main(): Promise<void> {
  const role = (process.argv[2] ?? 'all') as Role;
  if (!['all', 'api', 'worker'].includes(role)) throw new Error(`Unknown role "${role}": use all, api or worker.`);

  // Its own local database is migrated here; a shared DATABASE_URL is migrated by `npm run migrate`.
  const schema = process.env.DATABASE_URL ? 'require-current' : 'migrate';
  const infra = await prepareInfrastructure({ database: 'weft', temporal: true });
  process.env.DATABASE_URL = infra.databaseUrl;
  process.env.TEMPORAL_ADDRESS = infra.temporalAddress;
  if (infra.temporalUiUrl) process.env.WEFT_TEMPORAL_UI_URL ??= infra.temporalUiUrl;

  const services: RunningService[] = [];
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    say(`${signal} received: draining`);
    for (const service of services.reverse()) await service.stop().catch((e: Error) => say(`shutdown: ${e.message}`));
    await infra.stop().catch((e: Error) => say(`shutdown: ${e.message}`));
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));

  try {
    if (role === 'all' || role === 'worker') services.push(await startWorkerProcess({ schema }));
    if (role === 'all' || role === 'api') {
      const api = await startApi({ schema });
      services.push(api);
      say(`API:  ${api.url}  (docs ${api.url}/docs, readiness ${api.url}/readyz)`);
    }
  } catch (error) {
    for (const service of services.reverse()) await service.stop().catch(() => undefined);
    await infra.stop().catch(() => undefined);
    throw error;
  }
  if (role !== 'api') say('worker: polling');
  say(`Temporal: ${infra.temporalAddress}${infra.temporalUiUrl ? `  Web UI ${infra.temporalUiUrl}` : ''}`);
  say('ready. Ctrl-C stops everything started here.');
}

main().catch((error: Error) => {
  say(`failed to start: ${error.message}`);
  process.exit(1);
});
