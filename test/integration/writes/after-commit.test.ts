import assert from 'node:assert/strict';
import { afterCommit, committing } from '../../../db/after-commit';
import { env } from '../../support/environment';

/**
 * Work left for after a commit waits for the outermost transaction: the apply activity of governed
 * writes runs invoke's transaction as a savepoint of its own, and a released savepoint is not a commit.
 */
describe('Work after a commit', () => {
  // Every reaction of a settled transaction has run once the event loop turns.
  const settled = () => new Promise((resolve) => setImmediate(resolve));

  it('queued inside a savepoint runs only once the outer transaction commits', async () => {
    const ran: string[] = [];
    await env().db.transaction(async (outer) => {
      await committing(outer, async (savepoint) => {
        assert.ok(savepoint.parentTransaction, 'on a transaction, committing() opens a savepoint');
        afterCommit(savepoint, () => void ran.push('in the savepoint'));
      });
      await settled();
      assert.deepEqual(ran, [], 'released savepoint: nothing ran yet');
      await outer.raw('SELECT 1');
      await settled();
      assert.deepEqual(ran, [], 'still before the commit');
    });
    await settled();
    assert.deepEqual(ran, ['in the savepoint']);
  });

  it('queued inside a released savepoint never runs when the outer transaction rolls back', async () => {
    const ran: string[] = [];
    await assert.rejects(env().db.transaction(async (outer) => {
      await committing(outer, async (savepoint) => {
        afterCommit(savepoint, () => void ran.push('in the savepoint'));
        await savepoint.transaction(async (inner) => afterCommit(inner, () => void ran.push('two savepoints deep')));
      });
      throw new Error('the outer transaction fails after the savepoint');
    }), /the outer transaction fails/);
    await settled();
    assert.deepEqual(ran, []);
  });

  it('queued inside a savepoint that rolls back never runs, though the outer transaction commits', async () => {
    const ran: string[] = [];
    await env().db.transaction(async (outer) => {
      afterCommit(outer, () => void ran.push('outer'));
      await assert.rejects(committing(outer, async (savepoint) => {
        afterCommit(savepoint, () => void ran.push('in the savepoint'));
        throw new Error('the savepoint fails');
      }));
    });
    await settled();
    assert.deepEqual(ran, ['outer']);
  });

  it('committing() on the pool runs the queued work, savepoints included, before it returns; none on a rollback', async () => {
    const ran: string[] = [];
    await committing(env().db, async (trx) => {
      afterCommit(trx, () => void ran.push('top'));
      await trx.transaction(async (savepoint) => afterCommit(savepoint, async () => {
        await settled();
        ran.push('savepoint');
      }));
      assert.deepEqual(ran, []);
    });
    assert.deepEqual(ran, ['top', 'savepoint'], 'awaited before committing() returned');
    await assert.rejects(committing(env().db, async (trx) => {
      afterCommit(trx, () => void ran.push('rolled back'));
      throw new Error('rolls back');
    }));
    await settled();
    assert.deepEqual(ran, ['top', 'savepoint']);
    // Outside a transaction the work runs at once.
    afterCommit(env().db, () => void ran.push('at once'));
    assert.deepEqual(ran.at(-1), 'at once');
  });
});
