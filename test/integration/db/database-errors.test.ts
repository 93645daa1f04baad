import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { problemFromDatabaseError } from '../../../api/middleware/errors';
import { env } from '../../support/environment';
import { newWorkspace } from '../../support/fixtures';

/** Runs a statement that PostgreSQL refuses and returns the error it raised. */
async function refusal(statement: () => Promise<unknown>): Promise<{ code?: string }> {
  try {
    await statement();
  } catch (error) {
    return ((error as { nativeError?: unknown }).nativeError ?? error) as { code?: string };
  }
  throw new Error('the statement was expected to fail');
}

describe('Database errors from a real PostgreSQL', () => {
  it('become 4xx problems: unique 409, foreign key 409, not null 422, bad values 422', async () => {
    const ws = await newWorkspace();
    const db = env().db;
    const cases: Array<[string, () => Promise<unknown>, number, string]> = [
      ['unique', () => db('projects').insert({ workspaceId: ws.workspaceId, name: 'default' }), 409, 'already_exists'],
      ['foreign key', () => db('projects').insert({ workspaceId: randomUUID(), name: 'orphan' }), 409, 'reference_conflict'],
      ['not null', () => db('projects').insert({ workspaceId: ws.workspaceId, name: null }), 422, 'missing_field'],
      ['NUL in text', () => db('projects').insert({ workspaceId: ws.workspaceId, name: 'a\u0000b' }), 422, 'invalid_value'],
      ['malformed uuid', () => db('projects').where({ id: 'not-a-uuid' }), 422, 'invalid_value'],
      ['check constraint', () => db('members').insert({ workspaceId: ws.workspaceId, name: 'x', role: 'emperor' }), 422, 'invalid_value'],
    ];
    for (const [label, statement, status, code] of cases) {
      const error = await refusal(statement);
      const problem = problemFromDatabaseError(error, 'req-1');
      assert.ok(problem, `${label} (${error.code}) is not mapped`);
      assert.equal(problem.status, status, label);
      assert.equal(problem.code, code, label);
    }
  });

  it('leaves server-side failures unmapped, so they stay 500s that are logged', async () => {
    const error = await refusal(() => env().db.raw('SELECT * FROM no_such_table'));
    assert.equal(problemFromDatabaseError(error, 'req-2'), undefined);
  });
});
