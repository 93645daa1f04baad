// SPARQL evaluation settings, read from the environment by the runtime that builds the query
// threads (SparqlQueryThreads.settings); their table: docs/architecture/sparql.md.

function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}".`);
  return value;
}

export interface SparqlSettings {
  /** Query threads in each API process (WEFT_SPARQL_THREADS). */
  threads: number;
  /** A query's time limit; past it its thread is terminated (WEFT_SPARQL_TIMEOUT_MS). */
  timeoutMs: number;
  /** Queries one workspace runs at once in each API process (WEFT_SPARQL_WORKSPACE_CONCURRENCY). */
  workspaceConcurrency: number;
  /** How long a query waits for a free thread or workspace slot before a 429 (WEFT_SPARQL_QUEUE_MS). */
  queueMs: number;
  /** Triples the query threads of a process keep in n3 stores, together (WEFT_SPARQL_KEPT_TRIPLES). */
  keptTriples: number;
  /** The largest dataset a query may run over; larger ones are refused, never answered in part (WEFT_SPARQL_MAX_DATASET_TRIPLES). */
  maxDatasetTriples: number;
  /**
   * Bound managed tables are read per query, only the records the query can reach (WEFT_SPARQL_TABLE_READS=per-query,
   * the default), or copied whole into a graph of each API process like other bindings (whole).
   */
  tableReads: 'per-query' | 'whole';
  /**
   * Records (PostgreSQL's estimate) the tables of a query must hold together before PostgreSQL answers
   * it rather than the evaluator over their kept graphs, which is faster while they fit (WEFT_SPARQL_SQL_MIN_RECORDS).
   */
  sqlMinRecords: number;
  /** Queries one workspace reads bound tables for at once in each API process (WEFT_SPARQL_SQL_CONNECTIONS). */
  sqlConnections: number;
  /** Triples the records one query reads from bound tables may yield; past it the query is refused (WEFT_SPARQL_MAX_REACHED_TRIPLES). */
  maxReachedTriples: number;
  /** How long the graph of an endpoint without snapshots (http_dataset, postgres_table) is reused (WEFT_SPARQL_UNPINNED_TTL_SECONDS). */
  unpinnedTtlSeconds: number;
  /** Heap ceiling of one query thread, so a runaway query cannot take the API down (WEFT_SPARQL_THREAD_MEMORY_MB). */
  threadMemoryMb: number;
  /** Each query thread's young-generation semi-space, from its start (WEFT_SPARQL_THREAD_SEMI_SPACE_MB): query-pool.ts says why. */
  threadSemiSpaceMb: number;
}

function tableReads(): SparqlSettings['tableReads'] {
  const raw = process.env.WEFT_SPARQL_TABLE_READS ?? 'per-query';
  if (raw !== 'per-query' && raw !== 'whole') throw new Error(`WEFT_SPARQL_TABLE_READS must be per-query or whole, got "${raw}".`);
  return raw;
}

/** The settings the environment gives (WEFT_SPARQL_*), read now: the runtime reads them once and keeps them. */
export function sparqlSettingsFromEnvironment(): SparqlSettings {
  const keptTriples = positiveInteger('WEFT_SPARQL_KEPT_TRIPLES', 2_000_000);
  return {
    threads: positiveInteger('WEFT_SPARQL_THREADS', 2),
    timeoutMs: positiveInteger('WEFT_SPARQL_TIMEOUT_MS', 10_000),
    workspaceConcurrency: positiveInteger('WEFT_SPARQL_WORKSPACE_CONCURRENCY', 2),
    queueMs: positiveInteger('WEFT_SPARQL_QUEUE_MS', 2_000),
    keptTriples,
    maxDatasetTriples: Math.min(keptTriples, positiveInteger('WEFT_SPARQL_MAX_DATASET_TRIPLES', 2_000_000)),
    tableReads: tableReads(),
    sqlConnections: positiveInteger('WEFT_SPARQL_SQL_CONNECTIONS', 4),
    sqlMinRecords: Number(process.env.WEFT_SPARQL_SQL_MIN_RECORDS ?? 20_000),
    maxReachedTriples: positiveInteger('WEFT_SPARQL_MAX_REACHED_TRIPLES', 2_000_000),
    unpinnedTtlSeconds: positiveInteger('WEFT_SPARQL_UNPINNED_TTL_SECONDS', 60),
    threadMemoryMb: positiveInteger('WEFT_SPARQL_THREAD_MEMORY_MB', 3_072),
    threadSemiSpaceMb: positiveInteger('WEFT_SPARQL_THREAD_SEMI_SPACE_MB', 16),
  };
}
