import { DefaultLogger, LogLevel, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { Db } from '../db/connection';
import { closeRuntimeState, type ServiceDependencies, workerDependencies } from '../services/operations/context';
import type { Clock } from '../core/clock';
import type { DefinitionCache } from '../services/shared/definition-cache';
import { logger } from '../core/logger';
import { TemporalConnectionOptions, temporalConnectionOptions } from '../core/temporal-config';
import { workflowBundlePath } from './workflow-bundle';
import { temporalTelemetryOptions } from '../observability/temporal-metrics';
import { activeTracer, workerTracingOptions } from '../observability/tracing';

const bundles = new Map<boolean, Promise<{ codePath: string }>>();
let runtimeInstalled = false;

/**
 * The SDK logs every worker state change at INFO; Weft's own logs say what matters. With an
 * address, the SDK's own metrics are served there (the worker's /metrics appends them).
 */
function installRuntime(temporalMetricsAddress?: string): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const level = (process.env.TEMPORAL_LOG_LEVEL ?? 'WARN') as LogLevel;
  Runtime.install({ logger: new DefaultLogger(level), ...(temporalMetricsAddress ? { telemetryOptions: temporalTelemetryOptions(temporalMetricsAddress) } : {}) });
}

/** Finds (or builds) the workflow bundle once per process and variant (traced or not): every worker started in it reuses it. */
function workflowBundle(traced: boolean): Promise<{ codePath: string }> {
  let bundle = bundles.get(traced);
  if (bundle) return bundle;
  bundle = workflowBundlePath(undefined, traced).then(({ codePath, built }) => {
    logger.info({ codePath, built }, built ? 'workflow bundle built' : 'workflow bundle reused');
    return { codePath };
  });
  bundles.set(traced, bundle);
  bundle.catch(() => bundles.delete(traced));
  return bundle;
}

export interface WeftWorkerOptions {
  db: Db;
  encryptionKey: Buffer;
  temporalAddress: string;
  /** How to reach the cluster; by default temporalAddress secured as TEMPORAL_TLS_* / TEMPORAL_API_KEY say. */
  temporalConnection?: TemporalConnectionOptions;
  namespace: string;
  taskQueue: string;
  /** Where the SDK serves its own Prometheus metrics (the first worker of a process decides). */
  temporalMetricsAddress?: string;
  /** The activities' definition cache: their own unless given (the test environment shares one among its runtimes). */
  definitions?: DefinitionCache;
  /** The activities' clock: the system's unless given (the test environment's, which a test moves). */
  clock?: Clock;
  /** How long a workflow's next task waits for this worker before another takes it (workerStickyTimeoutMs). */
  stickyTimeoutMs?: number;
}

export interface RunningWorker {
  /** The activities' dependencies (their metering among them). */
  deps: ServiceDependencies;
  /** Stops polling, lets in-flight tasks finish, closes the connection, then the activities' runtime state (closeRuntimeState). */
  shutdown(): Promise<void>;
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
}

export async function startWorker(options: WeftWorkerOptions): Promise<RunningWorker> {
  installRuntime(options.temporalMetricsAddress);
  const connection = await NativeConnection.connect(options.temporalConnection ?? temporalConnectionOptions(options.temporalAddress));
  const deps = workerDependencies({ db: options.db, encryptionKey: options.encryptionKey, definitions: options.definitions, clock: options.clock });
  const worker = await Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowBundle: await workflowBundle(activeTracer() !== undefined),
    activities: createActivities(deps),
    shutdownGraceTime: '30s',
    ...(options.stickyTimeoutMs ? { stickyQueueScheduleToStartTimeout: options.stickyTimeoutMs } : {}),
    ...workerTracingOptions(),
  });
  const done = worker.run().finally(() => connection.close());
  logger.info({ taskQueue: options.taskQueue, namespace: options.namespace }, 'worker polling');
  return {
    deps,
    done,
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
      await closeRuntimeState(deps);
    },
  };
}
