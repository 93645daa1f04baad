import os from 'node:os';
import path from 'node:path';
import { createDb, Db } from '../../db/connection';
import { connectTemporal, createTemporalClient } from '../../core/temporal';
import { temporalSettings } from '../../core/temporal-config';
import { migrate, startApi } from '../../scripts/runtime';
import { DefinitionCache } from '../../services/shared/definition-cache';
import { loadEncryptionKey } from '../../core/config';
import { startWorker, RunningWorker } from '../../worker';
import type { Client, Connection } from '@temporalio/client';
import { SettableClock } from '../../core/clock';
import { SparqlQueryThreads } from '../../ontology/sparql-threads/query-pool';
import { closeRuntimeState, runtimeState, type RuntimeState, type ServiceDependencies } from '../../services/operations/context';

/**
 * One API server, one worker and one pool for the whole run, against the real PostgreSQL and
 * Temporal server that `npm test` prepared. Tests isolate themselves by creating their own
 * workspace (see fixtures.ts), so they can run in any order.
 */
export interface TestEnvironment {
  db: Db;
  baseUrl: string;
  /** The API's GET /metrics (on a port of its own). */
  metricsUrl: string;
  temporal: Client;
  taskQueue: string;
  encryptionKey: Buffer;
  /**
   * The clock of the in-process API and worker (and of what a test hands its own dependencies):
   * the system clock until a test sets it, and again after each test (root-hooks.ts). Processes a
   * test starts (startApiScript, the worker script) keep the time it holds through `clockFile`
   * (WEFT_TEST_CLOCK_FILE, set for them), and the system's while it holds none.
   */
  clock: SettableClock;
  /** The file `clock` shares its held time through (WEFT_TEST_CLOCK_FILE for processes that follow it). */
  clockFile: string;
  /**
   * Dependencies for a test that calls the service layer directly: the run's pool, Temporal client,
   * key and clock, with SPARQL and managed-table memory, metering and request budgets of their own
   * (nothing kept from the API's queries, charges or leases; closed with the environment); `overrides` replace parts.
   */
  dependencies(overrides?: Partial<ServiceDependencies>): ServiceDependencies;
  /**
   * The query threads of the tests' own dependencies (dependencies(), and workerDependencies(env())
   * picks them up too): one pool for all of them, started on first use, rather than two threads
   * for every set built. Closing a set's runtime state stops them; the next query starts them again.
   */
  sparqlQueries: SparqlQueryThreads;
  /**
   * The one definition cache of every runtime of this environment (the API's, the worker's,
   * dependencies()' and workerDependencies(env())'), on the run's pool and clock. See startEnvironment.
   */
  definitions: DefinitionCache;
  /** The in-process API's own dependencies: a test that charges as its requests do uses its metering, which its usage reads settle. */
  apiDependencies: ServiceDependencies;
  /**
   * Writes the charges of the workspace that every runtime of this environment queued (the API's,
   * the worker's and those dependencies() built), and waits for their alert checks.
   */
  settledCharges(workspaceId: string): Promise<void>;
  /** Closes the postgres_table pools every runtime of this environment holds (a test about to drop the database they reach); later reads open new ones. */
  closePostgresTablePools(): Promise<void>;
  stopApi(): Promise<void>;
  /** Stops the in-process worker (a test that runs its own worker process), and starts it again. */
  stopWorker(): Promise<void>;
  startWorker(): Promise<void>;
}

let environment: TestEnvironment | undefined;
let cleanup: Array<() => Promise<void>> = [];

export function env(): TestEnvironment {
  if (!environment) throw new Error('The test environment is not started (root hooks did not run).');
  return environment;
}

export async function startEnvironment(): Promise<void> {
  if (!process.env.DATABASE_URL || !process.env.TEMPORAL_ADDRESS) {
    throw new Error('Run the tests with `npm test`, which prepares PostgreSQL and Temporal.');
  }
  const db = createDb(process.env.DATABASE_URL, { max: 30 });
  await migrate(db);
  const connection: Connection = await connectTemporal(process.env.TEMPORAL_ADDRESS);
  const taskQueue = temporalSettings().taskQueues.main;
  const encryptionKey = loadEncryptionKey();
  const temporalAddress = process.env.TEMPORAL_ADDRESS;
  const clockFile = path.join(os.tmpdir(), `weft-test-clock-${process.pid}`);
  const clock = new SettableClock(clockFile);
  // Inherited by every process a test starts (the API and worker processes follow it).
  process.env.WEFT_TEST_CLOCK_FILE = clockFile;
  // One definition cache for the API, the worker and every dependencies() of the run, not one
  // each hearing the others only by NOTIFY: a change a test makes through any of them (or tells
  // of, fixtures.ts) is gone from all at once, so the next read, whichever runtime answers it,
  // never races the notification. Closing any of them closes it; the next read listens again.
  // Runtimes that must share nothing (runtime-isolation.test.ts) build their own.
  const definitions = new DefinitionCache(db, clock);
  const startTestWorker = () => startWorker({ db, encryptionKey, temporalAddress, namespace: temporalSettings().namespace, taskQueue, definitions, clock });
  let worker: RunningWorker | undefined = await startTestWorker();
  const api = await startApi({ port: 0, host: '127.0.0.1', metricsPort: 0, clock, definitions });
  /** The runtime state of every dependencies() built: its charges settled by settledCharges, closed with the environment. */
  const built: RuntimeState[] = [];
  const sparqlQueries = new SparqlQueryThreads();
  environment = {
    db,
    baseUrl: api.url,
    metricsUrl: api.metricsUrl!,
    temporal: createTemporalClient(connection),
    taskQueue,
    encryptionKey,
    clock,
    clockFile,
    sparqlQueries,
    definitions,
    dependencies(overrides = {}) {
      const deps = { db, temporal: this.temporal, encryptionKey, clock, ...runtimeState(db, clock, { sparqlQueries, definitions }), ...overrides };
      built.push(deps);
      return deps;
    },
    apiDependencies: api.deps,
    async settledCharges(workspaceId) {
      for (const { metering } of [api.deps, ...(worker ? [worker.deps] : []), ...built]) await metering.settled(workspaceId);
    },
    async closePostgresTablePools() {
      await Promise.all([api.deps, ...(worker ? [worker.deps] : []), ...built].map(({ postgresTablePools }) => postgresTablePools.close()));
    },
    stopApi: () => api.stop(),
    async stopWorker() {
      await worker?.shutdown();
      worker = undefined;
    },
    async startWorker() {
      worker ??= await startTestWorker();
    },
  };
  cleanup = [() => api.stop(), async () => worker?.shutdown(), () => Promise.all(built.map(closeRuntimeState)).then(() => undefined), () => sparqlQueries.close(), () => connection.close(), () => definitions.close(), () => db.destroy(), async () => clock.close()];
}

/**
 * Before each test: the runtimes' definition cache listens, its LISTEN confirmed. The first read
 * of a run (or the first after a test closed a runtime, which closes the cache) starts it, and its
 * confirmation drops every entry and returns every request and charge lease: mid-test, a lease a
 * test had just seen granted would be gone under it.
 */
export async function definitionsListening(): Promise<void> {
  await environment?.definitions.whenListening();
}

/** After each test: the clock it may have set goes back to the system's. */
export function releaseClock(): void {
  environment?.clock.release();
}

export async function stopEnvironment(): Promise<void> {
  for (const step of cleanup) await step().catch(() => undefined);
  cleanup = [];
  environment = undefined;
}
