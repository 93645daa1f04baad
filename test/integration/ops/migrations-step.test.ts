import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { createDb, migrateToLatest, pendingMigrations } from '../../../db/connection';
import { projectRoot } from '../../../core/paths';
import { externalDatabase } from '../../support/external-postgres';
import { BUILT_START, freePort, runAdmin, runScript } from '../../support/processes';

/**
 * Migrating is a deployment step: `npm run migrate` (admin migrate) applies migrations, and API,
 * worker and admin processes started against a DATABASE_URL refuse an older schema instead of
 * migrating it on the way. Each test gets a fresh database on the test cluster.
 */
const migrationFiles = readdirSync(path.join(projectRoot, 'db', 'migrations')).filter((file) => file.endsWith('.ts')).sort();

describe('Migrations as a step', function () {
  this.timeout(180_000);
  let fresh: Awaited<ReturnType<typeof externalDatabase>>;
  let freshUrl: string;
  const name = `weft_migrate_step_${process.pid}`;

  beforeEach(async () => {
    fresh = await externalDatabase(name);
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${name}`;
    freshUrl = url.toString();
  });
  afterEach(async () => {
    await fresh.drop();
  });

  const tables = async () => (await fresh.client.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).rows.map((row) => row.tablename);

  it('two processes migrating a fresh database at once both succeed, applying each migration once', async () => {
    // Two pools, as two processes have: started together, so they meet on the bookkeeping tables and the lock.
    const [first, second] = [createDb(freshUrl, { max: 3 }), createDb(freshUrl, { max: 3 })];
    try {
      const [appliedByFirst, appliedBySecond] = await Promise.all([migrateToLatest(first), migrateToLatest(second)]);
      assert.deepEqual([...appliedByFirst, ...appliedBySecond].sort(), migrationFiles, 'between them, every migration applied exactly once');
      const rows = await fresh.client.query<{ name: string }>('SELECT name FROM knex_migrations ORDER BY name');
      assert.deepEqual(rows.rows.map((row) => row.name), migrationFiles);
      assert.deepEqual(await migrateToLatest(first), [], 'a current schema: nothing to do');
    } finally {
      await Promise.all([first.destroy(), second.destroy()]);
    }
  });

  it('an API or worker process against a DATABASE_URL with pending migrations refuses to start, and migrates nothing', async () => {
    for (const role of ['api', 'worker']) {
      const result = await runScript(BUILT_START, [role], { DATABASE_URL: freshUrl, PORT: String(await freePort()), HOST: '127.0.0.1' });
      assert.notEqual(result.code, 0, `${role} should refuse to start`);
      assert.match(result.stderr, new RegExp(`schema is not current: ${migrationFiles.length} migration\\(s\\) pending .*Run \`npm run migrate\``), `${role}: ${result.stderr}`);
    }
    assert.deepEqual(await tables(), [], 'nothing was created in the database');
  });

  it('the admin CLI against a DATABASE_URL does not migrate on the way, and works once `npm run migrate` ran', async () => {
    const bootstrap = () => runAdmin(['bootstrap', '--workspace', 'Step Corp', '--json'], { DATABASE_URL: freshUrl });
    const refused = await bootstrap();
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /^admin: The database schema is not current: .*Run `npm run migrate`/);
    assert.equal(refused.stdout, '');
    assert.deepEqual(await tables(), []);

    const migrated = await runAdmin(['migrate'], { DATABASE_URL: freshUrl });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stdout, /^applied: /);
    const created = await bootstrap();
    assert.equal(created.code, 0, created.stderr);
    assert.ok(JSON.parse(created.stdout).workspaceId);
  });

  it('the schema check reads without writing: a fresh database gets no bookkeeping tables from it', async () => {
    const db = createDb(freshUrl, { max: 1 });
    try {
      assert.deepEqual(await pendingMigrations(db), migrationFiles);
      assert.deepEqual(await tables(), []);
    } finally {
      await db.destroy();
    }
  });
});
