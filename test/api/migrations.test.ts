import assert from 'node:assert/strict';
import { env } from '../support/environment';
import { as, newWorkspace } from '../support/fixtures';

// Every migration has a working down(): the newest one is rolled back and applied again on the
// test database, and the API still authenticates and counts requests afterwards.

describe('Migrations', function () {
  this.timeout(60_000);

  it('roll the newest migration back and forward again, leaving a working request path', async () => {
    const db = env().db;
    const [, pending] = (await db.migrate.list()) as [unknown[], unknown[]];
    assert.equal(pending.length, 0, 'the test database is fully migrated');
    const [, rolledBack] = (await db.migrate.down()) as [number, string[]];
    assert.equal(rolledBack.length, 1, `rolled back: ${rolledBack.join(', ')}`);
    const [, reapplied] = (await db.migrate.up()) as [number, string[]];
    assert.deepEqual(reapplied, rolledBack);
    const ws = await newWorkspace();
    const res = await as(ws.apiKey).get('/api/v1/organization');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.headers.get('x-ratelimit-limit'), 'the request was counted');
  });
});
