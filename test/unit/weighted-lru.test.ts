import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WeightedLru } from '../../ontology/dataset-cache';

/**
 * The bounded map behind the SPARQL endpoint's kept graphs, dataset versions and parses. A read
 * moves an entry to the back only when it was placed there more than half the bound ago: these
 * tests hold it to what a plain least-recently-used map guarantees for what callers rely on.
 */
describe('WeightedLru', () => {
  it('evicts the least recently used entry, not one read since', () => {
    const lru = new WeightedLru<number>(4, 1_000);
    for (const key of ['a', 'b', 'c', 'd']) lru.set(key, 1, 1);
    // 'a' was placed first: four placements ago, past half the bound, so this read moves it back.
    assert.equal(lru.get('a'), 1);
    lru.set('e', 1, 1);
    assert.equal(lru.get('b'), undefined, 'b, the least recently used, went');
    assert.equal(lru.get('a'), 1, 'a, read since, stayed');
    assert.equal(lru.size, 4);
  });

  it('keeps an entry read on every request however many others come and go', () => {
    const lru = new WeightedLru<string>(8, 1_000_000);
    lru.set('hot', 'kept', 1);
    for (let i = 0; i < 1_000; i++) {
      assert.equal(lru.get('hot'), 'kept', `after ${i} other entries`);
      lru.set(`cold-${i}`, 'x', 1);
    }
    assert.equal(lru.size, 8);
  });

  it('stays within its weight, and refuses an entry that alone outweighs it', () => {
    const lru = new WeightedLru<string>(100, 10);
    lru.set('a', 'a', 6);
    lru.set('b', 'b', 6);
    assert.equal(lru.get('a'), undefined, 'a made room for b');
    assert.equal(lru.get('b'), 'b');
    assert.equal(lru.set('huge', 'huge', 11), 'huge');
    assert.equal(lru.get('huge'), undefined);
    assert.equal(lru.get('b'), 'b');
  });

  it('keeps every key after whose last use at most half the bound of other keys were used (property)', () => {
    // Against a model of last uses, with no weight bound: the count never passes max either.
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.record({ write: fc.boolean(), key: fc.integer({ min: 0, max: 9 }) }), { maxLength: 200 }),
        (max, operations) => {
          const lru = new WeightedLru<number>(max, Number.MAX_SAFE_INTEGER);
          const lastUse = new Map<number, number>();
          operations.forEach(({ write, key }, step) => {
            if (write) {
              lru.set(String(key), key, 1);
              lastUse.set(key, step);
            } else if (lru.get(String(key)) !== undefined) {
              lastUse.set(key, step);
            }
            assert.ok(lru.size <= max);
            for (const [used, at] of lastUse) {
              // A true LRU keeps the max most recently used keys; this one keeps at least every key
              // after whose last use at most floor(max / 2) other keys were used.
              const newer = [...lastUse.values()].filter((other) => other > at).length;
              if (newer <= Math.floor(max / 2)) assert.ok(lru.has(String(used)), `key ${used} (max ${max}, step ${step})`);
            }
          });
        },
      ),
      { numRuns: 1000 },
    );
  });
});
