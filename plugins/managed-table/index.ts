import { TABLE_ROLES } from '../capability';
import type { CapabilityDefinition, CapabilityRuntime } from '../capability';
import { checkConnection, discoverSchema, parseTarget, targetSchema } from './targets';
import { readRecords } from './reads';
import { commitStagedWrite, writeRecords } from './writes';
import { currentSnapshot, currentSnapshots } from './snapshots';

// The managed_table capability, assembled from its targets (targets.ts), reads (reads.ts), writes
// (writes.ts) and snapshots (snapshots.ts) over the layout of storage.ts. What it keeps between
// calls belongs to the runtime: ManagedTableMemory (memory.ts), reached as ctx.managedTables.

const definition: CapabilityDefinition = {
  name: 'managed_table',
  version: '1.0.0',
  title: 'Managed table',
  description: 'A table kept in Weft’s own PostgreSQL, one schema per workspace. Every committed write creates a snapshot, and history is kept for snapshot and point-in-time reads.',
  roles: TABLE_ROLES,
  targetSchema,
  installationSchema: { type: 'object', additionalProperties: false, properties: {}, description: 'Nothing to configure: managed tables live in Weft’s own database.' },
  accepts: ['json'],
  emits: ['json'],
  supports: { recordsRead: true, orderedReads: true, fieldCatalog: true, snapshotReads: true, provenanceReads: true, transactionalWrites: true, schemaDiscovery: true, connectionCheck: true },
};

export const managedTableCapability: CapabilityRuntime = {
  definition,
  // Every commit announces its snapshot (commitSnapshot), so SPARQL datasets keep the current snapshots they read.
  announcesSnapshots: true,
  // Every managed_table installation of a workspace reaches the same schema: the table is the data.
  dataIdentity: (target) => `managed_table:${String(target.table)}`,
  checkConnection,
  discoverSchema,
  readRecords,
  writeRecords,
  currentSnapshot,
  currentSnapshots,
  async recordKey(ctx, rawTarget) {
    return parseTarget(ctx, rawTarget).primaryKey;
  },
  commitStagedWrite,
};
