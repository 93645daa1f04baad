// Capabilities whose snapshots Weft commits itself (managed_table) announce every new snapshot, so
// a process that keeps what it learned of current snapshots (the SPARQL datasets) need not ask
// again on every query. A commit announces on the definitions channel (PostgreSQL NOTIFY, delivered
// to every process at commit) with the workspace's snapshot scope as payload, and to its runtime's
// listeners at once when the write's own transaction has committed. Which capabilities announce is
// a declaration of the capability (CapabilityRuntime.announcesSnapshots).

import { DEFINITIONS_CHANNEL } from '../services/shared/definition-cache';

/** What the committing statement passes to pg_notify: the channel the definition cache listens on. */
export const SNAPSHOT_NOTICE_CHANNEL = DEFINITIONS_CHANNEL;

/** The definition-cache scope of a workspace's snapshots (a notice's payload). */
export const snapshotScope = (workspaceId: string): string => `snapshots:${workspaceId}`;

/**
 * One runtime's listeners to the snapshots committed through it. The runtime builds it (runtimeState:
 * ServiceDependencies.snapshotNotices) and capabilities reach it through their context
 * (ctx.snapshotNotices), so a commit in one runtime tells only that runtime's listeners.
 */
export class SnapshotNotices {
  private readonly listeners = new Set<(workspaceId: string) => void>();

  /** A snapshot of `workspaceId` committed through this runtime (its own transaction, now committed). */
  committed(workspaceId: string): void {
    for (const listener of this.listeners) listener(workspaceId);
  }

  onCommitted(listener: (workspaceId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
