import type { Server } from 'node:http';
import { ensureBillingSchedule } from '../services/usage/billing';
import type { Connection } from '@temporalio/client';
import { createApp } from '../api/app';
import { answerClientError } from '../api/middleware/errors';
import { config } from '../core/config';
import { logger } from '../core/logger';
import { connectTemporal, createTemporalClient } from '../core/temporal';
import { createDb, migrateToLatest, Db } from '../db/connection';
import { KeyUsageRecorder } from '../services/tenancy/key-usage';
import { startWorker } from '../worker';
import { cleanExpiredIdempotencyRecords } from '../services/shared/housekeeping';
import { closePostgresTablePools } from '../plugins/postgres-table';
import { closeDefinitionCache } from '../services/shared/definition-cache';
import { closeRequestBudgets } from '../services/tenancy/request-budgets';
import { closeSparqlQueryPool, sparqlQueryPool } from '../ontology/sparql-threads/query-pool';

export interface RunningService {
  /** Graceful: stop accepting, finish in-flight work, release connections. */
  stop(): Promise<void>;
}

export async function migrate(db: Db): Promise<void> {
  const applied = await migrateToLatest(db);
  if (applied.length) logger.info({ applied }, 'database migrated');
}

/** The HTTP API: Koa on PORT, with its own pool and Temporal client. */
export async function startApi(options: { port?: number; host?: string } = {}): Promise<RunningService & { url: string; server: Server; temporalConnection: Connection }> {
  const settings = config();
  const db = createDb(settings.databaseUrl);
  await migrate(db);
  const connection = await connectTemporal(settings.temporalAddress);
  const keyUsage = new KeyUsageRecorder(db);
  const app = createApp({
    db,
    temporal: createTemporalClient(connection, settings.temporalNamespace),
    encryptionKey: settings.encryptionKey,
    keyUsage,
  });
  const housekeeping = setInterval(() => void cleanExpiredIdempotencyRecords(db).catch(() => undefined), 3600_000);
  housekeeping.unref();
  const server = app.listen(options.port ?? settings.port, options.host ?? settings.host);
  // Requests node refuses before Koa (oversized headers, malformed request lines) answer in the problem format too.
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.port;
  const url = `http://${options.host ?? settings.host}:${port}`;
  // Query threads start (and load the SPARQL engine) now, so no query waits for them.
  sparqlQueryPool();
  return {
    url,
    server,
    // The API's own Temporal connection (tests close it to see /readyz report Temporal down).
    temporalConnection: connection,
    async stop() {
      clearInterval(housekeeping);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive sockets would hold close() open; in-flight requests still finish.
        server.closeIdleConnections();
      });
      await keyUsage.close();
      await closeRequestBudgets(db);
      await closeSparqlQueryPool();
      await closePostgresTablePools();
      await connection.close();
      await closeDefinitionCache();
      await db.destroy();
    },
  };
}

/** The Temporal worker: runs workflows and activities from the task queue in temporal.yaml. */
export async function startWorkerProcess(): Promise<RunningService> {
  const settings = config();
  const db = createDb(settings.databaseUrl);
  await migrate(db);
  const worker = await startWorker({ db, encryptionKey: settings.encryptionKey, temporalAddress: settings.temporalAddress, namespace: settings.temporalNamespace, taskQueue: settings.taskQueue });
  // With Stripe configured, the hourly billing sync runs as a Temporal Schedule.
  const connection = await connectTemporal(settings.temporalAddress);
  await ensureBillingSchedule(createTemporalClient(connection, settings.temporalNamespace), settings.taskQueue).finally(() => connection.close());
  return {
    async stop() {
      await worker.shutdown();
      await closePostgresTablePools();
      await closeDefinitionCache();
      await db.destroy();
    },
  };
}
