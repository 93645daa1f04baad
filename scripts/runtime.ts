import type { Server } from 'node:http';
import { ensureBillingSchedule } from '../services/usage/billing';
import type { Connection } from '@temporalio/client';
import { FileHeldClock, systemClock, type Clock } from '../core/clock';
import { config, testClockFile, workerStickyTimeoutMs } from '../core/config';
import { logger } from '../core/logger';
import { connectTemporal, createTemporalClient } from '../core/temporal';
import { assertSchemaCurrent, createDb, migrateToLatest, Db } from '../db/connection';
import { KeyUsageRecorder } from '../services/tenancy/key-usage';
import { startWorker } from '../worker';
import { cleanExpiredIdempotencyRecords, startStrandedRuns, sweepEvery } from '../services/shared/housekeeping';
import type { DefinitionCache } from '../services/shared/definition-cache';
import { CHARGE_LEASE_TTL_MS } from '../services/usage/charge-leases';
import type { Metering } from '../services/usage/metering';
import { closeRuntimeState, runtimeState, type ServiceDependencies } from '../services/operations/context';
import { metricsSettings, startMetricsServer } from '../observability/metrics-server';
import { loopbackMetricsAddress, temporalCoreMetrics } from '../observability/temporal-metrics';
import { flushTracing, startTracingFromEnvironment } from '../observability/tracing';

/**
 * The API's own modules (Koa, the routes, the MCP server: some 360 modules, about 10 MB of heap),
 * loaded only by a process that serves the API: the worker role never does.
 */
function apiModules(): typeof import('../api/app') & typeof import('../api/middleware/errors') {
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded on use, see above */
  return { ...(require('../api/app') as typeof import('../api/app')), ...(require('../api/middleware/errors') as typeof import('../api/middleware/errors')) };
  /* eslint-enable @typescript-eslint/no-require-imports */
}

export interface RunningService {
  /** Graceful: stop accepting, finish in-flight work, release connections. */
  stop(): Promise<void>;
}

/** Every API and worker process bills the charge leases of processes that stopped without returning them. */
function sweepChargeLeases(metering: Metering) {
  return sweepEvery(CHARGE_LEASE_TTL_MS / 2, () => metering.billExpiredChargeLeases().catch((error) => logger.warn({ err: error }, 'the sweep of expired charge leases failed')));
}

export async function migrate(db: Db): Promise<void> {
  const applied = await migrateToLatest(db);
  if (applied.length) logger.info({ applied }, 'database migrated');
}

/**
 * What a starting process does about the schema: `migrate` (npm start on its own local database)
 * or `require-current` (the default: against a shared DATABASE_URL, migrating is a deployment
 * step, `npm run migrate`, and a process refuses to serve on an older schema).
 */
export type SchemaPolicy = 'migrate' | 'require-current';

/** Migrates or checks as `policy` says; on failure the pool is closed, so the refusing process can exit. */
async function prepareSchema(db: Db, policy: SchemaPolicy): Promise<void> {
  try {
    if (policy === 'migrate') await migrate(db);
    else await assertSchemaCurrent(db);
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

/** A process's clock: the system's, or in a process a test started, the time that test's clock holds (WEFT_TEST_CLOCK_FILE). */
function processClock(): Clock {
  const file = testClockFile();
  return file ? new FileHeldClock(file) : systemClock;
}

/**
 * The HTTP API: Koa on PORT, with its own pool and Temporal client; its metrics on WEFT_METRICS_PORT
 * (metricsPort: 0 picks a free one). `clock`: a test's own, else processClock(); `definitions`:
 * a definition cache of its own unless a test brings one (closed with the API either way).
 */
export async function startApi(options: { port?: number; host?: string; metricsPort?: number; schema?: SchemaPolicy; clock?: Clock; definitions?: DefinitionCache } = {}): Promise<RunningService & { url: string; metricsUrl?: string; server: Server; temporalConnection: Connection; deps: ServiceDependencies }> {
  const settings = config();
  await startTracingFromEnvironment('weft-api');
  const db = createDb(settings.databaseUrl);
  await prepareSchema(db, options.schema ?? 'require-current');
  const connection = await connectTemporal(settings.temporalAddress);
  const { createApp, answerClientError } = apiModules();
  const keyUsage = new KeyUsageRecorder(db);
  const temporal = createTemporalClient(connection, settings.temporalNamespace);
  const clock = options.clock ?? processClock();
  const deps: ServiceDependencies = {
    db,
    temporal,
    encryptionKey: settings.encryptionKey,
    clock,
    keyUsage,
    ...runtimeState(db, clock, { definitions: options.definitions }),
  };
  const app = createApp(deps);
  const housekeeping = setInterval(() => void cleanExpiredIdempotencyRecords(db).catch(() => undefined), 3600_000);
  housekeeping.unref();
  // Queued runs whose launch died between its commit and its workflow start get their workflow.
  const strandedRuns = sweepEvery(60_000, () => startStrandedRuns(deps).catch((error) => logger.warn({ err: error }, 'the sweep of queued runs failed')));
  const expiredChargeLeases = sweepChargeLeases(deps.metering);
  const server = app.listen(options.port ?? settings.port, options.host ?? settings.host);
  // Requests node refuses before Koa (oversized headers, malformed request lines) answer in the problem format too.
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  const url = `http://${options.host ?? settings.host}:${port}`;
  // Query threads start (and load the SPARQL engine) now, so no query waits for them.
  deps.sparqlQueries.pool();
  const metricsAt = metricsSettings('api');
  const metrics = metricsAt && (await startMetricsServer('api', { ...metricsAt, port: options.metricsPort ?? metricsAt.port }));
  return {
    url,
    metricsUrl: metrics?.url,
    server,
    // The API's own Temporal connection (tests close it to see /readyz report Temporal down).
    temporalConnection: connection,
    // The API's dependencies (tests reach its metering: what its requests charged).
    deps,
    async stop() {
      clearInterval(housekeeping);
      await strandedRuns.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive sockets would hold close() open; in-flight requests still finish.
        server.closeIdleConnections();
      });
      await keyUsage.close();
      await expiredChargeLeases.stop();
      await closeRuntimeState(deps);
      await connection.close();
      await db.destroy();
      await metrics?.stop();
      await flushTracing();
    },
  };
}

/** The Temporal worker: runs workflows and activities from the task queue in temporal.yaml. */
export async function startWorkerProcess(options: { schema?: SchemaPolicy } = {}): Promise<RunningService> {
  const settings = config();
  const db = createDb(settings.databaseUrl);
  await prepareSchema(db, options.schema ?? 'require-current');
  await startTracingFromEnvironment('weft-worker');
  // The worker's metrics on WEFT_WORKER_METRICS_PORT, the Temporal SDK's own appended to them.
  const metricsAt = metricsSettings('worker');
  const temporalMetricsAddress = metricsAt && (await loopbackMetricsAddress());
  const worker = await startWorker({ db, encryptionKey: settings.encryptionKey, temporalAddress: settings.temporalAddress, namespace: settings.temporalNamespace, taskQueue: settings.taskQueue, temporalMetricsAddress, stickyTimeoutMs: workerStickyTimeoutMs(), clock: processClock() });
  const metrics = temporalMetricsAddress ? await startMetricsServer('worker', metricsAt, () => temporalCoreMetrics(temporalMetricsAddress)) : undefined;
  // With Stripe configured, the hourly billing sync runs as a Temporal Schedule.
  const connection = await connectTemporal(settings.temporalAddress);
  await ensureBillingSchedule(createTemporalClient(connection, settings.temporalNamespace), settings.taskQueue).finally(() => connection.close());
  const expiredChargeLeases = sweepChargeLeases(worker.deps.metering);
  return {
    async stop() {
      await expiredChargeLeases.stop();
      // Closes the worker's runtime state too (its leased charges written, its leases returned).
      await worker.shutdown();
      await db.destroy();
      await metrics?.stop();
      await flushTracing();
    },
  };
}
