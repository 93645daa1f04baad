import { env } from '../../support/environment';
import { RunningScript, startApiScript } from '../../support/processes';

/**
 * More API processes on the test database (each a real `scripts/start.ts api`, as
 * test/integration/api/request-limits.test.ts starts one), beside the test environment's own in-process API.
 * Use inside a describe block: the processes start before its tests and stop after them.
 */
export function useApiProcesses(extra: number): { urls: string[] } {
  const context = { urls: [] as string[] };
  const running: RunningScript[] = [];
  before(async function () {
    this.timeout(180_000);
    // Started at once: a process's start is mostly loading its modules, on one core of the two.
    const started = await Promise.allSettled(Array.from({ length: extra }, () => startApiScript({ LOG_LEVEL: 'error' }, 120_000)));
    const up = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    running.push(...up.map(({ api }) => api));
    const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
    context.urls.push(env().baseUrl, ...up.map(({ url }) => url));
  });
  after(async function () {
    this.timeout(60_000);
    for (const script of running) {
      if (script.child.exitCode === null) await script.stop('SIGTERM');
    }
  });
  return context;
}

/** Starts `count` requests at once (fire gets the index, e.g. to pick a process round robin) and waits for all. */
export function burst<T>(count: number, fire: (index: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => fire(i)));
}
