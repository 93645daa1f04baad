import assert from 'node:assert/strict';
import { sweepEvery } from '../../services/shared/housekeeping';

describe('sweepEvery: a periodic sweep runs one at a time', () => {
  it('skips a tick while the previous sweep is in flight, and stop() waits for it', async () => {
    let sweeps = 0;
    let finish!: () => void;
    // An interval no test waits for: the ticks are called directly.
    const sweeper = sweepEvery(3_600_000, () => {
      sweeps += 1;
      // The first sweep hangs until the test lets it end; later ones end at once.
      return sweeps === 1 ? new Promise<void>((resolve) => (finish = resolve)) : Promise.resolve();
    });
    const first = sweeper.tick();
    assert.equal(sweeper.tick(), first, 'a tick during the sweep joins it');
    assert.equal(sweeps, 1);
    let stopped = false;
    const stopping = sweeper.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(stopped, false, 'stop() waits for the sweep in flight');
    finish();
    await stopping;
    assert.equal(stopped, true);
    await sweeper.tick();
    assert.equal(sweeps, 2, 'once it ended, a tick sweeps again');
  });

  it('a failed sweep does not stop the next one', async () => {
    let sweeps = 0;
    const sweeper = sweepEvery(3_600_000, async () => {
      sweeps += 1;
      throw new Error('the database is away');
    });
    await sweeper.tick();
    await sweeper.tick();
    assert.equal(sweeps, 2);
    await sweeper.stop();
  });
});
