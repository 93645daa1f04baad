import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createDb } from '../../../db/connection';
import { DefinitionCache, DEFINITION_CACHE_TTL_MS } from '../../../services/shared/definition-cache';
import { env } from '../../support/environment';
import { as, newWorkspace } from '../../support/fixtures';

/**
 * The cache these tests read through: one of their own per test, on the run's pool and clock, as a
 * runtime builds it (the environment's runtimes share theirs; closing this one touches none of them).
 */
let cache: DefinitionCache;

/** Reads a workspace's plan through the cache, counting the loads that reach the database. */
function planReader(workspaceId: string) {
  let loads = 0;
  const read = () =>
    cache.get(workspaceId, 'test-plan', async () => {
      loads += 1;
      return (await env().db('workspaces').where({ id: workspaceId }).first('plan')).plan as string;
    });
  return { read, loads: () => loads };
}

/** Reads until a read is answered from the cache (nothing is kept until its listener listens, which the first read starts). */
const untilKept = (reader: ReturnType<typeof planReader>) =>
  within(2_000, async () => {
    await reader.read();
    const before = reader.loads();
    await reader.read();
    return reader.loads() === before;
  });

/** Reads until `done` holds or `ms` pass; returns how long it took (the bound is the property under test). */
async function within(ms: number, done: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await done())) {
    if (Date.now() - started > ms) throw new Error(`not seen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}

describe('The definition cache', () => {
  beforeEach(() => (cache = new DefinitionCache(env().db, env().clock)));
  afterEach(() => cache.close());

  it('keeps a definition once read, and drops it when another connection changes the workspace (NOTIFY), within one second', async () => {
    const ws = await newWorkspace();
    const reader = planReader(ws.workspaceId);
    // The listener starts with the first read; nothing is kept until it listens.
    await untilKept(reader);
    assert.equal(await reader.read(), 'free');
    const loads = reader.loads();
    assert.equal(await reader.read(), 'free');
    assert.equal(reader.loads(), loads, 'a kept definition is read without the database');

    // Another pool, as another process would write: only the trigger's notification tells this one.
    const other = createDb(process.env.DATABASE_URL!, { max: 1 });
    try {
      await other('workspaces').where({ id: ws.workspaceId }).update({ plan: 'team' });
    } finally {
      await other.destroy();
    }
    await within(1_000, async () => (await reader.read()) === 'team');
  });

  it('lets a kept definition go once its TTL has passed on the runtime clock', async () => {
    const ws = await newWorkspace();
    env().clock.set(Date.now());
    const reader = planReader(ws.workspaceId);
    await untilKept(reader);
    const loads = reader.loads();
    env().clock.advance(DEFINITION_CACHE_TTL_MS - 1);
    await reader.read();
    assert.equal(reader.loads(), loads, 'kept until its TTL has passed on the clock');
    env().clock.advance(1);
    await reader.read();
    assert.equal(reader.loads(), loads + 1, 'read again once it has, with no wait');
  });

  it('keeps an absent definition too, so a workspace without one is not read again per request', async () => {
    const ws = await newWorkspace();
    let loads = 0;
    const read = () =>
      cache.get(ws.workspaceId, 'test-absent', async () => {
        loads += 1;
        return (await env().db('usage_alert_settings').where({ workspace_id: ws.workspaceId }).first()) as unknown;
      });
    await within(2_000, async () => {
      await read();
      const before = loads;
      await read();
      return loads === before;
    });
    const before = loads;
    assert.equal(await read(), undefined);
    assert.equal(await read(), undefined);
    assert.equal(loads, before, 'an absent definition is kept like any other');
  });

  it('sees a change made through the service layer at once in the process that made it', async () => {
    const ws = await newWorkspace();
    const created = await as(ws.apiKey).post('/api/v1/projects', { name: 'First' });
    const projectId = created.body.project.id as string;
    assert.equal((await as(ws.apiKey).get(`/api/v1/projects/${projectId}`)).body.project.name, 'First');
    // The rename commits and the very next request, with no wait, reads the new name.
    assert.equal((await as(ws.apiKey).patch(`/api/v1/projects/${projectId}`, { name: 'Second' })).status, 200);
    assert.equal((await as(ws.apiKey).get(`/api/v1/projects/${projectId}`)).body.project.name, 'Second');
  });

  it('does not keep a value read while the workspace changed', async () => {
    const workspaceId = randomUUID();
    // Make sure the process listens, so values may be kept at all.
    await within(2_000, async () => {
      await cache.get(workspaceId, 'probe', async () => 1);
      let loaded = false;
      await cache.get(workspaceId, 'probe', async () => ((loaded = true), 1));
      return !loaded;
    });
    let release!: () => void;
    const slow = cache.get(workspaceId, 'overlap', () => new Promise<string>((resolve) => (release = () => resolve('old'))));
    await new Promise((resolve) => setImmediate(resolve));
    cache.changed(workspaceId);
    release();
    assert.equal(await slow, 'old', 'the overlapping read still answers its own caller');
    assert.equal(await cache.get(workspaceId, 'overlap', async () => 'new'), 'new', 'but is not kept past the change');
  });

  it('reads once for requests that miss together, and never joins a read started before a change', async () => {
    const workspaceId = randomUUID();
    let loads = 0;
    let release!: (value: string) => void;
    const slowLoad = () => {
      loads += 1;
      return new Promise<string>((resolve) => (release = resolve));
    };
    const together = [cache.get(workspaceId, 'burst', slowLoad), cache.get(workspaceId, 'burst', slowLoad), cache.get(workspaceId, 'burst', slowLoad)];
    assert.equal(loads, 1, 'three misses in flight, one read');
    release('first');
    assert.deepEqual(await Promise.all(together), ['first', 'first', 'first']);

    const beforeChange = cache.get(workspaceId, 'changing', slowLoad);
    const releaseOld = release;
    cache.changed(workspaceId);
    const afterChange = cache.get(workspaceId, 'changing', slowLoad);
    assert.equal(loads, 3, 'a miss after the change reads again');
    release('new');
    releaseOld('old');
    assert.equal(await beforeChange, 'old');
    assert.equal(await afterChange, 'new');

    const failing = [cache.get(workspaceId, 'failing', async () => Promise.reject(new Error('down'))), cache.get(workspaceId, 'failing', slowLoad)];
    await assert.rejects(failing[0], /down/);
    await assert.rejects(failing[1], /down/, 'a joined read shares the failure');
    assert.equal(await cache.get(workspaceId, 'failing', async () => 'recovered'), 'recovered', 'and the next miss reads again');
  });

  it('keeps nothing once its listener is closed, and listens again on the next read', async () => {
    const ws = await newWorkspace();
    const reader = planReader(ws.workspaceId);
    await cache.close();
    await reader.read();
    await reader.read();
    assert.equal(reader.loads(), 2, 'nothing is kept between close and a confirmed LISTEN');
    // Once the new LISTEN is confirmed a read is kept: the read after it needs no load. (Counting
    // one load per pair of reads raced the confirmation: a pair straddling it loads twice, and
    // every later pair loads nothing.)
    await untilKept(reader);
  });
});
