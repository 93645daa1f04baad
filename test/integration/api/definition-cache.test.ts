import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createDb } from '../../../db/connection';
import { closeDefinitionCache, definitionCache } from '../../../services/shared/definition-cache';
import { env } from '../../support/environment';
import { as, newWorkspace } from '../../support/fixtures';

/** Reads a workspace's plan through the cache, counting the loads that reach the database. */
function planReader(workspaceId: string) {
  let loads = 0;
  const read = () =>
    definitionCache().get(env().db, workspaceId, 'test-plan', async () => {
      loads += 1;
      return (await env().db('workspaces').where({ id: workspaceId }).first('plan')).plan as string;
    });
  return { read, loads: () => loads };
}

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
  it('keeps a definition once read, and drops it when another connection changes the workspace (NOTIFY), within one second', async () => {
    const ws = await newWorkspace();
    const reader = planReader(ws.workspaceId);
    // The listener starts with the first read; nothing is kept until it listens.
    await within(2_000, async () => {
      await reader.read();
      const before = reader.loads();
      await reader.read();
      return reader.loads() === before;
    });
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

  it('keeps an absent definition too, so a workspace without one is not read again per request', async () => {
    const ws = await newWorkspace();
    let loads = 0;
    const read = () =>
      definitionCache().get(env().db, ws.workspaceId, 'test-absent', async () => {
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
    const cache = definitionCache();
    // Make sure the process listens, so values may be kept at all.
    await within(2_000, async () => {
      await cache.get(env().db, workspaceId, 'probe', async () => 1);
      let loaded = false;
      await cache.get(env().db, workspaceId, 'probe', async () => ((loaded = true), 1));
      return !loaded;
    });
    let release!: () => void;
    const slow = cache.get(env().db, workspaceId, 'overlap', () => new Promise<string>((resolve) => (release = () => resolve('old'))));
    await new Promise((resolve) => setImmediate(resolve));
    cache.changed(workspaceId);
    release();
    assert.equal(await slow, 'old', 'the overlapping read still answers its own caller');
    assert.equal(await cache.get(env().db, workspaceId, 'overlap', async () => 'new'), 'new', 'but is not kept past the change');
  });

  it('reads once for requests that miss together, and never joins a read started before a change', async () => {
    const workspaceId = randomUUID();
    const cache = definitionCache();
    let loads = 0;
    let release!: (value: string) => void;
    const slowLoad = () => {
      loads += 1;
      return new Promise<string>((resolve) => (release = resolve));
    };
    const together = [cache.get(env().db, workspaceId, 'burst', slowLoad), cache.get(env().db, workspaceId, 'burst', slowLoad), cache.get(env().db, workspaceId, 'burst', slowLoad)];
    assert.equal(loads, 1, 'three misses in flight, one read');
    release('first');
    assert.deepEqual(await Promise.all(together), ['first', 'first', 'first']);

    const beforeChange = cache.get(env().db, workspaceId, 'changing', slowLoad);
    const releaseOld = release;
    cache.changed(workspaceId);
    const afterChange = cache.get(env().db, workspaceId, 'changing', slowLoad);
    assert.equal(loads, 3, 'a miss after the change reads again');
    release('new');
    releaseOld('old');
    assert.equal(await beforeChange, 'old');
    assert.equal(await afterChange, 'new');

    const failing = [cache.get(env().db, workspaceId, 'failing', async () => Promise.reject(new Error('down'))), cache.get(env().db, workspaceId, 'failing', slowLoad)];
    await assert.rejects(failing[0], /down/);
    await assert.rejects(failing[1], /down/, 'a joined read shares the failure');
    assert.equal(await cache.get(env().db, workspaceId, 'failing', async () => 'recovered'), 'recovered', 'and the next miss reads again');
  });

  it('keeps nothing once its listener is closed, and listens again on the next read', async () => {
    const ws = await newWorkspace();
    const reader = planReader(ws.workspaceId);
    await closeDefinitionCache();
    await reader.read();
    await reader.read();
    assert.equal(reader.loads(), 2, 'nothing is kept between close and a confirmed LISTEN');
    // Once the new LISTEN is confirmed a read is kept: the read after it needs no load. (Counting
    // one load per pair of reads raced the confirmation: a pair straddling it loads twice, and
    // every later pair loads nothing.)
    await within(2_000, async () => {
      await reader.read();
      const before = reader.loads();
      await reader.read();
      return reader.loads() === before;
    });
  });
});
