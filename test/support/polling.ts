// The one way tests wait for something they cannot be told of: poll a condition, fail saying what
// was awaited. Never a fixed sleep before an assertion.

/** Polls `check` until it answers something truthy, and fails after `timeoutMs` saying what it waited for. */
export async function until<T>(what: string, check: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 60_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs / 1000} s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
