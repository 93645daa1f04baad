import type { Client } from '@temporalio/client';
import { systemClock, type Clock } from '../../core/clock';
import type { Db, Executor } from '../../db/connection';
import type { Project } from '../../db/models';
import type { Principal } from '../tenancy/access';
import type { KeyUsageRecorder } from '../tenancy/key-usage';
import { SparqlMemory } from '../ontology/sparql-memory';
import { ManagedTableMemory } from '../../plugins/managed-table/memory';
import { PostgresTablePools } from '../../plugins/postgres-table/pool';
import { SnapshotNotices, snapshotScope } from '../../plugins/snapshot-notices';
import { DefinitionCache } from '../shared/definition-cache';
import { SparqlQueryThreads } from '../../ontology/sparql-threads/query-pool';
import { WorkerRoundTrips } from '../shared/worker-round-trips';
import { Metering } from '../usage/metering';
import { StripeClients } from '../usage/billing';
import { RequestAdmission } from '../tenancy/request-authentication';

/** What the service layer reaches, built once per process (API, worker, admin CLI). */
export interface ServiceDependencies {
  db: Db;
  temporal: Client;
  encryptionKey: Buffer;
  /** Where time decides behaviour (request windows, leases, the expiry of keys, approvals and query jobs, idle MCP sessions): systemClock in production, a test's own in tests. */
  clock: Clock;
  /** Records when keys were last used; the API process has one, the worker and CLI need none. */
  keyUsage?: KeyUsageRecorder;
  /** The graphs, counts and versions SPARQL queries keep between them (services/ontology/sparql-memory.ts). */
  sparqlMemory: SparqlMemory;
  /** The threads SPARQL queries are evaluated in, started on first use (ontology/sparql-threads/query-pool.ts); closed by the runtime. */
  sparqlQueries: SparqlQueryThreads;
  /** What managed tables keep between calls: targets checked, tables and catalogs seen, statements named (plugins/managed-table/memory.ts). */
  managedTables: ManagedTableMemory;
  /** The pools of postgres_table installations this runtime connected (plugins/postgres-table/pool.ts); closed by the runtime. */
  postgresTablePools: PostgresTablePools;
  /** The definitions this runtime keeps per workspace, dropped on change (services/shared/definition-cache.ts); closed by the runtime. */
  definitions: DefinitionCache;
  /** Who hears of the snapshots committed through this runtime (plugins/snapshot-notices.ts): its definition cache. */
  snapshotNotices: SnapshotNotices;
  /** The charges this runtime batches and leases, and the alert checks they start (services/usage/metering.ts); closed by the runtime. */
  metering: Metering;
  /** The Stripe clients this runtime keeps (services/usage/billing.ts). */
  stripe: StripeClients;
  /** Its request budgets, key-check batches and kept keys (services/tenancy/request-authentication.ts); closed by the runtime. */
  requests: RequestAdmission;
  /** The readiness probe's last worker round trip, shared by the probes of an interval (services/shared/worker-round-trips.ts). */
  workerRoundTrips: WorkerRoundTrips;
}

/** What a runtime keeps between calls, built on its pool and clock; closed with closeRuntimeState. */
export type RuntimeState = Pick<ServiceDependencies, 'sparqlMemory' | 'sparqlQueries' | 'managedTables' | 'postgresTablePools' | 'definitions' | 'snapshotNotices' | 'metering' | 'stripe' | 'requests' | 'workerRoundTrips'>;

/**
 * `shared`: query threads and a definition cache of their own unless given (tests share theirs:
 * threads are costly, and runtimes of one test environment see each other's changes at once).
 * closeRuntimeState closes what it was given too; both start again on their next use.
 */
export function runtimeState(db: Db, clock: Clock, shared: Partial<Pick<RuntimeState, 'sparqlQueries' | 'definitions'>> = {}): RuntimeState {
  const { sparqlQueries = new SparqlQueryThreads(), definitions = new DefinitionCache(db, clock) } = shared;
  const snapshotNotices = new SnapshotNotices();
  // A snapshot committed through this runtime is seen by its next query at once; other processes
  // hear the commit's NOTIFY (the definition cache drops the scope's entries either way).
  snapshotNotices.onCommitted((workspaceId) => definitions.changed(snapshotScope(workspaceId)));
  return { sparqlMemory: new SparqlMemory({ settings: sparqlQueries.settings, clock }), sparqlQueries, managedTables: new ManagedTableMemory(db), postgresTablePools: new PostgresTablePools(clock), definitions, snapshotNotices, metering: new Metering(db, clock, definitions), stripe: new StripeClients(), requests: new RequestAdmission(db, clock, definitions), workerRoundTrips: new WorkerRoundTrips(clock) };
}

/**
 * Returns the runtime's request leases, writes its leased charges and returns their leases, waits
 * for the alert checks they started and the managed tables' statistics refreshes, and closes its
 * postgres_table pools and query threads, and ends its definition cache's listening connection:
 * call before destroying its pool.
 */
export async function closeRuntimeState(state: RuntimeState): Promise<void> {
  await state.requests.close();
  await state.metering.close();
  await state.managedTables.settle();
  await state.postgresTablePools.close();
  await state.sparqlQueries.close();
  await state.definitions.close();
}

/**
 * Temporal for a process that must not reach it from the service layer: activities reach Temporal
 * only through their workflow (an activity that started or signalled workflows itself would do so
 * again on every retry), so any use of it here is a bug and throws.
 */
const noTemporal = new Proxy({}, {
  get() {
    throw new Error('Activities reach Temporal only through their workflow.');
  },
}) as Client;

/**
 * The worker's dependencies: the database, the encryption key and the clock; Temporal only through
 * workflows (see noTemporal). Whoever builds them closes them (closeRuntimeState) before destroying
 * the pool. `sparqlQueries`, `definitions`: their own unless given (see runtimeState).
 */
export function workerDependencies({ db, encryptionKey, clock = systemClock, sparqlQueries, definitions }: { db: Db; encryptionKey: Buffer; clock?: Clock; sparqlQueries?: SparqlQueryThreads; definitions?: DefinitionCache }): ServiceDependencies {
  return { db, temporal: noTemporal, encryptionKey, clock, ...runtimeState(db, clock, { sparqlQueries, definitions }) };
}

/** The door a call came through: for logs and the few answers that differ by transport. */
export type Door = 'http' | 'mcp' | 'sparql' | 'activity' | 'admin' | 'console';

/**
 * Who asks, through which door, for which request. A door builds one per call and hands it to
 * invoke(); the principal is absent only for public operations.
 */
export interface Caller {
  deps: ServiceDependencies;
  principal?: Principal;
  door: Door;
  requestId: string;
  /** The client's id for this call: a mutating operation with `idempotent` runs once per key. */
  idempotencyKey?: string;
  /** Aborted when the client has gone (its connection closed before the answer), for doors that say so. */
  signal?: AbortSignal;
}

/**
 * What an operation's function gets: the one context object of the service layer. `db` is the
 * operation's transaction when it writes, the pool otherwise.
 *
 * The signature convention of the service layer: a function that does work for the operation's
 * caller takes this context first, as `ctx`, and then only what it acts on (ids, input, a page, a
 * filter): `getDraft(ctx, pipelineId)`. It reads the principal, the project, the dependencies,
 * the request id and the idempotency key from it; a transaction of its own reaches the functions it
 * calls as inTransaction(ctx, trx). What differs, and why:
 * - lookups and records by id that need no key (requirePipeline(db, project, id),
 *   getApiLimits(db, workspaceId)) take the executor they run on first, often a caller's transaction;
 *   a runtime's own state is reached through its dependencies first (deps.metering.meter(db, …),
 *   assertCredit(deps, db, …)), and so is its definition cache by the lookups it answers outside a
 *   transaction (requireDataEndpoint(deps, db, workspaceId, id));
 * - what runs before a context exists takes what it has: requireProject(deps, db, principal, id) (invoke
 *   builds the context's project with it), authentication (deps), activities (deps, ids) until
 *   actAs invokes their operation, and the admin CLI's functions (db, workspaceId, …);
 * - checks of a key alone take the principal first (authorize, authorizeDataUse, checkGrants), and
 *   the data guard takes (deps, db, principal, …): it is asked with the key and the executor at hand,
 *   and reads grants through the runtime's definition cache.
 */
export interface OperationContext {
  db: Executor;
  deps: ServiceDependencies;
  /** The authenticated key. Throws for public operations, which have none. */
  readonly principal: Principal;
  /** The project named by the input's projectId, checked against the key's allowlist (operations with `project`). */
  readonly project: Project;
  door: Door;
  requestId: string;
  idempotencyKey?: string;
  /** Aborted when the caller has gone: long reads stop (SPARQL queries); absent where no door says so. */
  readonly signal?: AbortSignal;
}

/**
 * The same context on another executor, usually a transaction the service opened itself, so the
 * functions it calls run in that transaction. Keeps the principal and project getters (a spread
 * would call them, and the project's throws for operations that declare none), its own or its
 * prototype's (invoke()'s context is a class).
 */
export function inTransaction(ctx: OperationContext, db: Executor): OperationContext {
  return Object.create(Object.getPrototypeOf(ctx), { ...Object.getOwnPropertyDescriptors(ctx), db: { value: db, enumerable: true, writable: true } }) as OperationContext;
}
