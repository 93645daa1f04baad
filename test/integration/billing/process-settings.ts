/**
 * Mocha hooks that save the named environment variables before a describe block and put them back
 * after it: billing and credit settings are read from process.env on every use, and the test API
 * and worker run in this process.
 */
export function useProcessSettings(names: string[]): { set(values: Record<string, string | undefined>): void } {
  const saved: Record<string, string | undefined> = {};
  before(() => {
    for (const name of names) saved[name] = process.env[name];
  });
  after(() => {
    for (const name of names) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });
  return {
    /** Sets these variables and clears the other named ones. */
    set(values) {
      for (const name of names) {
        const value = values[name];
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    },
  };
}
