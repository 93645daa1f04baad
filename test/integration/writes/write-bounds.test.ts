import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { HttpResponse } from '../../support/fixtures';
import { action, currentSnapshot, managedTable, putPolicy, tableRows, writeTenant, WriteTenant } from '../../support/source-writes';

// The bound table of SPEC section 8 for the governed write action (SPEC 2.9): at each limit the
// value just inside is accepted and the value just outside is refused with a 422 naming the
// offending path, and a refused request writes nothing.

type Snapshot = { id: string; version: string };
type Body = ReturnType<typeof action>;

const text = (length: number, char = 'k') => char.repeat(length);
/** A field name at the 200-character bound; the seed writes it so conditions on it match a row. */
const LONG_FIELD = text(200, 'f');
const TOO_LONG_FIELD = text(201, 'f');
const ids = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
/** `count` valid conditions that together match ids 1..3, whatever else the table holds. */
const conditions = (count: number) => Array.from({ length: count }, (_, i) => (i % 2 ? { field: 'id', op: 'exists' } : { field: 'id', op: 'lte', value: 3 }));

/** An outside value: refused with 422 validation_failed naming `path`, and nothing written. */
interface Refused {
  name: string;
  body: (t: WriteTenant, snapshot: Snapshot) => unknown;
  path: string;
  /** Other paths the answer may name as well (the discriminator's own note on its object). */
  alsoNamed?: string[];
}

/** An inside value: accepted. Dry runs check the change set; real writes check the applied action. */
interface Accepted {
  name: string;
  body: (t: WriteTenant, snapshot: Snapshot) => Body;
  dryRun: boolean;
  check: (res: HttpResponse, body: Body) => void;
}

const counts = (added: number, changed: number, removed: number) => (res: HttpResponse) => {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.dryRun, true);
  assert.deepEqual(res.body.changeSet.counts, { added, changed, removed });
  assert.equal(res.body.changeSet.truncated, false);
};

const applied = (affected: number) => (res: HttpResponse, body: Body) => {
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.writeAction.status, 'applied');
  assert.equal(res.body.writeAction.affected, affected);
  assert.equal(res.body.writeAction.idempotencyKey, body.idempotencyKey);
};

/** Validation passed and the write reached the snapshot check: the only snapshot it can match is the real one. */
const snapshotConflict = (res: HttpResponse) => {
  assert.equal(res.status, 409, JSON.stringify(res.body));
  assert.equal(res.body.code, 'snapshot_conflict');
};

const upsert = (rows: Array<Record<string, unknown>>) => ({ operation: 'upsert', rows });
const append = (rows: Array<Record<string, unknown>>) => ({ operation: 'append', rows });
const update = (where: unknown[], set: Record<string, unknown> = { name: 'Zed' }) => ({ operation: 'update', where, set });
const del = (where: unknown[]) => ({ operation: 'delete', where });
const idIn = (values: unknown[]) => [{ field: 'id', op: 'in', values }];

/** Body of one operation with `input` fields replaced or added. */
const withInput = (t: WriteTenant, snapshot: Snapshot, input: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const body = action(t, snapshot, input);
  return { ...body, input: { ...body.input, ...extra } };
};

const accepted: Accepted[] = [
  // idempotencyKey: 8 to 200 characters (real writes: the key is stored as sent).
  { name: 'idempotencyKey of 8 characters', dryRun: false, body: (t, s) => action(t, s, upsert([{ id: 1, name: 'Ada 8' }]), { idempotencyKey: `${randomUUID().slice(0, 8)}` }), check: applied(1) },
  { name: 'idempotencyKey of 200 characters', dryRun: false, body: (t, s) => action(t, s, upsert([{ id: 1, name: 'Ada 200' }]), { idempotencyKey: `${randomUUID()}${text(164)}` }), check: applied(1) },
  // rows: 1 to 500, for append and upsert.
  { name: 'append of 1 row', dryRun: true, body: (t, s) => action(t, s, append([{ id: 1000 }])), check: counts(1, 0, 0) },
  { name: 'append of 500 rows', dryRun: true, body: (t, s) => action(t, s, append(ids(3001, 500).map((id) => ({ id })))), check: counts(500, 0, 0) },
  { name: 'upsert of 1 row', dryRun: true, body: (t, s) => action(t, s, upsert([{ id: 2, name: 'Bobby' }])), check: counts(0, 1, 0) },
  // ids 1..3 exist: three changed, 497 added.
  { name: 'upsert of 500 rows', dryRun: true, body: (t, s) => action(t, s, upsert(ids(1, 500).map((id) => ({ id, batch: 'b' })))), check: counts(497, 3, 0) },
  { name: 'upsert of 500 rows, applied', dryRun: false, body: (t, s) => action(t, s, upsert(ids(1001, 500).map((id) => ({ id, batch: 'big' })))), check: applied(500) },
  // where: 1 to 100 conditions, for update and delete.
  { name: 'update with 1 condition', dryRun: true, body: (t, s) => action(t, s, update([{ field: 'id', op: 'eq', value: 2 }])), check: counts(0, 1, 0) },
  { name: 'update with 100 conditions', dryRun: true, body: (t, s) => action(t, s, update(conditions(100))), check: counts(0, 3, 0) },
  { name: 'delete with 1 condition', dryRun: true, body: (t, s) => action(t, s, del([{ field: 'id', op: 'eq', value: 2 }])), check: counts(0, 0, 1) },
  { name: 'delete with 100 conditions', dryRun: true, body: (t, s) => action(t, s, del(conditions(100))), check: counts(0, 0, 3) },
  // values: 1 to 500 per condition.
  { name: 'delete, in with 1 value', dryRun: true, body: (t, s) => action(t, s, del(idIn([3]))), check: counts(0, 0, 1) },
  { name: 'delete, in with 500 values', dryRun: true, body: (t, s) => action(t, s, del(idIn(ids(1, 500)))), check: counts(0, 0, 3) },
  { name: 'update, in with 1 value', dryRun: true, body: (t, s) => action(t, s, update(idIn([3]))), check: counts(0, 1, 0) },
  { name: 'update, in with 500 values', dryRun: true, body: (t, s) => action(t, s, update(idIn(ids(1, 500)))), check: counts(0, 3, 0) },
  // Field and key names: 1 to 200 characters in rows, where and set.
  { name: 'row keys of 1 and 200 characters, applied', dryRun: false, body: (t, s) => action(t, s, upsert([{ id: 2, x: 'two', [LONG_FIELD]: 'long two' }])), check: applied(1) },
  { name: 'append row key of 200 characters', dryRun: true, body: (t, s) => action(t, s, append([{ id: 4, [LONG_FIELD]: 'four' }])), check: counts(1, 0, 0) },
  { name: 'where field of 200 characters', dryRun: true, body: (t, s) => action(t, s, update([{ field: LONG_FIELD, op: 'eq', value: 'long one' }])), check: counts(0, 1, 0) },
  { name: 'where field of 1 character', dryRun: true, body: (t, s) => action(t, s, del([{ field: 'x', op: 'eq', value: 'one' }])), check: counts(0, 0, 1) },
  { name: 'set key of 200 characters', dryRun: true, body: (t, s) => action(t, s, update([{ field: 'id', op: 'eq', value: 3 }], { [LONG_FIELD]: 'long three' })), check: counts(0, 1, 0) },
  { name: 'set key of 1 character', dryRun: true, body: (t, s) => action(t, s, update([{ field: 'id', op: 'eq', value: 3 }], { y: 1 })), check: counts(0, 1, 0) },
  // expectedSourceSnapshot id and version: 1 to 500 characters. No real snapshot has these, so passing validation shows as snapshot_conflict.
  { name: 'snapshot id of 1 character', dryRun: true, body: (t, s) => action(t, { ...s, id: 'i' }, del(idIn([1]))), check: snapshotConflict },
  { name: 'snapshot id of 500 characters', dryRun: true, body: (t, s) => action(t, { ...s, id: text(500, 'i') }, del(idIn([1]))), check: snapshotConflict },
  { name: 'snapshot version of 1 character', dryRun: true, body: (t, s) => action(t, { ...s, version: '9' }, del(idIn([1]))), check: snapshotConflict },
  { name: 'snapshot version of 500 characters', dryRun: true, body: (t, s) => action(t, { ...s, version: text(500, '9') }, del(idIn([1]))), check: snapshotConflict },
];

const refused: Refused[] = [
  { name: 'idempotencyKey of 7 characters', path: '/idempotencyKey', body: (t, s) => action(t, s, upsert([{ id: 1, name: 'x' }]), { idempotencyKey: text(7) }) },
  { name: 'idempotencyKey of 201 characters', path: '/idempotencyKey', body: (t, s) => action(t, s, upsert([{ id: 1, name: 'x' }]), { idempotencyKey: text(201) }) },
  { name: 'append of 0 rows', path: '/input/rows', body: (t, s) => action(t, s, append([])) },
  { name: 'append of 501 rows', path: '/input/rows', body: (t, s) => action(t, s, append(ids(2001, 501).map((id) => ({ id })))) },
  { name: 'upsert of 0 rows', path: '/input/rows', body: (t, s) => action(t, s, upsert([])) },
  { name: 'upsert of 501 rows', path: '/input/rows', body: (t, s) => action(t, s, upsert(ids(2001, 501).map((id) => ({ id })))) },
  { name: 'update with 0 conditions', path: '/input/where', body: (t, s) => action(t, s, update([])) },
  { name: 'update with 101 conditions', path: '/input/where', body: (t, s) => action(t, s, update(conditions(101))) },
  { name: 'delete with 0 conditions', path: '/input/where', body: (t, s) => action(t, s, del([])) },
  { name: 'delete with 101 conditions', path: '/input/where', body: (t, s) => action(t, s, del(conditions(101))) },
  { name: 'delete, in with 0 values', path: '/input/where/0/values', body: (t, s) => action(t, s, del(idIn([]))) },
  { name: 'delete, in with 501 values', path: '/input/where/0/values', body: (t, s) => action(t, s, del(idIn(ids(1, 501)))) },
  { name: 'update, in with 0 values', path: '/input/where/0/values', body: (t, s) => action(t, s, update(idIn([]))) },
  { name: 'update, in with 501 values', path: '/input/where/0/values', body: (t, s) => action(t, s, update(idIn(ids(1, 501)))) },
  { name: 'delete, second condition with 501 values', path: '/input/where/1/values', body: (t, s) => action(t, s, del([{ field: 'id', op: 'exists' }, ...idIn(ids(1, 501))])) },
  { name: 'append row key of 0 characters', path: '/input/rows/0/', body: (t, s) => action(t, s, append([{ id: 5, '': 'empty' }])) },
  { name: 'upsert row key of 201 characters', path: `/input/rows/1/${TOO_LONG_FIELD}`, body: (t, s) => action(t, s, upsert([{ id: 1, name: 'ok' }, { id: 2, [TOO_LONG_FIELD]: 'x' }])) },
  { name: 'update where field of 0 characters', path: '/input/where/0/field', body: (t, s) => action(t, s, update([{ field: '', op: 'exists' }])) },
  { name: 'delete where field of 201 characters', path: '/input/where/0/field', body: (t, s) => action(t, s, del([{ field: TOO_LONG_FIELD, op: 'exists' }])) },
  { name: 'set key of 0 characters', path: '/input/set/', body: (t, s) => action(t, s, update([{ field: 'id', op: 'eq', value: 1 }], { '': 1 })) },
  { name: 'set key of 201 characters', path: `/input/set/${TOO_LONG_FIELD}`, body: (t, s) => action(t, s, update([{ field: 'id', op: 'eq', value: 1 }], { [TOO_LONG_FIELD]: 1 })) },
  { name: 'snapshot id of 0 characters', path: '/input/expectedSourceSnapshot/id', body: (t, s) => action(t, { ...s, id: '' }, upsert([{ id: 1, name: 'x' }])) },
  { name: 'snapshot id of 501 characters', path: '/input/expectedSourceSnapshot/id', body: (t, s) => action(t, { ...s, id: text(501, 'i') }, upsert([{ id: 1, name: 'x' }])) },
  { name: 'snapshot version of 0 characters', path: '/input/expectedSourceSnapshot/version', body: (t, s) => action(t, { ...s, version: '' }, upsert([{ id: 1, name: 'x' }])) },
  { name: 'snapshot version of 501 characters', path: '/input/expectedSourceSnapshot/version', body: (t, s) => action(t, { ...s, version: text(501, '9') }, upsert([{ id: 1, name: 'x' }])) },
  // Unknown fields anywhere, and the fields of another operation's variant.
  { name: 'unknown top-level field', path: '/extra', body: (t, s) => ({ ...action(t, s, upsert([{ id: 1, name: 'x' }])), extra: true }) },
  { name: 'unknown input field (upsert)', path: '/input/extra', body: (t, s) => withInput(t, s, upsert([{ id: 1, name: 'x' }]), { extra: true }) },
  { name: 'unknown input field (delete)', path: '/input/extra', body: (t, s) => withInput(t, s, del(idIn([1])), { extra: true }) },
  { name: 'where in an append', path: '/input/where', body: (t, s) => withInput(t, s, append([{ id: 6 }]), { where: idIn([1]) }) },
  { name: 'rows in an update', path: '/input/rows', body: (t, s) => withInput(t, s, update(idIn([1])), { rows: [{ id: 1 }] }) },
  { name: 'set in a delete', path: '/input/set', body: (t, s) => withInput(t, s, del(idIn([1])), { set: { name: 'x' } }) },
  { name: 'unknown condition field', path: '/input/where/0/extra', body: (t, s) => action(t, s, del([{ field: 'id', op: 'eq', value: 1, extra: true }])) },
  { name: 'unknown expectedSourceSnapshot field', path: '/input/expectedSourceSnapshot/extra', body: (t, s) => action(t, { ...s, extra: true } as Snapshot, upsert([{ id: 1, name: 'x' }])) },
  // contractVersion is the constant 1.
  { name: 'contractVersion 2', path: '/input/contractVersion', body: (t, s) => withInput(t, s, upsert([{ id: 1, name: 'x' }]), { contractVersion: 2 }) },
  { name: 'contractVersion 0', path: '/input/contractVersion', body: (t, s) => withInput(t, s, upsert([{ id: 1, name: 'x' }]), { contractVersion: 0 }) },
  { name: 'contractVersion "1"', path: '/input/contractVersion', body: (t, s) => withInput(t, s, upsert([{ id: 1, name: 'x' }]), { contractVersion: '1' }) },
  { name: 'contractVersion missing', path: '/input/contractVersion', body: (t, s) => ({ ...action(t, s, {}), input: { expectedSourceSnapshot: s, operation: 'upsert', rows: [{ id: 1, name: 'x' }] } }) },
  // actionId and projectId are UUIDs.
  { name: 'actionId not a UUID', path: '/actionId', body: (t, s) => action(t, s, upsert([{ id: 1, name: 'x' }]), { actionId: 'action-1' }) },
  { name: 'projectId not a UUID', path: '/projectId', body: (t, s) => action(t, s, upsert([{ id: 1, name: 'x' }]), { projectId: `${t.ws.projectId}x` }) },
  { name: 'operation outside the four', path: '/input/operation', alsoNamed: ['/input'], body: (t, s) => action(t, s, { operation: 'merge', rows: [{ id: 1, name: 'x' }] }) },
];

describe('Governed source writes: the bounds of SPEC section 8', function () {
  this.timeout(120_000);
  let t: WriteTenant;
  let endpointId: string;
  const writes = (dryRun = false) => `/api/v1/data-endpoints/${endpointId}/writes${dryRun ? '?dryRun=true' : ''}`;

  /** What a refused request must leave as it was: the rows, the current snapshot and the action log. */
  async function state() {
    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log`);
    assert.equal(log.status, 200, JSON.stringify(log.body));
    return { snapshot: await currentSnapshot(t.writer, endpointId), rows: await tableRows(t.writer, endpointId), logEntries: log.body.pagination.total as number };
  }

  before(async () => {
    t = await writeTenant();
    endpointId = await managedTable(t);
    await putPolicy(t, endpointId);
    const seeded = await t.writer.post(
      writes(),
      action(t, await currentSnapshot(t.writer, endpointId), append([{ id: 1, name: 'Ada', x: 'one', [LONG_FIELD]: 'long one' }, { id: 2, name: 'Bob' }, { id: 3, name: 'Cy' }])),
    );
    assert.equal(seeded.status, 200, JSON.stringify(seeded.body));
  });

  describe('just inside each bound: accepted', () => {
    for (const c of accepted) {
      it(c.name, async () => {
        const before = await state();
        // The real writes among these cases keep ids 1..3 (and add ids above 1000), so every dry run's expected counts hold in any order.
        assert.deepEqual(before.rows.filter((row) => Number(row.id) <= 3).map((row) => row.id), [1, 2, 3]);
        const body = c.body(t, before.snapshot);
        const res = await t.writer.post(writes(c.dryRun), body);
        c.check(res, body);
        const after = await state();
        if (c.dryRun) {
          assert.deepEqual(after, before, 'a dry run writes nothing');
        } else {
          assert.notDeepEqual(after.snapshot, before.snapshot, 'an applied write moves the snapshot');
          assert.deepEqual(after.snapshot, { id: res.body.writeAction.snapshotAfter.id, version: res.body.writeAction.snapshotAfter.version });
        }
      });
    }
  });

  describe('just outside each bound: 422 naming the path, and nothing written', () => {
    for (const c of refused) {
      it(`${c.name} → ${c.path.length > 60 ? `${c.path.slice(0, 40)}…` : c.path}`, async () => {
        const before = await state();
        const res = await t.writer.post(writes(), c.body(t, before.snapshot));
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.equal(res.body.code, 'validation_failed');
        const paths = (res.body.errors as Array<{ path: string; message: string }>).map((e) => e.path);
        // The offending path is named, and nothing else is blamed.
        assert.ok(paths.includes(c.path), JSON.stringify(res.body.errors));
        assert.deepEqual(paths.filter((path) => path !== c.path && !c.alsoNamed?.includes(path)), [], JSON.stringify(res.body.errors));
        assert.deepEqual(await state(), before);
      });
    }
  });
});
