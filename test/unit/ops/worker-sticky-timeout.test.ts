import assert from 'node:assert/strict';
import { workerStickyTimeoutMs } from '../../../core/config';

// WEFT_WORKER_STICKY_TIMEOUT_MS: how soon a dead worker's runs go on elsewhere (docs/operating/configuration.md).
describe('The worker’s sticky-queue timeout setting', () => {
  const saved = process.env.WEFT_WORKER_STICKY_TIMEOUT_MS;
  afterEach(() => {
    if (saved === undefined) delete process.env.WEFT_WORKER_STICKY_TIMEOUT_MS;
    else process.env.WEFT_WORKER_STICKY_TIMEOUT_MS = saved;
  });

  it('is the SDK’s 10 s unless set, and the milliseconds set otherwise', () => {
    delete process.env.WEFT_WORKER_STICKY_TIMEOUT_MS;
    assert.equal(workerStickyTimeoutMs(), 10_000);
    process.env.WEFT_WORKER_STICKY_TIMEOUT_MS = ' 1000 ';
    assert.equal(workerStickyTimeoutMs(), 1000);
  });

  it('refuses what is no whole number of milliseconds from 1000 to 600000, naming the setting', () => {
    for (const value of ['999', '600001', '1.5', '-1000', '10s']) {
      process.env.WEFT_WORKER_STICKY_TIMEOUT_MS = value;
      assert.throws(() => workerStickyTimeoutMs(), /WEFT_WORKER_STICKY_TIMEOUT_MS must be a whole number of milliseconds from 1000 to 600000/, value);
    }
  });
});
