import assert from 'node:assert/strict';
import { findCapability } from '../../plugins';

// Guards follow the data: two targets are the same data exactly when their capability's
// dataIdentity says so, whatever installation, paging or window reaches it.

const identity = (capability: string, target: Record<string, unknown>, settings: Record<string, unknown> = {}) =>
  findCapability(capability, '1.0.0').dataIdentity(target, settings);

describe('A data identity', () => {
  describe('of a managed table', () => {
    it('is the table: its primary key or the installation does not change the data', () => {
      assert.equal(identity('managed_table', { table: 'salaries' }), 'managed_table:salaries');
      assert.equal(identity('managed_table', { table: 'salaries', primaryKey: ['id'] }), identity('managed_table', { table: 'salaries' }));
      assert.notEqual(identity('managed_table', { table: 'salaries' }), identity('managed_table', { table: 'salaries_2' }));
    });
  });

  describe('of a PostgreSQL table', () => {
    const db = { host: 'DB.Example.com', port: 5433, database: 'payroll', user: 'reader' };
    it('is the database the installation connects to, the schema and the table, not the role', () => {
      assert.equal(identity('postgres_table', { schema: 'hr', table: 'salaries' }, db), 'postgres_table://db.example.com:5433/payroll/hr.salaries');
      assert.equal(identity('postgres_table', { schema: 'hr', table: 'salaries' }, { ...db, user: 'writer', host: 'db.example.com' }), identity('postgres_table', { schema: 'hr', table: 'salaries' }, db));
    });
    it('fills the default port and schema, and tells other databases, schemas and tables apart', () => {
      const base = identity('postgres_table', { table: 'salaries' }, { host: 'db', database: 'payroll', user: 'u' });
      assert.equal(base, identity('postgres_table', { schema: 'public', table: 'salaries' }, { host: 'db', port: 5432, database: 'payroll', user: 'u' }));
      for (const [target, settings] of [
        [{ table: 'salaries' }, { host: 'db', database: 'other', user: 'u' }],
        [{ table: 'salaries' }, { host: 'db2', database: 'payroll', user: 'u' }],
        [{ schema: 'hr', table: 'salaries' }, { host: 'db', database: 'payroll', user: 'u' }],
        [{ table: 'salaries2' }, { host: 'db', database: 'payroll', user: 'u' }],
      ] as const) assert.notEqual(identity('postgres_table', target, settings), base);
    });
    it('cannot be forged by names holding its separators', () => {
      // A database named "pay/hr" is not the database "pay" with a schema "hr".
      assert.equal(identity('postgres_table', { table: 't' }, { host: 'db', database: 'pay/hr', user: 'u' }), 'postgres_table://db:5432/pay%2Fhr/public.t');
      assert.notEqual(
        identity('postgres_table', { table: 't' }, { host: 'db', database: 'pay/hr', user: 'u' }),
        identity('postgres_table', { schema: 'hr', table: 't' }, { host: 'db', database: 'pay', user: 'u' }),
      );
    });
  });

  describe('of an HTTP dataset', () => {
    const target = (extra: Record<string, unknown> = {}, query: Record<string, string> = { status: 'open', region: 'eu' }) => ({
      request: { url: 'https://API.example.com/v1/orders?region=eu', query },
      ...extra,
    });
    it('is the resolved URL with its fixed query parameters sorted', () => {
      assert.equal(identity('http_dataset', target()), 'http_dataset:https://api.example.com/v1/orders?region=eu&status=open');
      assert.equal(identity('http_dataset', target({}, { region: 'eu', status: 'open' })), identity('http_dataset', target()));
    });
    it('leaves out the parameters a read varies: the window and the paging', () => {
      const paged = target({
        window: { startParameter: 'since', endParameter: 'until', lookback: 'P30D' },
        pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 50 },
      });
      assert.equal(identity('http_dataset', paged), identity('http_dataset', target()));
      const limited = target({ pagination: { type: 'offset', parameter: 'offset', limitParameter: 'limit', limit: 10 } });
      assert.equal(identity('http_dataset', limited), identity('http_dataset', target()));
    });
    it('tells another fixed parameter value, path or host apart', () => {
      assert.notEqual(identity('http_dataset', target({}, { status: 'closed', region: 'eu' })), identity('http_dataset', target()));
      assert.notEqual(identity('http_dataset', { request: { url: 'https://api.example.com/v1/invoices' } }), identity('http_dataset', { request: { url: 'https://api.example.com/v1/orders' } }));
      assert.notEqual(identity('http_dataset', { request: { url: 'https://other.example.com/v1/orders' } }), identity('http_dataset', { request: { url: 'https://api.example.com/v1/orders' } }));
    });
  });
});
