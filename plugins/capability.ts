import type { JsonSchema } from '../core/schema-validator';

export type EndpointRole = 'source' | 'destination' | 'ontology_store';

/** Roles of a table store: read as a source stream, written as a sink table. */
export const TABLE_ROLES: CapabilityDefinition['roles'] = [
  { role: 'source', contractKind: 'source_stream' },
  { role: 'destination', contractKind: 'sink_table' },
];

/** Decrypted installation: settings in clear, credentials only in memory. */
export interface InstallationContext {
  id: string;
  workspaceId: string;
  settings: Record<string, unknown>;
  credentials: Record<string, unknown>;
}

export interface FieldDescription {
  name: string;
  type: string;
  nullable?: boolean;
}

export interface DiscoveredSchema {
  fields: FieldDescription[];
  /** The record identifier as the store or target declares it; [] when unknown. */
  primaryKey: string[];
}

export interface CheckResult {
  ok: boolean;
  message: string;
  details?: Record<string, unknown>;
}

/** A versioned capability contract: what a plugin offers a workspace, and how to use it. */
export interface CapabilityDefinition {
  name: string;
  version: string;
  title: string;
  description: string;
  /** Roles this capability serves, each with its contract kind. */
  roles: Array<{ role: EndpointRole; contractKind: string }>;
  /** JSON Schema of an endpoint's `target` selector. Never host or password settings. */
  targetSchema: JsonSchema;
  /** JSON Schema of the installation config; properties with `x-weft-secret: true` are credentials, stored encrypted. */
  installationSchema: JsonSchema;
  accepts: string[];
  emits: string[];
  supports: {
    recordsRead: boolean;
    /** Records come back in orderBy order across pages (a store that sorts); false for remote APIs. */
    orderedReads: boolean;
    /**
     * The store knows its exact field names (a catalog, or a registry of every field written) and
     * readRecords refuses unknown ones with unknown_field. Otherwise the endpoint's declared
     * schemaHints.columns are the contract, checked by the service.
     */
    fieldCatalog: boolean;
    snapshotReads: boolean;
    /** Each record knows what wrote it (a run or a governed write): readRecords answers query.provenance. */
    provenanceReads: boolean;
    transactionalWrites: boolean;
    schemaDiscovery: boolean;
    connectionCheck: boolean;
  };
}

/** The write that produced a record's current version: a pipeline run or a governed write action. */
export interface RecordProvenance {
  kind: 'run' | 'write';
  id: string;
  committedAt: string;
}

/** One `where` condition of a records read or governed write (SPEC 2.9 / 4.4). */
export interface Condition {
  field: string;
  op: 'eq' | 'ne' | 'in' | 'exists' | 'gt' | 'gte' | 'lt' | 'lte';
  value?: unknown;
  values?: unknown[];
}

export interface OrderTerm {
  field: string;
  direction: 'asc' | 'desc';
}

/**
 * A bounded records read, already validated by the service: field names exist in the endpoint's
 * schema, limit is within the cap, and snapshot selectors are only passed to capabilities that
 * support them.
 */
export interface RecordsQuery {
  /** Fields to return; undefined means all. */
  select?: string[];
  where: Condition[];
  orderBy: OrderTerm[];
  limit: number;
  /** Capability-defined continuation state from the previous page (JSON), or undefined for the first page. */
  after?: unknown;
  snapshotId?: string;
  /** Also return what wrote each record (capabilities with provenanceReads). */
  provenance?: boolean;
  /** ISO 8601 timestamp: the snapshot committed at or before it. */
  asOf?: string;
  /**
   * A pipeline run's read: windows end at the run's sync time, and since_last windows start at
   * the source's last committed position. Records reads leave it out (the window ends now).
   */
  incremental?: { syncTime: string; lastPosition?: string };
}

export interface SnapshotInfo {
  id: string;
  version: string;
  /** When the snapshot was committed; null when the store cannot say (a content digest, an empty table). */
  committedAt: string | null;
}

/** The snapshot of a table that was never written: what a first governed write expects. */
export const EMPTY_SNAPSHOT: SnapshotInfo = { id: 'empty', version: '0', committedAt: null };

export const sameSnapshot = (a: { id: string; version: string }, b: { id: string; version: string }): boolean => a.id === b.id && a.version === b.version;

/** Most rows a change set lists per kind; the counts stay exact. */
export const CHANGE_SET_LIST_LIMIT = 500;

/** What a write would do, row by row (dry runs). Rows are keyed by primary key when the table has one. */
export interface ChangeSet {
  added: Array<{ key: string | null; after: Record<string, unknown> }>;
  changed: Array<{ key: string | null; before: Record<string, unknown>; after: Record<string, unknown> }>;
  removed: Array<{ key: string | null; before: Record<string, unknown> }>;
  counts: { added: number; changed: number; removed: number };
  /** True when a list stops at CHANGE_SET_LIST_LIMIT rows. */
  truncated: boolean;
}

/** Why a remote read stopped: truncation is never silent. */
export type StopReason = 'exhausted' | 'max_pages' | 'repeated_cursor' | 'empty_page' | 'limit' | 'page_budget';

export interface RecordsPage {
  records: Array<Record<string, unknown>>;
  /**
   * The records as JSON (UTF-8), exactly the bytes of JSON.stringify(records), and how many there
   * are: given by a store that reads them as text (managed_table), so that an answer can carry them
   * without parsing and writing them again. `records` then parses them when first read.
   */
  recordsJson?: { bytes: Buffer; count: number };
  /** What wrote each record, index for index with records: when the query asked for provenance. */
  provenance?: RecordProvenance[];
  /** JSON state to resume after the last record, or null when there is nothing more. */
  continuation: unknown | null;
  snapshot?: SnapshotInfo;
  /** For remote sources: why fetching stopped and how many pages were fetched. */
  stopReason?: StopReason;
  pagesFetched?: number;
  /** The time window the read asked the remote system for, when its target has one. */
  window?: { start: string; end: string };
}

export interface WriteRequest {
  operation: 'append' | 'upsert' | 'update' | 'delete';
  rows?: Array<Record<string, unknown>>;
  where?: Condition[];
  set?: Record<string, unknown>;
  /** Who produced the write (a run or a governed write action), stored with each record. */
  provenance: { kind: 'run' | 'write'; id: string };
  /** Optimistic check: the snapshot the writer read; a mismatch is a conflict (snapshot_conflict) and nothing is written. */
  expectedSnapshot?: { id: string; version: string };
  /** Work out the change set, then roll back: nothing is written. */
  dryRun?: boolean;
}

export interface WriteResult {
  affected: number;
  /** The snapshot after the write (for a dry run, the one it was checked against). */
  snapshot?: SnapshotInfo;
  /** Dry runs only. */
  changes?: ChangeSet;
}

/** A run's staged records for one destination, in staging order (services/pipelines/run-staging.ts). */
export interface StagedRows {
  /**
   * For stores in Weft's own PostgreSQL: a SQL relation with columns row_key (text, null without a
   * key) and data (jsonb). With latestPerKey, one row per key: the last one staged.
   */
  relation(params: import('./sql/builder').SqlParams, options: { latestPerKey: boolean }): string;
  /** For stores elsewhere: the same records in batches, read page by page. */
  batches(size: number, options: { latestPerKey: boolean }): AsyncIterable<Array<{ key: string | null; data: Record<string, unknown> }>>;
}

/** How a pipeline destination takes a run's records: all of them in one commit. */
export interface StagedWriteRequest {
  mode: 'append' | 'upsert' | 'replace';
  rows: StagedRows;
  provenance: WriteRequest['provenance'];
}

/** What a capability needs to act: the workspace, its decrypted installation, and the Weft database for capabilities that keep data there. */
export interface CapabilityContext {
  installation: InstallationContext;
  /** Weft's own PostgreSQL (knex); used by managed_table. */
  db: import('knex').Knex;
  /** What managed_table keeps between calls: the runtime's (ServiceDependencies.managedTables), never a module's. */
  managedTables: import('./managed-table/memory').ManagedTableMemory;
  /** The pools of postgres_table installations: the runtime's (ServiceDependencies.postgresTablePools), closed with it. */
  postgresTablePools: import('./postgres-table/pool').PostgresTablePools;
  /** Who hears of the snapshots committed through it: the runtime's (ServiceDependencies.snapshotNotices). */
  snapshotNotices: import('./snapshot-notices').SnapshotNotices;
  /**
   * Aborted when the caller gives up (a pipeline run canceled): a capability passes it to its
   * remote requests, so one in flight stops at once, and rejects with `signal.reason`.
   */
  signal?: AbortSignal;
  /**
   * Tells the caller the capability is alive while it waits (a pipeline run's extract activity
   * heartbeats with it): call it at least every few seconds during a slow remote request. Cheap;
   * absent outside pipeline runs.
   */
  heartbeat?(): void;
}

/** The behaviour behind a capability definition. Optional methods match `supports` flags. */
export interface CapabilityRuntime {
  definition: CapabilityDefinition;
  /** Installation config rules beyond its JSON Schema. Return problems, or [] when fine. */
  validateInstallation?(config: Record<string, unknown>): Array<{ path: string; message: string }>;
  /**
   * The data a target reaches, whatever installation or endpoint names it: guards (named read
   * grants, the write policy) are kept on it, so two endpoints over one table share them. Built
   * from the installation's settings only, never its credentials; compared within one workspace.
   */
  dataIdentity(target: Record<string, unknown>, settings: Record<string, unknown>): string;
  /** Target rules beyond the JSON Schema (e.g. request.url under the installation's base URL). */
  validateTarget?(target: Record<string, unknown>, installation: InstallationContext): Array<{ path: string; message: string }>;
  checkConnection(ctx: CapabilityContext, target: Record<string, unknown>): Promise<CheckResult>;
  discoverSchema(ctx: CapabilityContext, target: Record<string, unknown>): Promise<DiscoveredSchema>;
  readRecords(ctx: CapabilityContext, target: Record<string, unknown>, query: RecordsQuery): Promise<RecordsPage>;
  writeRecords?(ctx: CapabilityContext, target: Record<string, unknown>, request: WriteRequest): Promise<WriteResult>;
  /** The snapshot a governed write names as expectedSourceSnapshot (capabilities with transactional writes). */
  currentSnapshot?(ctx: CapabilityContext, target: Record<string, unknown>): Promise<SnapshotInfo>;
  /** currentSnapshot of several targets of one installation at once (one round trip where the store allows). */
  currentSnapshots?(ctx: CapabilityContext, targets: Array<Record<string, unknown>>): Promise<SnapshotInfo[]>;
  /** The fields that identify a record at this destination (null: records have no key). Staging keys records with it. */
  recordKey?(ctx: CapabilityContext, target: Record<string, unknown>): Promise<string[] | null>;
  /** Every commit of this capability announces its snapshot (snapshot-notices.ts), so what is learned of its current snapshots may be kept until the next. */
  announcesSnapshots?: boolean;
  /** Writes a pipeline run's staged records as one commit, or nothing. */
  commitStagedWrite?(ctx: CapabilityContext, target: Record<string, unknown>, request: StagedWriteRequest): Promise<WriteResult>;
}
