/**
 * Weft's Prometheus metrics (prom-client), one registry per process. Every label takes its value
 * from a bounded set: route templates, methods, statuses, triggers, capability names, error codes
 * and event kinds written in the code. A tenant id, key id or record value never becomes a label.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DomainError } from '../core/errors';
import type { Db } from '../db/connection';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Seconds: from a cached answer (~1 ms) to a long SPARQL query or commit. */
const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const RUN_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600];

export const httpRequestDuration = new Histogram({
  name: 'weft_http_request_duration_seconds',
  help: 'HTTP requests of the API by route template, method and status (its _count is the request count).',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const rateLimited = new Counter({
  name: 'weft_http_rate_limited_total',
  help: 'Requests answered 429, by the bucket that refused them (api_key, workspace, or the refusal code of a concurrency limit).',
  labelNames: ['bucket'] as const,
  registers: [registry],
});

export const runsStarted = new Counter({
  name: 'weft_pipeline_runs_started_total',
  help: 'Pipeline runs that got their turn and started, by trigger.',
  labelNames: ['trigger'] as const,
  registers: [registry],
});

export const runsEnded = new Counter({
  name: 'weft_pipeline_runs_ended_total',
  help: 'Pipeline runs that ended, by trigger and status (succeeded, failed, canceled).',
  labelNames: ['trigger', 'status'] as const,
  registers: [registry],
});

export const runDuration = new Histogram({
  name: 'weft_pipeline_run_duration_seconds',
  help: 'From a run\'s start to its end, by trigger and status.',
  labelNames: ['trigger', 'status'] as const,
  buckets: RUN_BUCKETS,
  registers: [registry],
});

export const recordsRead = new Counter({
  name: 'weft_pipeline_records_read_total',
  help: 'Records pipeline runs read from their sources, by source capability.',
  labelNames: ['capability'] as const,
  registers: [registry],
});

export const pagesFetched = new Counter({
  name: 'weft_pipeline_pages_fetched_total',
  help: 'Pages pipeline runs fetched from their sources, by source capability.',
  labelNames: ['capability'] as const,
  registers: [registry],
});

export const recordsWritten = new Counter({
  name: 'weft_pipeline_records_written_total',
  help: 'Records committed runs wrote to their destinations, by destination capability.',
  labelNames: ['capability'] as const,
  registers: [registry],
});

export const remoteErrors = new Counter({
  name: 'weft_remote_errors_total',
  help: 'Failed calls to the systems behind endpoints, by capability, operation (read, write) and error code.',
  labelNames: ['capability', 'operation', 'code'] as const,
  registers: [registry],
});

export const queryDuration = new Histogram({
  name: 'weft_query_duration_seconds',
  help: 'SPARQL queries and published-query executions, by kind (sparql, published_query) and outcome (ok, refused, error).',
  labelNames: ['kind', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const queryRefusals = new Counter({
  name: 'weft_query_refusals_total',
  help: 'Queries refused (timeout, result or dataset too large, concurrency, malformed, credit), by kind and code.',
  labelNames: ['kind', 'code'] as const,
  registers: [registry],
});

export const sparqlRecordsRead = new Counter({
  name: 'weft_sparql_records_read_total',
  help: 'Records SPARQL queries read into the API from bound endpoints, by read: per_query (the records of a managed table a query reaches), first_solutions (pages of a query answered by its first solutions), whole (a binding\'s whole graph).',
  labelNames: ['read'] as const,
  registers: [registry],
});

export const sparqlThreadHeap = new Gauge({
  name: 'weft_sparql_thread_heap_bytes',
  help: 'The V8 heap of each SPARQL query thread as its last query left it, by thread (its index in the pool) and kind (used, committed): the process\'s own heap figures leave the threads out.',
  labelNames: ['thread', 'kind'] as const,
  registers: [registry],
});

export const governedWriteEvents = new Counter({
  name: 'weft_governed_write_events_total',
  help: 'Steps of governed writes as the action log records them (proposed, approved, rejected, expired, applied, failed).',
  labelNames: ['event'] as const,
  registers: [registry],
});

export const meteredOperations = new Counter({
  name: 'weft_metered_operations_total',
  help: 'Metered operations charged, by kind.',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const meteredAmount = new Counter({
  name: 'weft_metered_amount_total',
  help: 'Credit charged (in the plan currency), by metered kind.',
  labelNames: ['kind'] as const,
  registers: [registry],
});

/** The pools of this process's Weft databases (an API and a worker in one process share the gauges). */
const pools = new Set<Db>();
type TarnPool = { numUsed(): number; numFree(): number; numPendingAcquires(): number; max: number };
const poolOf = (db: Db) => (db.client as { pool?: TarnPool }).pool;

/** The observed databases not destroyed yet. */
export function livePools(): Db[] {
  for (const db of pools) if (!poolOf(db)) pools.delete(db);
  return [...pools];
}
const tarnPools = () => livePools().map((db) => poolOf(db)!);
const sum = (of: (pool: TarnPool) => number) => tarnPools().reduce((total, pool) => total + of(pool), 0);

new Gauge({
  name: 'weft_db_pool_connections',
  help: 'Connections of Weft\'s database pools by state (used, idle), and their ceiling (max).',
  labelNames: ['state'] as const,
  registers: [registry],
  collect() {
    this.set({ state: 'used' }, sum((pool) => pool.numUsed()));
    this.set({ state: 'idle' }, sum((pool) => pool.numFree()));
    this.set({ state: 'max' }, sum((pool) => pool.max));
  },
});

new Gauge({
  name: 'weft_db_pool_waiting',
  help: 'Queries waiting for a connection of Weft\'s database pools.',
  registers: [registry],
  collect() {
    this.set(sum((pool) => pool.numPendingAcquires()));
  },
});

/** Counts this database's pool in the pool gauges (until it is destroyed). */
export function observePool(db: Db): void {
  pools.add(db);
}

/** A failure's stable code for a label: a DomainError's code (literals in the code), else `internal`. */
export const errorCode = (error: unknown): string => (error instanceof DomainError ? error.code : 'internal');

export type QueryKind = 'sparql' | 'published_query';

/** A refusal is a business error the caller can act on (4xx); an upstream or database outage is not. */
const refusal = (error: unknown): error is DomainError => error instanceof DomainError && error.kind !== 'upstream_failed' && error.kind !== 'unavailable';

/** Times a query and counts a refusal (a 4xx answer: timeout, size, concurrency, credit). */
export async function observeQuery<T>(kind: QueryKind, work: () => Promise<T>): Promise<T> {
  const stop = queryDuration.startTimer({ kind });
  try {
    const result = await work();
    stop({ outcome: 'ok' });
    return result;
  } catch (error) {
    stop({ outcome: refusal(error) ? 'refused' : 'error' });
    if (refusal(error)) queryRefusals.inc({ kind, code: error.code });
    throw error;
  }
}

/** Counts a refusal of a query's text before it runs (malformed, too large, graph parameters). */
export function countRefusal<T>(kind: QueryKind, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (refusal(error)) queryRefusals.inc({ kind, code: error.code });
    throw error;
  }
}

/** A pipeline run's end, counted with its duration from its start. */
export function recordRunEnd(run: { trigger: string; startedAt?: Date | null }, status: string): void {
  runsEnded.inc({ trigger: run.trigger, status });
  if (run.startedAt) runDuration.observe({ trigger: run.trigger, status }, Math.max(0, (Date.now() - run.startedAt.getTime()) / 1000));
}
