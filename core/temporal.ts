import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TemporalConnectionOptions, temporalConnectionOptions, temporalSettings } from './temporal-config';
import { logger } from './logger';
import { tracingClientInterceptor } from '../observability/tracing';

/** A client connection to `target` (an address, or options from temporalConnectionOptions), secured as TEMPORAL_TLS_* / TEMPORAL_API_KEY say. */
export async function connectTemporal(target: string | TemporalConnectionOptions = temporalConnectionOptions()): Promise<Connection> {
  const options = typeof target === 'string' ? temporalConnectionOptions(target) : target;
  return withoutLastingPromiseHooks(await Connection.connect({ ...options, connectTimeout: '10s' }));
}

/**
 * A connection's call context (withDeadline, withMetadata; the client sets the namespace header
 * through it on every namespaced call, a workflow start included) is an AsyncLocalStorage, and in
 * Node 20 one that has run once installs promise hooks for good: about half a microsecond on every
 * await in the process, every request's included. The client reads the context only while it
 * makes the call, synchronously inside `run` (the call's metadata is built then), so the storage is
 * switched off again as each `run` returns. A deadline set with withDeadline around code that
 * awaits before its call would be lost: Weft sets none.
 */
function withoutLastingPromiseHooks(connection: Connection): Connection {
  const storage = connection.callContextStorage;
  const run = storage.run.bind(storage) as (store: unknown, work: () => unknown) => unknown;
  Object.assign(storage, {
    run(store: unknown, work: () => unknown) {
      try {
        return run(store, work);
      } finally {
        storage.disable();
      }
    },
  });
  storage.disable();
  return connection;
}

export function createTemporalClient(connection: Connection, namespace = temporalSettings().namespace): Client {
  return new Client({ connection, namespace, interceptors: { workflow: [tracingClientInterceptor] } });
}

// The wire enum wants numbers: names sent as strings arrive as UNSPECIFIED and are refused.
const IndexedValueType = temporal.api.enums.v1.IndexedValueType;
const indexedValueTypes = {
  Keyword: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Text: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Int: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
} as const;

/** Search attributes (temporal.yaml's, by default) as operatorService.addSearchAttributes takes them. */
export function searchAttributeRegistrations(entries = Object.entries(temporalSettings().searchAttributes)): Record<string, temporal.api.enums.v1.IndexedValueType> {
  return Object.fromEntries(entries.map(([name, type]) => [name, indexedValueTypes[type]]));
}

/**
 * Registers the namespace and Weft's search attributes on a cluster that lacks them (an external
 * TEMPORAL_ADDRESS, or a dev server started by someone else). A managed cluster that forbids this
 * logs a warning: its operator registers them instead.
 */
export async function ensureNamespaceAndSearchAttributes(connection: Connection): Promise<void> {
  const { namespace, searchAttributes } = temporalSettings();
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch {
    try {
      await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: { seconds: 7 * 24 * 3600 } as never });
      logger.info({ namespace }, 'registered Temporal namespace');
    } catch (error) {
      logger.warn({ namespace, err: (error as Error).message }, 'could not register the Temporal namespace');
    }
  }
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const known = new Set(Object.keys(existing.customAttributes ?? {}));
    const missing = Object.entries(searchAttributes).filter(([name]) => !known.has(name));
    if (missing.length === 0) return;
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: searchAttributeRegistrations(missing),
    });
    logger.info({ namespace, added: missing.map(([name]) => name) }, 'registered Temporal search attributes');
  } catch (error) {
    logger.warn({ namespace, err: (error as Error).message }, 'could not register Temporal search attributes');
  }
}
