import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { connectTemporal, createTemporalClient } from '../../../core/temporal';
import { startTemporalDevServer, TemporalDevServer } from '../../../scripts/infra/temporal-server';
import { freePort } from '../../support/processes';

/**
 * A Temporal dev server of the pinned CLI that one test file owns: its own port and its own SQLite
 * file in a temporary folder, so the file can SIGKILL it (a crash of the whole cluster) and start
 * it again on the same file without touching the suite's server. The namespace and search
 * attributes are temporal.yaml's, as `npm start` registers them.
 */
export class OwnTemporal {
  private server?: TemporalDevServer;
  private connection?: Connection;
  private folder = '';
  private port = 0;
  address = '';

  async start(): Promise<this> {
    this.folder ||= mkdtempSync(path.join(os.tmpdir(), 'weft-own-temporal-'));
    this.port ||= await freePort();
    this.server = await startTemporalDevServer({ port: this.port, database: path.join(this.folder, 'temporal.db'), logFile: path.join(this.folder, 'dev-server.log') });
    this.address = this.server.address;
    return this;
  }

  get running(): boolean {
    return this.server !== undefined;
  }

  /** SIGKILLs the server (no shutdown of any kind) and resolves once it has exited. */
  async kill(): Promise<void> {
    await this.dropClient();
    await this.server?.stop('SIGKILL');
    this.server = undefined;
  }

  async close(): Promise<void> {
    await this.dropClient();
    await this.server?.stop('SIGTERM');
    this.server = undefined;
    if (this.folder) rmSync(this.folder, { recursive: true, force: true });
  }

  /** A client of this server (made again after a restart). */
  async client(): Promise<Client> {
    this.connection ??= await connectTemporal(this.address);
    return createTemporalClient(this.connection);
  }

  private async dropClient(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    await connection?.close().catch(() => undefined);
  }
}

/** One activity as its workflow's history records it: the attempt that ended it and how. */
export interface RecordedActivity {
  type: string;
  /** The attempt whose outcome the history kept (1 unless Temporal retried it). */
  attempt: number;
  /** Why the attempt before it ended (a heartbeat timeout, for an attempt Temporal lost track of). */
  lastFailure: string | null;
  outcome: 'completed' | 'failed' | 'timed_out' | 'canceled' | 'pending';
  result: unknown;
}

/** The activities of a workflow, in the order they were scheduled, read from its history. */
export async function recordedActivities(client: Client, workflowId: string): Promise<RecordedActivity[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const byScheduled = new Map<string, RecordedActivity>();
  for (const event of history.events ?? []) {
    const id = String(event.eventId);
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) byScheduled.set(id, { type: scheduled.activityType?.name ?? '', attempt: 1, lastFailure: null, outcome: 'pending', result: undefined });
    const started = event.activityTaskStartedEventAttributes;
    const startedOne = started && byScheduled.get(String(started.scheduledEventId));
    if (startedOne) {
      startedOne.attempt = started.attempt ?? 1;
      startedOne.lastFailure = started.lastFailure ? `${started.lastFailure.timeoutFailureInfo ? 'timeout: ' : ''}${started.lastFailure.message ?? ''}` : null;
    }
    const ended = [
      ['completed', event.activityTaskCompletedEventAttributes],
      ['failed', event.activityTaskFailedEventAttributes],
      ['timed_out', event.activityTaskTimedOutEventAttributes],
      ['canceled', event.activityTaskCanceledEventAttributes],
    ] as const;
    for (const [outcome, attributes] of ended) {
      const endedOne = attributes && byScheduled.get(String(attributes.scheduledEventId));
      if (!endedOne) continue;
      endedOne.outcome = outcome;
      const payload = outcome === 'completed' ? event.activityTaskCompletedEventAttributes!.result?.payloads?.[0] : undefined;
      endedOne.result = payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
    }
  }
  return [...byScheduled.values()];
}
