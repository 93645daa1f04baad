import type { Knex } from 'knex';
import type pg from 'pg';
import type { Clock } from '../../core/clock';
import type { Db } from '../../db/connection';
import { logger } from '../../core/logger';

// Definitions every request reads change rarely: projects, the SPARQL catalog, a workspace's plan
// and alert settings, data endpoints with their installations and read grants, the organization,
// and authenticated keys with their limits. Each runtime keeps them in memory per workspace (its
// deps.definitions, built and closed with its runtime state, services/operations/context.ts) and
// drops a workspace's entries when its definitions change:
// - at once in the runtime that changed them (invoke, after the transaction commits);
// - in every other runtime, of this process or another, through PostgreSQL NOTIFY weft_definitions,
//   sent at commit by the triggers of migrations 20261129090000 and 20261129100000;
// - after DEFINITION_CACHE_TTL_MS on the runtime's clock at the latest, the backstop should a
//   notification ever be missed.
// Nothing is cached while the cache is not listening (before its LISTEN is confirmed, and from
// a lost listening connection until it is back), so a missed notification cannot leave a stale
// entry beyond the TTL. A load that overlaps a change is used once and not kept (the generations
// below), so an entry never predates the last change it was told of.

/** The channel of definition changes; snapshot notices (plugins/snapshot-notices.ts) use it too. */
export const DEFINITIONS_CHANNEL = 'weft_definitions';
/** The longest an entry is kept without being told it changed, on the runtime's clock. */
export const DEFINITION_CACHE_TTL_MS = Number(process.env.WEFT_DEFINITION_CACHE_TTL_MS ?? 5_000);
const RECONNECT_MS = 1_000;
/** How long closing waits for the server to end the listener's connection before dropping it. */
const CLOSE_WAIT_MS = 2_000;

interface Ticket {
  workspaceId?: string;
  generation: number;
  epoch: number;
}

interface Entry {
  value: unknown;
  expiresAt: number;
}

/** One runtime's definition cache, listening on its pool's database and timed by its clock. */
export class DefinitionCache {
  private readonly entries = new Map<string, Map<string, Entry>>();
  /** Bumped by every change of a workspace; a load started under an older generation is not kept. */
  private readonly generations = new Map<string, number>();
  private epoch = 0;
  /** Every change counted, for tickets taken before the workspace is known. */
  private changes = 0;
  private listener?: { connection?: pg.Client; closed: boolean; retry?: NodeJS.Timeout };
  private listening = false;
  private readonly listeners = new Set<(workspaceId: string | undefined) => void>();
  /** Who waits for the LISTEN to be confirmed (whenListening). */
  private readonly awaitingListen = new Set<() => void>();
  /** Reads in flight, by workspace and key, with the ticket they were started under. */
  private readonly loading = new Map<string, { ticket: Ticket; value: Promise<unknown> }>();

  constructor(private readonly db: Db, private readonly clock: Clock) {}

  /** The cached value of `key` in `workspaceId`, or what `load` reads (and keeps, when it may). */
  async get<T>(workspaceId: string, key: string, load: () => Promise<T>): Promise<T> {
    this.listen();
    // An absent definition (undefined, such as a workspace without alert settings) is kept too:
    // otherwise every request would read it again.
    const kept = this.entries.get(workspaceId)?.get(key);
    if (kept && kept.expiresAt > this.clock.now()) return kept.value as T;
    const ticket = this.ticket(workspaceId);
    // Requests that miss together share one read (an entry expiring under load was read again by
    // every request in flight): a read started before a change of the workspace is not joined.
    const slot = `${workspaceId}\n${key}`;
    const loading = this.loading.get(slot);
    if (loading && loading.ticket.generation === ticket.generation && loading.ticket.epoch === ticket.epoch) return loading.value as Promise<T>;
    const value = load().then((loaded) => {
      this.keep(workspaceId, key, loaded, ticket);
      return loaded;
    });
    const shared = { ticket, value };
    this.loading.set(slot, shared);
    const done = () => {
      if (this.loading.get(slot) === shared) this.loading.delete(slot);
    };
    value.then(done, done);
    return value;
  }

  /** A kept value, if there is a fresh one. */
  peek<T>(workspaceId: string, key: string): T | undefined {
    const kept = this.entries.get(workspaceId)?.get(key);
    return kept && kept.expiresAt > this.clock.now() ? (kept.value as T) : undefined;
  }

  /**
   * Taken before reading a definition: keep() refuses the value if its workspace changed meanwhile.
   * Without a workspace (a read that learns it, such as a key's), any change anywhere refuses it.
   */
  ticket(workspaceId?: string): Ticket {
    return { workspaceId, generation: workspaceId ? this.generationOf(workspaceId) : this.changes, epoch: this.epoch };
  }

  /** Keeps a value read under `ticket`, unless the workspace changed since or the process is not listening. */
  keep(workspaceId: string, key: string, value: unknown, ticket: Ticket): void {
    if (!this.listening || ticket.epoch !== this.epoch) return;
    if (ticket.workspaceId === undefined ? ticket.generation !== this.changes : ticket.workspaceId !== workspaceId || ticket.generation !== this.generationOf(workspaceId)) return;
    let workspace = this.entries.get(workspaceId);
    if (!workspace) this.entries.set(workspaceId, (workspace = new Map()));
    workspace.set(key, { value, expiresAt: this.clock.now() + DEFINITION_CACHE_TTL_MS });
  }

  /** Starts listening for changes (the first read does it too), so later reads may be kept. */
  start(): void {
    this.listen();
  }

  /**
   * Starts listening, and resolves once the LISTEN is confirmed: from then on reads may be kept, and
   * the confirmation's changedEverywhere (which returns every lease its listeners hold) is behind.
   */
  whenListening(): Promise<void> {
    this.listen();
    return this.listening ? Promise.resolve() : new Promise((resolve) => this.awaitingListen.add(resolve));
  }

  /** The workspace's definitions changed: its entries go, and loads under way are not kept. */
  changed(workspaceId: string): void {
    this.changes += 1;
    this.entries.delete(workspaceId);
    this.generations.set(workspaceId, this.generationOf(workspaceId) + 1);
    for (const listener of this.listeners) listener(workspaceId);
  }

  /** Calls `listener` on every change: with the workspace, or with none when everything changed. */
  onChange(listener: (workspaceId: string | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Something changed whose workspace is unknown here (or notifications may have been missed). */
  changedEverywhere(): void {
    this.entries.clear();
    this.generations.clear();
    this.epoch += 1;
    for (const listener of this.listeners) listener(undefined);
  }

  private generationOf(workspaceId: string): number {
    return this.generations.get(workspaceId) ?? 0;
  }

  /** Starts listening on a connection of its own, outside the pool (LISTEN holds its connection). */
  private listen(): void {
    if (this.listener) return;
    const listener: NonNullable<DefinitionCache['listener']> = { closed: false };
    this.listener = listener;
    const connect = async () => {
      try {
        const connection = (await (this.db.client as Knex.Client).acquireRawConnection()) as pg.Client;
        if (listener.closed) return void connection.end().catch(() => undefined);
        listener.connection = connection;
        // The listener must not keep a finished process alive (close() ends it on a clean stop).
        (connection as unknown as { connection?: { stream?: { unref?(): void } } }).connection?.stream?.unref?.();
        connection.on('notification', (message) => (message.payload ? this.changed(message.payload) : this.changedEverywhere()));
        connection.on('error', (error) => logger.warn({ err: error }, 'the definition-change listener lost its connection; reconnecting'));
        connection.on('end', () => {
          // The end of a listener that close() replaced says nothing about the current one.
          if (this.listener !== listener) return;
          this.listening = false;
          this.changedEverywhere();
          listener.connection = undefined;
          if (!listener.closed) listener.retry = setTimeout(() => void connect(), RECONNECT_MS).unref();
        });
        await connection.query(`LISTEN ${DEFINITIONS_CHANNEL}`);
        // Whatever changed before LISTEN took effect was never cached: nothing is kept until now.
        this.changedEverywhere();
        this.listening = true;
        for (const resolve of this.awaitingListen) resolve();
        this.awaitingListen.clear();
      } catch (error) {
        logger.warn({ err: error }, 'the definition-change listener could not connect; retrying');
        if (!listener.closed) listener.retry = setTimeout(() => void connect(), RECONNECT_MS).unref();
      }
    };
    void connect();
  }

  /** Stops listening and forgets everything (its runtime is closing, before its pool; the next read listens again). */
  async close(): Promise<void> {
    const listener = this.listener;
    if (!listener) return;
    listener.closed = true;
    clearTimeout(listener.retry);
    this.listener = undefined;
    this.listening = false;
    this.changedEverywhere();
    const connection = listener.connection;
    if (!connection) return;
    // Its socket was unref'd so that listening never holds a process up; while it closes it must,
    // or a process with nothing else left exits with this close pending and its caller cut off.
    // A server that never answers the goodbye (a half-open connection) gets CLOSE_WAIT_MS, then
    // the socket is destroyed, which ends the connection too.
    const stream = (connection as unknown as { connection?: { stream?: { ref?(): void; destroy?(): void } } }).connection?.stream;
    stream?.ref?.();
    const giveUp = setTimeout(() => stream?.destroy?.(), CLOSE_WAIT_MS);
    await connection.end().catch(() => undefined);
    clearTimeout(giveUp);
  }
}
