import assert from 'node:assert/strict';
import { runHeartbeatTimeoutSettings } from '../../../core/config';

// WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS and WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS: a run's heartbeat timeouts, carried in its workflow input (docs/operating/configuration.md).
describe('The run heartbeat timeout settings', () => {
  const names = ['WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS', 'WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS'] as const;
  const saved = names.map((name) => process.env[name]);
  afterEach(() => names.forEach((name, i) => {
    if (saved[i] === undefined) delete process.env[name];
    else process.env[name] = saved[i];
  }));

  it('leaves the workflow its defaults unless set, and carries each one set', () => {
    for (const name of names) delete process.env[name];
    assert.deepEqual(runHeartbeatTimeoutSettings(), {});
    process.env.WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS = ' 5000 ';
    assert.deepEqual(runHeartbeatTimeoutSettings(), { commitHeartbeatTimeoutMs: 5000 });
    process.env.WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS = '3000';
    assert.deepEqual(runHeartbeatTimeoutSettings(), { extractHeartbeatTimeoutMs: 3000, commitHeartbeatTimeoutMs: 5000 });
  });

  it('refuses what is no whole number of milliseconds from 1000 to 3600000, naming the setting', () => {
    for (const name of names) {
      for (const value of ['999', '3600001', '1.5', '-1000', '15s']) {
        for (const other of names) delete process.env[other];
        process.env[name] = value;
        assert.throws(() => runHeartbeatTimeoutSettings(), new RegExp(`${name} must be a whole number of milliseconds from 1000 to 3600000`), `${name}=${value}`);
      }
    }
  });
});
