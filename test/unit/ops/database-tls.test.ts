import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { Model } from 'objection';
import type pg from 'pg';
import { createDb, Db, migrateToLatest, pendingMigrations } from '../../../db/connection';
import { DatabaseTlsError, withTlsEnvironment } from '../../../db/tls';
import { createThrowawayDatabase, findPostgresBin } from '../../../scripts/infra/postgres';
import { isRoot, run, runAsPostgres } from '../../../scripts/infra/process';
import { certificateAuthority, IssuedCertificate } from '../../support/certificates';

/**
 * Weft against a PostgreSQL that speaks TLS, as an operator's DATABASE_URL names it
 * (`?sslmode=verify-full&sslrootcert=…`). A throwaway cluster of the project's own PostgreSQL
 * binaries, on a free port outside the range of the clones' clusters, with ssl=on and a server
 * certificate for 127.0.0.1 signed by a throwaway CA that openssl makes here.
 */

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts the cluster in `dir`; `stop` is safe to call whatever state it reached. */
async function startTlsCluster(dir: string, server: IssuedCertificate): Promise<{ port: number; stop(): void }> {
  const bin = findPostgresBin();
  const data = path.join(dir, 'data');
  // PostgreSQL runs as the postgres user when we are root: the folder and the key must be its own.
  chmodSync(server.key, 0o600);
  if (isRoot()) run('chown', ['-R', 'postgres:postgres', dir]);
  runAsPostgres(path.join(bin, 'initdb'), ['-D', data, '-U', 'weft', '--auth=trust', '--encoding=UTF8', '--no-sync', '--no-instructions'], { cwd: dir });
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file=${server.cert} -c ssl_key_file=${server.key} -c fsync=off`;
  const stop = () => {
    try {
      runAsPostgres(path.join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w'], { cwd: dir });
    } catch {
      // Not running (it never started).
    }
  };
  try {
    runAsPostgres(path.join(bin, 'pg_ctl'), ['start', '-D', data, '-w', '-t', '30', '-l', path.join(dir, 'server.log'), '-o', options], { cwd: dir });
  } catch (error) {
    stop();
    throw error;
  }
  return { port, stop };
}

describe('Weft’s database over TLS (sslmode and sslrootcert in DATABASE_URL)', function () {
  this.timeout(60_000);
  let dir: string;
  let cluster: Awaited<ReturnType<typeof startTlsCluster>> | undefined;
  let ca: string;
  let otherCa: string;
  // createDb makes its database Objection's default; the test run's own must stay it.
  const runsDefault = Model.knex();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'weft-pg-tls-'));
    const authority = certificateAuthority(dir, 'ca', 'Weft test CA');
    ca = authority.pem;
    otherCa = certificateAuthority(dir, 'other-ca', 'Another CA').pem;
    const server = authority.issue('server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
    cluster = await startTlsCluster(dir, server);
  });

  after(() => {
    cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const urlOf = (database: string, query = '') => `postgres://weft@127.0.0.1:${cluster!.port}/${database}${query}`;

  async function withDb<T>(url: string, work: (db: Db) => Promise<T>): Promise<T> {
    const db = createDb(url, { max: 2 });
    try {
      return await work(db);
    } finally {
      await db.destroy();
      Model.knex(runsDefault);
    }
  }

  const overTls = async (connection: Knex | pg.Client) => {
    const sql = 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()';
    const { rows } = 'raw' in connection ? await connection.raw(sql) : await connection.query(sql);
    return rows[0].ssl as boolean;
  };

  it('verifies the server against sslrootcert, and runs statements, migrations and a LISTEN connection over TLS', async () => {
    await withDb(urlOf('postgres', `?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`), async (db) => {
      assert.equal(await overTls(db), true);
      await migrateToLatest(db);
      assert.deepEqual(await pendingMigrations(db), []);
      assert.ok(await db.schema.hasTable('workspaces'), 'migrated');
      // A connection of its own from the pool's settings, as the definition cache's LISTEN takes it.
      const listening = (await (db.client as Knex.Client).acquireRawConnection()) as pg.Client;
      try {
        assert.equal(await overTls(listening), true);
      } finally {
        await (db.client as Knex.Client).destroyRawConnection(listening);
      }
    });
  });

  it('keeps TLS for a test run’s throwaway database on the DATABASE_URL server', async () => {
    const throwaway = await createThrowawayDatabase(urlOf('postgres', `?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`), 'weft_tls');
    try {
      await withDb(throwaway.url, async (db) => assert.equal(await overTls(db), true));
    } finally {
      await throwaway.drop();
    }
  });

  it('takes PGSSLMODE and PGSSLROOTCERT as libpq does, where the URL sets neither', async () => {
    const url = withTlsEnvironment(urlOf('postgres'), { PGSSLMODE: 'verify-full', PGSSLROOTCERT: ca });
    await withDb(url, async (db) => assert.equal(await overTls(db), true));
    assert.equal(withTlsEnvironment(urlOf('postgres', '?sslmode=disable'), { PGSSLROOTCERT: ca }), urlOf('postgres', '?sslmode=disable'), 'no TLS asked for, none added');
  });

  it('still takes a Unix-socket DATABASE_URL (host= in the query, no host in the authority)', async () => {
    const socketUrl = `postgres://weft@/postgres?host=${encodeURIComponent(dir)}&port=${cluster!.port}`;
    assert.equal(withTlsEnvironment(socketUrl, {}), socketUrl, 'no TLS asked for, unchanged');
    assert.equal(withTlsEnvironment(socketUrl, { PGSSLMODE: 'require' }), `${socketUrl}&sslmode=require`);
    await withDb(socketUrl, async (db) => assert.equal((await db.raw('SELECT 1 AS one')).rows[0].one, 1));
  });

  it('names the setting when a TLS file it names does not exist', async () => {
    const missing = path.join(dir, 'no-such-ca.pem');
    await withDb(urlOf('postgres', `?sslmode=verify-full&sslrootcert=${encodeURIComponent(missing)}`), async (db) => {
      await assert.rejects(migrateToLatest(db), (error: Error) => {
        assert.ok(error instanceof DatabaseTlsError, String(error));
        assert.equal(error.message, `The TLS file ${missing} does not exist: sslrootcert, sslcert or sslkey in DATABASE_URL (or PGSSLROOTCERT, PGSSLCERT, PGSSLKEY) names it.`);
        return true;
      });
    });
  });

  it('refuses a server whose certificate another CA signed, saying which setting to look at', async () => {
    await withDb(urlOf('postgres', `?sslmode=verify-full&sslrootcert=${encodeURIComponent(otherCa)}`), async (db) => {
      await assert.rejects(migrateToLatest(db), (error: Error) => {
        assert.ok(error instanceof DatabaseTlsError, String(error));
        assert.match(error.message, /TLS certificate was refused \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN): .*\)\. sslrootcert in DATABASE_URL/);
        return true;
      });
    });
  });
});
