import assert from 'node:assert/strict';
import { createDb, type Db } from '../../../db/connection';
import { managedTableCapability as capability } from '../../../plugins/managed-table';
import { workspaceSchema } from '../../../plugins/managed-table/storage';
import type { RecordsQuery } from '../../../plugins/capability';
import type { PluginInstallation } from '../../../db/models';
import { capabilityContext } from '../../../services/endpoints/data-endpoints';
import { installPlugin } from '../../../services/endpoints/plugins';
import type { ServiceDependencies } from '../../../services/operations/context';
import { env } from '../../support/environment';
import { newWorkspace } from '../../support/fixtures';

const plain: RecordsQuery = { where: [], orderBy: [], limit: 10 };
const provenance = { kind: 'write' as const, id: 'state-test' };

/**
 * Two sets of dependencies in one process, over one workspace (with two workspaces, caches keyed by
 * schema would never meet even if shared): what one runtime's managed tables learn (tables stored,
 * catalogs current, statements named) the other does not take for known.
 */
describe('Managed-table memory belongs to its runtime: two in one process share none of it', () => {
  let installation: PluginInstallation;
  let schema: string;

  beforeEach(async () => {
    const workspace = await newWorkspace();
    installation = await installPlugin(env().db, env().encryptionKey, workspace.workspaceId, 'managed_table', {});
    schema = workspaceSchema(workspace.workspaceId);
  });

  const contextOf = (deps: ServiceDependencies) => capabilityContext(deps.db, installation, deps);

  /** The statements `work` runs on the run's pool (a listener also keeps reads on knex, where it sees them). */
  async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
    const statements: string[] = [];
    const listen = (data: { sql: string }) => statements.push(data.sql);
    env().db.on('query', listen);
    try {
      await work();
    } finally {
      env().db.off('query', listen);
    }
    return statements;
  }

  it('a table one runtime has seen stored is not known to the other, which reads it the long way', async () => {
    const [first, second] = [env().dependencies(), env().dependencies()];
    const target = { table: 'kept_apart', primaryKey: ['id'] };
    await capability.writeRecords!(contextOf(first), target, { operation: 'append', rows: [{ id: 1 }, { id: 2 }], provenance });
    await capability.readRecords(contextOf(first), target, plain);

    const known = await statementsOf(() => capability.readRecords(contextOf(first), target, plain));
    assert.equal(known.length, 1, 'the runtime that has seen the table stored reads it in one statement');
    const unknown = await statementsOf(() => capability.readRecords(contextOf(second), target, plain));
    assert.ok(unknown.some((sql) => sql.includes('pg_attribute')), 'the other checks the catalog first');
    assert.ok(unknown.length > 1, 'and reads the registry, the snapshot and the page one by one');
    assert.deepEqual((await capability.readRecords(contextOf(second), target, plain)).records, [{ id: 1 }, { id: 2 }]);
  });

  it('a table dropped behind both is found gone by the one that had seen it, and never taken for stored by the other', async () => {
    const [first, second] = [env().dependencies(), env().dependencies()];
    const target = { table: 'dropped', primaryKey: ['id'] };
    await capability.writeRecords!(contextOf(first), target, { operation: 'append', rows: [{ id: 1 }], provenance });
    await capability.readRecords(contextOf(first), target, plain);
    await env().db.raw(`DROP TABLE "${schema}".dropped; DELETE FROM "${schema}"._tables WHERE table_name = 'dropped'`);

    const fresh = await statementsOf(() => capability.readRecords(contextOf(second), target, plain).then((page) => assert.deepEqual(page, { records: [], continuation: null })));
    assert.deepEqual(fresh.filter((sql) => sql.includes('json_build_object')), [], 'the runtime that never saw it goes the long way at once');
    const stale = await statementsOf(() => capability.readRecords(contextOf(first), target, plain).then((page) => assert.deepEqual(page, { records: [], continuation: null })));
    assert.ok(stale.some((sql) => sql.includes('json_build_object')), 'the one that had seen it stored tries the one statement, which finds it gone');
  });

  it('a catalog one runtime has seen current is checked again by the other', async () => {
    const [first, second] = [env().dependencies(), env().dependencies()];
    const target = { table: 'rewound' };
    await capability.writeRecords!(contextOf(first), target, { operation: 'append', rows: [{ a: 1 }], provenance });
    // The catalog as it was before the field registry: only a runtime that checks it brings it up to date.
    await env().db.raw(`ALTER TABLE "${schema}"._tables DROP COLUMN fields`);
    await capability.writeRecords!(contextOf(second), target, { operation: 'append', rows: [{ b: 2 }], provenance });
    assert.deepEqual((await capability.discoverSchema(contextOf(second), target)).fields.map((field) => field.name), ['a', 'b']);
  });

  it('runtimes sharing a pool name their prepared reads apart', async () => {
    // One connection, so both runtimes prepare their reads on the same PostgreSQL session.
    const pool: Db = createDb(process.env.DATABASE_URL!, { max: 1 });
    try {
      const [first, second] = [env().dependencies({ db: pool }), env().dependencies({ db: pool })];
      const tables = [{ deps: first, target: { table: 'left_side', primaryKey: ['id'] } }, { deps: second, target: { table: 'right_side', primaryKey: ['id'] } }];
      for (const { deps, target } of tables) await capability.writeRecords!(contextOf(deps), target, { operation: 'append', rows: [{ id: target.table }], provenance });
      for (let read = 0; read < 3; read++) {
        for (const { deps, target } of tables) {
          assert.deepEqual((await capability.readRecords(contextOf(deps), target, plain)).records, [{ id: target.table }], `${target.table}, read ${read + 1}`);
        }
      }
    } finally {
      await pool.destroy();
    }
  });
});
