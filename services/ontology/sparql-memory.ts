import { WeightedLru } from '../../ontology/dataset-cache';
import { KeptParses } from '../../ontology/sparql-engine';
import type { GraphHandle } from '../../ontology/sparql-threads/messages';
import type { SparqlSettings } from '../../ontology/sparql-threads/settings';
import type { Clock } from '../../core/clock';
import { TableReadSlots, type CountedTriples, type PrimaryKeys, type TableCounts } from './sparql-reach-reads';

/** A graph kept between queries, with when it was built (unpinned graphs are fresh for a while). */
export interface KeptGraph {
  handle: GraphHandle;
  builtAt: number;
}

/** What the package graph holds, as far as narrowing table reads needs: its predicates and rdf:type objects. */
export interface PackageFacts {
  predicates: Set<string>;
  types: Set<string>;
}

/**
 * What one runtime keeps of SPARQL datasets between queries. The runtime builds it
 * (scripts/runtime.ts, workerDependencies) and queries reach it through ctx.deps.sparqlMemory, so
 * two runtimes in one process share nothing, and a test that changes data behind Weft's back
 * builds its own rather than clearing a module's.
 */
export class SparqlMemory {
  /**
   * Encoded graphs, one per package and per binding (the newest version only: a new snapshot
   * replaces the old graph), bounded in bytes. Shared memory: the query threads read them in place.
   */
  readonly graphs: WeightedLru<KeptGraph>;
  /** Graphs being built, by version: a graph is built once however many queries ask for it at once. */
  readonly building = new Map<string, Promise<KeptGraph>>();
  readonly packageFacts = new WeightedLru<PackageFacts>(64, 64 * 1024 * 1024);
  /** The dataset version of each combination of graph versions (every query names one). */
  readonly datasetVersions = new WeightedLru<string>(1024, 4 * 1024 * 1024);
  /**
   * The triples PostgreSQL counted in bound tables, per snapshot and mapping (sparql-reach-reads.ts),
   * so a query refused past the reach bound costs one count per snapshot, not one per query. A
   * count is a few dozen bytes, so its weight is its key's length.
   */
  readonly tableCounts: TableCounts = new WeightedLru<CountedTriples>(4096, 4 * 1024 * 1024);
  /** The API's parses of query texts (a query's form, its reach, the SQL path); each query thread keeps its own. */
  readonly parses = new KeptParses();

  /** The runtime's SPARQL settings: its query threads' (SparqlQueryThreads.settings), the one object. */
  readonly settings: SparqlSettings;
  /** Managed tables' storage primary keys, fixed when a table is registered: read once per table, not per query. */
  readonly primaryKeys: PrimaryKeys = new WeightedLru<string[]>(4096, 1024 * 1024);
  /**
   * One-scan stars of managed tables at a snapshot whose statement checks found nothing odd: the
   * next query over the same rows runs without the checks (sparql-in-sql.ts, Statement.starChecks).
   */
  readonly cleanStars = new WeightedLru<true>(16_384, 2 * 1024 * 1024);
  /** PostgreSQL's estimate of a table's rows, per table and snapshot (which way a query is answered). */
  readonly tableEstimates = new WeightedLru<number>(4096, 1024 * 1024);
  /** The bound-table reads under way, per workspace (WEFT_SPARQL_SQL_CONNECTIONS at once). */
  readonly tableReads: TableReadSlots;

  constructor({ settings, clock, encodedBytes = Number(process.env.WEFT_SPARQL_ENCODED_MB ?? 1024) * 1024 * 1024 }: { settings: SparqlSettings; clock: Clock; encodedBytes?: number }) {
    this.settings = settings;
    this.tableReads = new TableReadSlots(clock);
    this.graphs = new WeightedLru<KeptGraph>(4096, encodedBytes);
  }
}
