// The one way tests wait for something they cannot be told of: poll a condition. Never a fixed
// sleep before an assertion.

/** Probes until `done` holds or `ms` pass, and answers the last value probed either way (the caller asserts on it). */
export async function within<T>(ms: number, probe: () => T | Promise<T>, done: (value: T) => boolean, everyMs = 50): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Polls `check` until it answers something truthy, and fails after `timeoutMs` saying what it waited for. */
export async function until<T>(what: string, check: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 60_000, intervalMs = 50): Promise<T> {
  const value = await within(timeoutMs, check, Boolean, intervalMs);
  if (!value) throw new Error(`waited ${timeoutMs / 1000} s for ${what}`);
  return value;
}

/** Probes until `done` holds of the value, and fails after `timeoutMs` with what it waited for and the last value probed. */
export async function settled<T>(what: string, probe: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000, intervalMs = 50): Promise<T> {
  const value = await within(timeoutMs, probe, done, intervalMs);
  if (!done(value)) throw new Error(`waited ${timeoutMs / 1000} s for ${what}; last: ${JSON.stringify(value)?.slice(0, 500)}`);
  return value;
}
