// Capabilities whose snapshots Weft commits itself (managed_table) announce every new snapshot, so
// a process that keeps what it learned of current snapshots (the SPARQL datasets) need not ask
// again on every query. A commit announces on the definitions channel (PostgreSQL NOTIFY, delivered
// to every process at commit) with the workspace's snapshot scope as payload, and to this
// process's listeners at once when the write's own transaction has committed.

import { DEFINITIONS_CHANNEL } from '../services/shared/definition-cache';

/** What the committing statement passes to pg_notify: the channel the definition cache listens on. */
export const SNAPSHOT_NOTICE_CHANNEL = DEFINITIONS_CHANNEL;

/** The definition-cache scope of a workspace's snapshots (a notice's payload). */
export const snapshotScope = (workspaceId: string): string => `snapshots:${workspaceId}`;

const announcing = new Set<string>();
const listeners = new Set<(workspaceId: string) => void>();

/** A capability declares that each of its commits announces its snapshot (call at module load). */
export function announceSnapshotsOf(capability: string): void {
  announcing.add(capability);
}

/** Whether every new snapshot of this capability's targets is announced. */
export function announcesSnapshots(capability: string): boolean {
  return announcing.has(capability);
}

/** A snapshot of `workspaceId` committed in this process (its own transaction, now committed). */
export function snapshotCommitted(workspaceId: string): void {
  for (const listener of listeners) listener(workspaceId);
}

export function onSnapshotCommitted(listener: (workspaceId: string) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
