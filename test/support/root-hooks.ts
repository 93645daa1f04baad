import { definitionsListening, releaseClock, startEnvironment, stopEnvironment } from './environment';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    // The first worker start bundles workflow code with webpack: allow for it.
    this.timeout(180_000);
    await startEnvironment();
  },
  beforeEach: definitionsListening,
  afterEach() {
    releaseClock();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopEnvironment();
  },
};
