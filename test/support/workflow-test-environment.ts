import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import type { createActivities } from '../../activities';
import { searchAttributeRegistrations } from '../../core/temporal';
import { ensureTemporalTestServer } from '../../scripts/infra/temporal-test-server';
import { workflowBundlePath } from '../../worker/workflow-bundle';

// Workflow unit tests: the worker's workflow bundle run by Temporal's time-skipping test server
// (scripts/infra/temporal-test-server.ts) against mocked activities. Awaiting a workflow's result
// lets the server skip ahead to its next timer or retry, so neither takes real time.

/** Every activity the worker registers, as createActivities builds them: mocks take their shapes. */
export type Activities = ReturnType<typeof createActivities>;

export interface ActivityCall {
  name: keyof Activities;
  /** The activity's argument (each takes one object, or none). */
  input: unknown;
}

/** Mocked activities that note each call, attempts included, in the order the worker ran them. */
export function mockActivities(mocks: Partial<Activities>): { activities: Partial<Activities>; calls: ActivityCall[] } {
  const calls: ActivityCall[] = [];
  const activities = Object.fromEntries(Object.entries(mocks).map(([name, mock]) => [
    name,
    (...args: unknown[]) => {
      calls.push({ name: name as keyof Activities, input: args[0] });
      return (mock as (...a: unknown[]) => unknown)(...args);
    },
  ])) as Partial<Activities>;
  return { activities, calls };
}

export interface Clocked<T> {
  result: T;
  /** How far the test server's clock moved: real time, plus the time it skipped. */
  serverMs: number;
  realMs: number;
}

export interface WorkflowTestEnvironment {
  env: TestWorkflowEnvironment;
  /** The task queue the environment's worker polls. */
  taskQueue: string;
  /** Runs `work` while the worker's activities are these mocks (any other activity fails, unretried). */
  withActivities<T>(activities: Partial<Activities>, work: (taskQueue: string) => Promise<T>): Promise<T>;
  /** withActivities, measuring the server's clock and the real one. */
  clocked<T>(activities: Partial<Activities>, work: (taskQueue: string) => Promise<T>): Promise<Clocked<T>>;
  teardown(): Promise<void>;
}

/**
 * Starts a test server of its own (about a second) and one worker on it, which registers the
 * activities named and hands each call to the running test's mock: one per test file, whose tests
 * run one at a time, as time skipping is the server's.
 */
export async function startWorkflowTestEnvironment(activityNames: readonly (keyof Activities)[]): Promise<WorkflowTestEnvironment> {
  // The SDK logs each worker's state changes, and its core warns that this server lacks a newer
  // server's capabilities. A process installs its runtime once: in `npm test` the environment's
  // worker has installed it already.
  if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });
  const [{ codePath }, env] = await Promise.all([
    workflowBundlePath(),
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path: ensureTemporalTestServer() } } }),
  ]);
  let mocks: Partial<Activities> = {};
  const taskQueue = `workflow-test-${randomUUID()}`;
  let worker: Worker;
  try {
    // Without them the server never starts a child that carries them (a scheduled launch's run).
    await env.connection.operatorService.addSearchAttributes({ namespace: env.namespace ?? 'default', searchAttributes: searchAttributeRegistrations() });
    worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowBundle: { codePath },
      activities: Object.fromEntries(activityNames.map((name) => [name, (...args: unknown[]) => {
        const mock = mocks[name] as ((...a: unknown[]) => unknown) | undefined;
        if (!mock) throw ApplicationFailure.nonRetryable(`The activity ${name} is not mocked in this test.`, 'activity_not_mocked');
        return mock(...args);
      }])),
      // An activity still running when the file ends (a canceled one) does not hold the worker up.
      shutdownGraceTime: '1 second',
    });
  } catch (error) {
    await env.teardown();
    throw error;
  }
  const running = worker.run();
  const stopped = running.then(() => Promise.reject(new Error('the workflow test worker stopped')));
  stopped.catch(() => undefined);
  const withActivities: WorkflowTestEnvironment['withActivities'] = async (activities, work) => {
    mocks = activities;
    try {
      return await Promise.race([work(taskQueue), stopped]);
    } finally {
      mocks = {};
    }
  };
  return {
    env,
    taskQueue,
    withActivities,
    async clocked(activities, work) {
      const [realStart, serverStart] = [Date.now(), await env.currentTimeMs()];
      const result = await withActivities(activities, work);
      return { result, serverMs: (await env.currentTimeMs()) - serverStart, realMs: Date.now() - realStart };
    },
    async teardown() {
      worker.shutdown();
      await running;
      await env.teardown();
    },
  };
}

/** The server's clock moved at least `ms` (a timer's or a backoff's) while less real time passed: the wait was skipped. */
export function assertSkipped({ serverMs, realMs }: Clocked<unknown>, ms: number, what: string): void {
  assert.ok(serverMs >= ms, `${what}: the server's clock moved ${serverMs} ms, less than the ${ms} ms awaited`);
  assert.ok(realMs < ms, `${what}: ${realMs} ms of real time passed, no less than the ${ms} ms skipped`);
}
