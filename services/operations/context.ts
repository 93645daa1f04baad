import type { Client } from '@temporalio/client';
import type { Db, Executor } from '../../db/connection';
import type { Project } from '../../db/models';
import type { Principal } from '../tenancy/access';
import type { KeyUsageRecorder } from '../tenancy/key-usage';

/** What the service layer reaches, built once per process (API, worker, admin CLI). */
export interface ServiceDependencies {
  db: Db;
  temporal: Client;
  encryptionKey: Buffer;
  /** Records when keys were last used; the API process has one, the worker and CLI need none. */
  keyUsage?: KeyUsageRecorder;
}

/** What activities have: the database and the encryption key; Temporal only through their workflow. */
export type ActivityDependencies = Pick<ServiceDependencies, 'db' | 'encryptionKey'>;

/** The door a call came through: for logs and the few answers that differ by transport. */
export type Door = 'http' | 'mcp' | 'sparql' | 'activity' | 'admin';

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
}

/**
 * What an operation's function gets: the one context object of the service layer. `db` is the
 * operation's transaction when it writes, the pool otherwise.
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
}
