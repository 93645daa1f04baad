import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import type { createActivities } from '../../activities';
import { searchAttributeRegistrations } from '../../core/temporal';
import { portIsOpen } from '../../scripts/infra/process';
import { ensureTemporalTestServer } from '../../scripts/infra/temporal-test-server';
import { workflowBundlePath } from '../../worker/workflow-bundle';
import { freePort } from './processes';

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

/**
 * Temporal's test server on a port of its own, once it accepts connections. The SDK can start it
 * too (createTimeSkipping with an 'existing-path' executable) but gives it 5 s, which the JVM
 * overruns on a busy machine of two cores.
 */
async function startTestServer(timeoutMs = 60_000): Promise<{ address: string; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(ensureTemporalTestServer(), [String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-4_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = false;
  const gone = new Promise<void>((resolve) => child.once('exit', () => {
    exited = true;
    resolve();
  }));
  const stop = async () => {
    if (!exited) child.kill('SIGTERM');
    await gone;
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await portIsOpen('127.0.0.1', port))) {
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(`Temporal's test server on port ${port} ${exited ? 'exited' : `did not open its port in ${timeoutMs / 1000} s`}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { address: `127.0.0.1:${port}`, stop };
}

/**
 * The environment createTimeSkipping builds, on a server already running: the SDK offers this only
 * without time skipping (createFromExistingServer), so its own factory is called as that one calls
 * it, with the test service on.
 */
function timeSkippingEnvironmentOn(address: string): Promise<TestWorkflowEnvironment> {
  const factory = TestWorkflowEnvironment as unknown as {
    create(options: { server: { type: 'existing' }; supportsTimeSkipping: true; namespace: string; address: string }): Promise<TestWorkflowEnvironment>;
  };
  return factory.create({ server: { type: 'existing' }, supportsTimeSkipping: true, namespace: 'default', address });
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
 * Starts a test server of its own (a second or two) and one worker on it, which registers the
 * activities named and hands each call to the running test's mock: one per test file, whose tests
 * run one at a time, as time skipping is the server's.
 */
export async function startWorkflowTestEnvironment(activityNames: readonly (keyof Activities)[]): Promise<WorkflowTestEnvironment> {
  // The SDK logs each worker's state changes, and its core warns that this server lacks a newer
  // server's capabilities. A process installs its runtime once: in `npm test` the environment's
  // worker has installed it already.
  if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } } });
  const [{ codePath }, server] = await Promise.all([workflowBundlePath(), startTestServer()]);
  const env = await timeSkippingEnvironmentOn(server.address).catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  const teardownEnvironment = async () => {
    await env.teardown();
    await server.stop();
  };
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
    await teardownEnvironment();
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
      await teardownEnvironment();
    },
  };
}

/** The server's clock moved at least `ms` (a timer's or a backoff's) while less real time passed: the wait was skipped. */
export function assertSkipped({ serverMs, realMs }: Clocked<unknown>, ms: number, what: string): void {
  assert.ok(serverMs >= ms, `${what}: the server's clock moved ${serverMs} ms, less than the ${ms} ms awaited`);
  assert.ok(realMs < ms, `${what}: ${realMs} ms of real time passed, no less than the ${ms} ms skipped`);
}
