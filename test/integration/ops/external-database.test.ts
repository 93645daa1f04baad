import assert from 'node:assert/strict';
import { createDb, migrateToLatest } from '../../../db/connection';
import { prepareInfrastructure } from '../../../scripts/infra/environment';
import { clientFor, externalDatabase } from '../../support/external-postgres';

/**
 * An external DATABASE_URL, as an operator's CI or staging server gives it. `npm test` (and any
 * throwaway run) works in a database of its own beside the named one and drops it afterwards; the
 * named database is never migrated or written. The URL reaches pg whole, so `sslmode` applies.
 */
const named = `weft_named_${process.pid}`;

/** The URL of `database` on the test cluster, as `role` when given, with extra query parameters. */
function urlOf(database: string, options: { role?: string; query?: string } = {}): string {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${database}`;
  if (options.role) url.username = options.role;
  url.search = options.query ?? '';
  return url.toString();
}

/** prepareInfrastructure as `npm test` calls it, with DATABASE_URL set to `databaseUrl` for the call. */
async function prepareTestRun(databaseUrl: string) {
  const saved = process.env.DATABASE_URL;
  process.env.DATABASE_URL = databaseUrl;
  try {
    return await prepareInfrastructure({ database: `weft_test_${process.pid}`, recreateDatabase: true, dropDatabaseOnStop: true, temporal: false });
  } finally {
    process.env.DATABASE_URL = saved;
  }
}

const databaseExists = async (name: string) => {
  const admin = clientFor('postgres');
  await admin.connect();
  try {
    return (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await admin.end();
  }
};

describe('A test run against an external DATABASE_URL', function () {
  this.timeout(120_000);
  let external: Awaited<ReturnType<typeof externalDatabase>>;

  beforeEach(async () => {
    external = await externalDatabase(named);
    await external.client.query('CREATE TABLE operator_data (id int PRIMARY KEY, note text); INSERT INTO operator_data VALUES (1, $$keep me$$)');
  });
  afterEach(async () => {
    await external.drop();
  });

  const snapshot = async () => ({
    tables: (await external.client.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).rows,
    rows: (await external.client.query('SELECT * FROM operator_data ORDER BY id')).rows,
  });

  it('runs in a throwaway database of its own on that server, dropped afterwards, leaving the named database untouched', async () => {
    const before = await snapshot();
    const infra = await prepareTestRun(urlOf(named, { query: '?application_name=weft-ci' }));
    const throwaway = decodeURIComponent(new URL(infra.databaseUrl).pathname.slice(1));
    try {
      assert.notEqual(throwaway, named);
      assert.match(throwaway, new RegExp(`^weft_test_${process.pid}_[0-9a-f]{8}$`));
      assert.equal(new URL(infra.databaseUrl).search, '?application_name=weft-ci', 'the URL keeps its parameters (sslmode and the like)');
      assert.equal(await databaseExists(throwaway), true);
      // What the run does there: migrate and write.
      const db = createDb(infra.databaseUrl, { max: 2 });
      try {
        assert.ok((await migrateToLatest(db)).length > 0);
        await db('workspaces').insert({ name: 'Test run' });
      } finally {
        await db.destroy();
      }
    } finally {
      await infra.stop();
    }
    assert.equal(await databaseExists(throwaway), false, 'dropped at the end');
    assert.deepEqual(await snapshot(), before, 'the named database was neither migrated nor written');
  });

  it('refuses with a clear message when the role may not create databases', async () => {
    const role = `weft_no_createdb_${process.pid}`;
    await external.client.query(`CREATE ROLE ${role} LOGIN NOCREATEDB`);
    try {
      const before = await snapshot();
      await assert.rejects(prepareTestRun(urlOf(named, { role })), (error: Error) => {
        assert.match(error.message, new RegExp(`${role} may not create databases on the DATABASE_URL server`));
        assert.match(error.message, new RegExp(`never migrates or writes into ${named}`));
        assert.match(error.message, new RegExp(`ALTER ROLE ${role} CREATEDB`));
        return true;
      });
      assert.deepEqual(await snapshot(), before);
    } finally {
      await external.client.query(`DROP ROLE ${role}`);
    }
  });
});

describe('PostgreSQL over TLS through DATABASE_URL', () => {
  it('sslmode in the URL reaches the connection: verify-full insists on TLS, disable does not', async () => {
    // The test cluster serves plaintext only, so a connection that insists on TLS is refused by it.
    const insisting = createDb(urlOf('postgres', { query: '?sslmode=verify-full' }), { max: 1 });
    try {
      await assert.rejects(insisting.raw('SELECT 1'), /does not support SSL/);
    } finally {
      await insisting.destroy();
    }
    const plain = createDb(urlOf('postgres', { query: '?sslmode=disable' }), { max: 1 });
    try {
      assert.equal((await plain.raw<{ rows: Array<{ one: number }> }>('SELECT 1 AS one')).rows[0].one, 1);
    } finally {
      await plain.destroy();
    }
  });

  it('sslrootcert in the URL names the CA file the connection verifies the server with', async () => {
    // pg reads the file when it connects: a missing one shows the setting was taken from the URL.
    const db = createDb(urlOf('postgres', { query: '?sslmode=verify-full&sslrootcert=/nonexistent/weft-ca.pem' }), { max: 1 });
    try {
      await assert.rejects(db.raw('SELECT 1'), /ENOENT.*\/nonexistent\/weft-ca\.pem/);
    } finally {
      await db.destroy();
    }
  });
});
