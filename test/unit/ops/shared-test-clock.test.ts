import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileHeldClock, SettableClock } from '../../../core/clock';
import { testClockFile } from '../../../core/config';

// A test's clock shared with the processes it starts (WEFT_TEST_CLOCK_FILE): what the test holds,
// sets and moves is the time every one of them reads, and the system's once it lets go.
describe('A test clock shared through a file', () => {
  let folder: string;
  let file: string;
  beforeEach(() => {
    folder = mkdtempSync(path.join(os.tmpdir(), 'weft-clock-'));
    file = path.join(folder, 'clock');
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it('gives another process the time held, set and moved, and the system clock while none is held', () => {
    const held = new SettableClock(file);
    const follower = new FileHeldClock(file);
    const before = Date.now();
    assert.equal(follower.databaseTime(), null, 'nothing held: the database decides');
    assert.ok(follower.now() >= before && follower.now() <= Date.now());
    held.set(Date.UTC(2026, 0, 1, 12));
    assert.equal(follower.now(), Date.UTC(2026, 0, 1, 12));
    assert.deepEqual(follower.databaseTime(), new Date(Date.UTC(2026, 0, 1, 12)));
    held.advance(2_500);
    assert.equal(follower.now(), Date.UTC(2026, 0, 1, 12) + 2_500);
    held.release();
    assert.equal(follower.databaseTime(), null);
    assert.ok(Math.abs(follower.now() - Date.now()) < 1_000);
    held.close();
    assert.equal(follower.databaseTime(), null, 'a removed file is the system clock');
  });

  it('is refused in production', () => {
    const saved = { file: process.env.WEFT_TEST_CLOCK_FILE, mode: process.env.NODE_ENV };
    try {
      process.env.WEFT_TEST_CLOCK_FILE = file;
      assert.equal(testClockFile(), file);
      process.env.NODE_ENV = 'production';
      assert.throws(() => testClockFile(), /WEFT_TEST_CLOCK_FILE is for tests/);
      delete process.env.WEFT_TEST_CLOCK_FILE;
      assert.equal(testClockFile(), undefined);
    } finally {
      for (const [name, value] of [['WEFT_TEST_CLOCK_FILE', saved.file], ['NODE_ENV', saved.mode]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});
