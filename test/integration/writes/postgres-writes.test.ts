import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { installPlugin } from '../../../services/endpoints/plugins';
import { env } from '../../support/environment';
import { externalDatabase, installationSettingsFor } from '../../support/external-postgres';
import { action, currentSnapshot, putPolicy, tableRows, writeTenant, WriteTenant } from '../../support/source-writes';

// Governed writes (SPEC 2.9) against a postgres_table endpoint: a table in an external PostgreSQL
// database that anyone may change behind Weft's back. Its snapshot is a digest of its contents.

/** This run's own external database (other test files use other names; concurrent runs other pids). */
const database = `weft_ext_writes_${process.pid}`;

type Row = { id: number; name: string; team: string | null; score: number | null };
const SEED: Row[] = [
  { id: 1, name: 'Ada', team: 'a', score: 10 },
  { id: 2, name: 'Bob', team: 'b', score: 20 },
  { id: 3, name: 'Cy', team: 'a', score: 30 },
];

describe('Governed source writes to a postgres_table endpoint', function () {
  this.timeout(60_000);
  let t: WriteTenant;
  let external: pg.Client;
  let installationId: string;
  let drop: () => Promise<void>;

  before(async () => {
    ({ client: external, drop } = await externalDatabase(database));
    t = await writeTenant();
    // The test cluster listens on loopback only: the installation allows private networks.
    installationId = (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', installationSettingsFor(database))).id;
  });

  after(() => drop?.());

  /** A new external table with a primary key, holding `rows` (inserted in this order), and a source endpoint with a write policy on it. */
  async function externalTable(rows: Row[] = SEED): Promise<{ table: string; endpointId: string }> {
    const table = `w_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    await external.query(`CREATE TABLE ${table} (id integer PRIMARY KEY, name text NOT NULL, team text, score integer)`);
    for (const row of rows) await external.query(`INSERT INTO ${table} (id, name, team, score) VALUES ($1, $2, $3, $4)`, [row.id, row.name, row.team, row.score]);
    const res = await t.writer.post('/api/v1/data-endpoints', {
      name: table,
      namespace: 'external',
      role: 'source',
      contractKind: 'source_stream',
      pluginCapabilityInstallationId: installationId,
      target: { table },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const endpointId = res.body.dataEndpoint.id as string;
    await putPolicy(t, endpointId);
    return { table, endpointId };
  }

  /** The table as PostgreSQL has it, not as Weft reports it. */
  const rowsOf = async (table: string): Promise<Row[]> => (await external.query<Row>(`SELECT id, name, team, score FROM ${table} ORDER BY id`)).rows;
  const writes = (endpointId: string, dryRun = false) => `/api/v1/data-endpoints/${endpointId}/writes${dryRun ? '?dryRun=true' : ''}`;
  const logTotal = async (endpointId: string) => {
    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log`);
    assert.equal(log.status, 200, JSON.stringify(log.body));
    return log.body.pagination.total as number;
  };

  it('reports a digest of the contents as the snapshot: id "md5:…", version the row count, moved by any change', async () => {
    const { table, endpointId } = await externalTable();
    const first = await currentSnapshot(t.writer, endpointId);
    assert.match(first.id, /^md5:[0-9a-f]{32}$/);
    assert.equal(first.version, '3');
    assert.deepEqual(await currentSnapshot(t.writer, endpointId), first, 'unchanged contents, unchanged snapshot');

    // The same contents stored in another order give the same digest.
    const twin = await externalTable([...SEED].reverse());
    assert.deepEqual(await currentSnapshot(t.writer, twin.endpointId), first);

    // A change to one value moves the id but not the row count; undoing it restores the snapshot.
    await external.query(`UPDATE ${table} SET score = 11 WHERE id = 1`);
    const edited = await currentSnapshot(t.writer, endpointId);
    assert.equal(edited.version, '3');
    assert.notEqual(edited.id, first.id);
    await external.query(`UPDATE ${table} SET score = 10 WHERE id = 1`);
    assert.deepEqual(await currentSnapshot(t.writer, endpointId), first);

    await external.query(`INSERT INTO ${table} (id, name) VALUES (4, 'Dee')`);
    const grown = await currentSnapshot(t.writer, endpointId);
    assert.equal(grown.version, '4');
    assert.match(grown.id, /^md5:[0-9a-f]{32}$/);
    assert.notEqual(grown.id, first.id);

    await external.query(`DELETE FROM ${table}`);
    const empty = await currentSnapshot(t.writer, endpointId);
    assert.equal(empty.version, '0');
    assert.match(empty.id, /^md5:[0-9a-f]{32}$/);
  });

  it('applies an upsert against the current snapshot and moves the snapshot to the one it returns', async () => {
    const { table, endpointId } = await externalTable();
    const before = await currentSnapshot(t.writer, endpointId);
    const body = action(t, before, { operation: 'upsert', rows: [{ id: 2, name: 'Bobby' }, { id: 4, name: 'Dee', team: 'b', score: 40 }] });
    const res = await t.writer.post(writes(endpointId), body);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const applied = res.body.writeAction;
    assert.equal(applied.status, 'applied');
    assert.equal(applied.affected, 2);
    assert.deepEqual(applied.snapshotBefore, before);
    assert.equal(applied.snapshotAfter.version, '4');
    assert.match(applied.snapshotAfter.id, /^md5:[0-9a-f]{32}$/);
    assert.notEqual(applied.snapshotAfter.id, before.id);
    const after = await currentSnapshot(t.writer, endpointId);
    assert.deepEqual(after, { id: applied.snapshotAfter.id, version: applied.snapshotAfter.version });

    // Columns an upserted row leaves out keep their values (team and score of 2).
    assert.deepEqual(await rowsOf(table), [
      SEED[0],
      { id: 2, name: 'Bobby', team: 'b', score: 20 },
      SEED[2],
      { id: 4, name: 'Dee', team: 'b', score: 40 },
    ]);
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), ['Ada', 'Bobby', 'Cy', 'Dee']);

    // The returned snapshot is the one to write against next; the one before it no longer works.
    const next = await t.writer.post(writes(endpointId), action(t, after, { operation: 'delete', where: [{ field: 'id', op: 'eq', value: 4 }] }));
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.equal(next.body.writeAction.snapshotAfter.version, '3');
    assert.deepEqual((await rowsOf(table)).map((r) => r.id), [1, 2, 3]);

    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?actionId=${body.actionId}`);
    const entry = log.body.entries.find((e: { kind: string }) => e.kind === 'applied');
    assert.equal(entry.snapshotAfter.id, applied.snapshotAfter.id);
  });

  it('refuses a taken actionId before anything reaches the external table', async () => {
    const { table, endpointId } = await externalTable();
    const first = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 2, name: 'Bobby' }] });
    assert.equal((await t.writer.post(writes(endpointId), first)).status, 200);
    const moved = await currentSnapshot(t.writer, endpointId);
    const reused = action(t, moved, { operation: 'upsert', rows: [{ id: 7, name: 'Gus' }] }, { actionId: first.actionId });
    const res = await t.writer.post(writes(endpointId), reused);
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.code, 'action_id_taken');
    assert.deepEqual((await rowsOf(table)).map((r) => r.id), [1, 2, 3]);
    assert.deepEqual(await currentSnapshot(t.writer, endpointId), moved);
  });

  it('refuses a write against a stale snapshot with snapshot_conflict and writes nothing', async () => {
    const { table, endpointId } = await externalTable();
    const stale = await currentSnapshot(t.writer, endpointId);
    const first = await t.writer.post(writes(endpointId), action(t, stale, { operation: 'upsert', rows: [{ id: 1, name: 'Ada I' }] }));
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const current = await currentSnapshot(t.writer, endpointId);
    const written = await rowsOf(table);

    for (const input of [
      { operation: 'upsert', rows: [{ id: 1, name: 'stale' }, { id: 9, name: 'Nine' }] },
      { operation: 'append', rows: [{ id: 9, name: 'Nine' }] },
      { operation: 'update', where: [{ field: 'id', op: 'gte', value: 1 }], set: { score: 0 } },
      { operation: 'delete', where: [{ field: 'id', op: 'gte', value: 1 }] },
    ]) {
      const body = action(t, stale, input);
      const res = await t.writer.post(writes(endpointId), body);
      assert.equal(res.status, 409, JSON.stringify(res.body));
      assert.equal(res.body.code, 'snapshot_conflict');
      assert.deepEqual({ id: res.body.currentSnapshot.id, version: res.body.currentSnapshot.version }, current);
      assert.equal(res.body.actionId, body.actionId);
      const recorded = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`);
      assert.equal(recorded.body.writeAction.status, 'failed', input.operation);
      assert.equal(recorded.body.writeAction.error.code, 'snapshot_conflict');
      assert.deepEqual(await rowsOf(table), written, input.operation);
    }
    assert.deepEqual(await currentSnapshot(t.writer, endpointId), current);
  });

  it('refuses a write against a snapshot that a direct SQL change made stale, and writes nothing', async () => {
    const { table, endpointId } = await externalTable();
    const read = await currentSnapshot(t.writer, endpointId);
    // Behind Weft's back: no row count change, only a value.
    await external.query(`UPDATE ${table} SET name = 'Cyrus' WHERE id = 3`);
    const moved = await currentSnapshot(t.writer, endpointId);
    assert.equal(moved.version, read.version);
    assert.notEqual(moved.id, read.id);
    const expected = [SEED[0], SEED[1], { ...SEED[2], name: 'Cyrus' }];

    const dry = await t.writer.post(writes(endpointId, true), action(t, read, { operation: 'update', where: [{ field: 'id', op: 'eq', value: 3 }], set: { name: 'Cy again' } }));
    assert.equal(dry.status, 409, JSON.stringify(dry.body));
    assert.equal(dry.body.code, 'snapshot_conflict');

    const upsert = { operation: 'upsert', rows: [{ id: 3, name: 'Cy again' }, { id: 5, name: 'Eve' }] };
    const body = action(t, read, upsert);
    const res = await t.writer.post(writes(endpointId), body);
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.code, 'snapshot_conflict');
    assert.deepEqual({ id: res.body.currentSnapshot.id, version: res.body.currentSnapshot.version }, moved);
    assert.deepEqual(await rowsOf(table), expected);
    // A retry of the same action answers the recorded refusal and still writes nothing.
    const again = await t.writer.post(writes(endpointId), body);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'snapshot_conflict');
    assert.deepEqual(await rowsOf(table), expected);

    // Read again, write again: it applies.
    const retry = await t.writer.post(writes(endpointId), action(t, moved, upsert));
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.deepEqual((await rowsOf(table)).map((r) => r.name), ['Ada', 'Bob', 'Cy again', 'Eve']);
  });

  it('dry-runs an update: changeSet.changed holds each row before and after, and nothing is written', async () => {
    const { table, endpointId } = await externalTable();
    const snapshot = await currentSnapshot(t.writer, endpointId);
    const res = await t.writer.post(writes(endpointId, true), action(t, snapshot, { operation: 'update', where: [{ field: 'team', op: 'eq', value: 'a' }], set: { score: 99, name: 'A-team' } }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.dryRun, true);
    assert.equal(res.body.operation, 'update');
    assert.deepEqual(res.body.expectedSourceSnapshot, snapshot);
    assert.equal(res.body.affected, 2);
    const { changeSet } = res.body;
    assert.deepEqual(changeSet.counts, { added: 0, changed: 2, removed: 0 });
    assert.deepEqual([changeSet.added, changeSet.removed, changeSet.truncated], [[], [], false]);
    const changed = [...changeSet.changed].sort((a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key));
    assert.deepEqual(changed, [
      { key: '[1]', before: SEED[0], after: { ...SEED[0], name: 'A-team', score: 99 } },
      { key: '[3]', before: SEED[2], after: { ...SEED[2], name: 'A-team', score: 99 } },
    ]);

    assert.deepEqual(await rowsOf(table), SEED);
    assert.deepEqual(await currentSnapshot(t.writer, endpointId), snapshot);
    assert.equal(await logTotal(endpointId), 0, 'a dry run records no action');
  });

  it('dry-runs a delete: changeSet.removed holds the rows it would remove, and nothing is written', async () => {
    const { table, endpointId } = await externalTable();
    const snapshot = await currentSnapshot(t.writer, endpointId);
    const res = await t.writer.post(writes(endpointId, true), action(t, snapshot, { operation: 'delete', where: [{ field: 'score', op: 'gte', value: 20 }] }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.dryRun, true);
    assert.equal(res.body.affected, 2);
    const { changeSet } = res.body;
    assert.deepEqual(changeSet.counts, { added: 0, changed: 0, removed: 2 });
    assert.deepEqual([changeSet.added, changeSet.changed], [[], []]);
    const removed = [...changeSet.removed].sort((a: { key: string }, b: { key: string }) => a.key.localeCompare(b.key));
    assert.deepEqual(removed, [
      { key: '[2]', before: SEED[1] },
      { key: '[3]', before: SEED[2] },
    ]);

    assert.deepEqual(await rowsOf(table), SEED);
    assert.deepEqual(await currentSnapshot(t.writer, endpointId), snapshot);
    assert.equal(await logTotal(endpointId), 0, 'a dry run records no action');
  });

  it('applies exactly one of several concurrent writes made against the same snapshot', async () => {
    const { table, endpointId } = await externalTable();
    const snapshot = await currentSnapshot(t.writer, endpointId);
    const names = ['Ann', 'Ben', 'Cal', 'Dot', 'Eli'];
    const bodies = names.map((name, i) => action(t, snapshot, { operation: 'upsert', rows: [{ id: 1, name }, { id: 100 + i, name }] }));
    const results = await Promise.all(bodies.map((body) => t.writer.post(writes(endpointId), body)));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409, 409, 409], JSON.stringify(results.map((r) => r.body)));
    for (const loser of results.filter((r) => r.status === 409)) assert.equal(loser.body.code, 'snapshot_conflict');

    const winner = results.find((r) => r.status === 200)!.body.writeAction;
    const name = winner.input.rows[0].name as string;
    // Only the winner's rows: the losers wrote nothing, not even their own new row.
    assert.deepEqual((await rowsOf(table)).map((r) => [r.id, r.name]), [[1, name], [2, 'Bob'], [3, 'Cy'], [100 + names.indexOf(name), name]]);
    assert.deepEqual(await currentSnapshot(t.writer, endpointId), { id: winner.snapshotAfter.id, version: '4' });
    const applied = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?kind=applied`);
    assert.equal(applied.body.entries.length, 1);
    assert.equal(applied.body.entries[0].actionId, winner.actionId);
  });
});
