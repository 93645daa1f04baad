import { env } from '../../support/environment';
import { RunningScript, startApiScript } from '../../support/processes';

/**
 * More API processes on the test database (each a real `scripts/start.ts api`, as
 * test/api/request-limits.test.ts starts one), beside the test environment's own in-process API.
 * Use inside a describe block: the processes start before its tests and stop after them.
 */
export function useApiProcesses(extra: number): { urls: string[] } {
  const context = { urls: [] as string[] };
  const running: RunningScript[] = [];
  before(async function () {
    this.timeout(180_000);
    // One at a time: each process compiles its TypeScript on start, and the machine is shared.
    for (let i = 0; i < extra; i++) {
      const { api, url } = await startApiScript({ LOG_LEVEL: 'error' }, 120_000);
      running.push(api);
      context.urls.push(url);
    }
    context.urls.unshift(env().baseUrl);
  });
  after(async function () {
    this.timeout(60_000);
    for (const script of running) {
      if (script.child.exitCode === null) await script.stop('SIGTERM');
    }
  });
  return context;
}

export const WINDOW_MS = 60_000;

/**
 * Request limits count in fixed 60-second windows. Waits, if needed, until a window has just
 * begun (by this machine's clock, which the database shares), so that a burst of `needMs` fits in
 * one window. Windows aligned to the minute are the documented design; the caller still checks
 * from the answers' X-RateLimit-Reset that the whole burst saw one window.
 */
export async function startOfWindow(needMs = 20_000): Promise<void> {
  const into = Date.now() % WINDOW_MS;
  if (into >= 1_000 && into + needMs < WINDOW_MS) return;
  await new Promise((resolve) => setTimeout(resolve, WINDOW_MS - into + 1_000));
}

/** Starts `count` requests at once (fire gets the index, e.g. to pick a process round robin) and waits for all. */
export function burst<T>(count: number, fire: (index: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => fire(i)));
}
