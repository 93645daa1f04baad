import assert from 'node:assert/strict';
import { CastType, compileTransform, Row, TransformError, TransformNode, transformProblems } from '../../pipelines/transforms';

/** Runs a map node over records, refusing a dedupe node (the engine groups those). */
async function run(node: TransformNode, records: Row[]): Promise<Row[]> {
  const compiled = compileTransform(node);
  assert.equal(compiled.kind, 'map');
  return compiled.kind === 'map' ? compiled.apply(records) : [];
}

function keyOf(node: TransformNode, record: Row): string {
  const compiled = compileTransform(node);
  assert.equal(compiled.kind, 'dedupe');
  return compiled.kind === 'dedupe' ? compiled.keyOf(record) : '';
}

/** Casts one field of one record; `undefined` result means the field is absent. */
async function cast(type: CastType, value: unknown, onError: 'fail' | 'null' = 'fail'): Promise<unknown> {
  const [record] = await run({ id: 'clean', type: 'cast', fields: { v: type }, onError }, [{ v: value }]);
  return record.v;
}

async function rejection(work: () => Promise<unknown> | unknown): Promise<TransformError> {
  try {
    await work();
  } catch (error) {
    assert.ok(error instanceof TransformError, `expected a TransformError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a TransformError');
}

describe('Pipeline transforms', () => {
  describe('select', () => {
    it('keeps only the listed fields in their order and leaves out the absent ones rather than inventing nulls', async () => {
      const out = await run({ id: 's', type: 'select', fields: ['b', 'missing', 'a'] }, [{ a: 1, b: 2, c: 3 }]);
      assert.deepEqual(out, [{ b: 2, a: 1 }]);
      assert.deepEqual(Object.keys(out[0]), ['b', 'a']);
    });

    it('renames after selecting, including a swap, and keeps every field when no list is given', async () => {
      assert.deepEqual(await run({ id: 's', type: 'select', fields: ['a', 'b'], rename: { a: 'x' } }, [{ a: 1, b: 2, c: 3 }]), [{ x: 1, b: 2 }]);
      assert.deepEqual(await run({ id: 's', type: 'select', rename: { a: 'b', b: 'a' } }, [{ a: 1, b: 2, c: 3 }]), [{ b: 1, a: 2, c: 3 }]);
    });

    it('lets a renamed value win over an unselected field of the same name', async () => {
      assert.deepEqual(await run({ id: 's', type: 'select', rename: { old_total: 'total' } }, [{ total: 1, old_total: 2 }]), [{ total: 2 }]);
    });

    it('treats a field named __proto__ as data', async () => {
      const record = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Row;
      const [out] = await run({ id: 's', type: 'select', rename: { a: '__proto__' } }, [record]);
      assert.deepEqual(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, 1);
      assert.equal(Object.getPrototypeOf(out), Object.prototype);
    });
  });

  describe('filter', () => {
    it('keeps the records that match every condition', async () => {
      const records = [{ status: 'paid', total: 10 }, { status: 'paid', total: 1 }, { status: 'open', total: 50 }, { total: 99 }];
      const node: TransformNode = { id: 'f', type: 'filter', where: [{ field: 'status', op: 'eq', value: 'paid' }, { field: 'total', op: 'gte', value: 5 }] };
      assert.deepEqual(await run(node, records), [{ status: 'paid', total: 10 }]);
      assert.deepEqual(await run({ id: 'f', type: 'filter', where: [{ field: 'status', op: 'exists', value: false }] }, records), [{ total: 99 }]);
    });
  });

  describe('compute', () => {
    it('evaluates JSONata against each record: arithmetic, built-in functions and string concatenation', async () => {
      const node: TransformNode = {
        id: 'c',
        type: 'compute',
        fields: [
          { name: 'double', expression: 'total * 2' },
          { name: 'loud', expression: '$uppercase(status)' },
          { name: 'name', expression: 'first & " " & last' },
        ],
      };
      const out = await run(node, [{ total: 21, status: 'paid', first: 'Ada', last: 'Lovelace' }, { total: 1.5, status: 'open', first: 'Alan', last: 'Turing' }]);
      assert.deepEqual(out.map(({ double, loud, name }) => ({ double, loud, name })), [
        { double: 42, loud: 'PAID', name: 'Ada Lovelace' },
        { double: 3, loud: 'OPEN', name: 'Alan Turing' },
      ]);
    });

    it('lets a computed field use the fields computed before it in the same node, and overwrite an input field', async () => {
      const node: TransformNode = {
        id: 'c',
        type: 'compute',
        fields: [
          { name: 'net', expression: 'total - discount' },
          { name: 'gross', expression: 'net * 1.5' },
          { name: 'total', expression: 'gross' },
        ],
      };
      assert.deepEqual(await run(node, [{ total: 100, discount: 20 }]), [{ total: 120, discount: 20, net: 80, gross: 120 }]);
    });

    it('stores null when an expression yields nothing and plain arrays for JSONata sequences', async () => {
      const node: TransformNode = { id: 'c', type: 'compute', fields: [{ name: 'none', expression: 'missing.field' }, { name: 'xs', expression: 'items.x' }] };
      const [out] = await run(node, [{ items: [{ x: 1 }, { x: 2 }] }]);
      assert.equal(out.none, null);
      assert.ok(Object.hasOwn(out, 'none'));
      assert.deepEqual(out.xs, [1, 2]);
      assert.equal(Object.hasOwn(out.xs as object, 'sequence'), false);
    });

    it('fails with the node, the field and JSONata’s reason when an expression fails at runtime', async () => {
      const node: TransformNode = { id: 'calc', type: 'compute', fields: [{ name: 'sum', expression: '$sum(label)' }] };
      const error = await rejection(() => run(node, [{ label: 'a' }]));
      assert.equal(error.code, 'transform_failed');
      assert.equal(error.kind, 'invalid_input');
      assert.match(error.message, /^Node "calc" could not compute field "sum": .*sum.*\(T0412 at position \d+\)/);
      assert.deepEqual(error.details, { nodeId: 'calc', field: 'sum' });
    });

    it('refuses an expression whose result is a function rather than a JSON value, even nested', async () => {
      for (const expression of ['function($x) { $x }', '$uppercase', '{ "f": function($x) { $x } }']) {
        const error = await rejection(() => run({ id: 'c', type: 'compute', fields: [{ name: 'f', expression }] }, [{}]));
        assert.match(error.message, /^Node "c" could not compute field "f": the expression produced a function/, expression);
      }
    });

    it('stops runaway recursion with the depth guard and an endless loop with the time guard', async () => {
      const deep: TransformNode = { id: 'c', type: 'compute', fields: [{ name: 'r', expression: '($f := function($n) { $f($n + 1) + 1 }; $f(0))' }] };
      assert.match((await rejection(() => run(deep, [{}]))).message, /\(D1011 /);
      // A tail call does not deepen the stack, so only the 1 s timeout ends it.
      const endless: TransformNode = { id: 'c', type: 'compute', fields: [{ name: 'r', expression: '($f := function($n) { $f($n + 1) }; $f(0))' }] };
      assert.match((await rejection(() => run(endless, [{}]))).message, /\(D1012 /);
    });

    it('does not alias the input record’s nested objects in the output', async () => {
      const input = { items: [1, 2] };
      const [out] = await run({ id: 'c', type: 'compute', fields: [{ name: 'copy', expression: 'items' }] }, [input]);
      assert.deepEqual(out.copy, [1, 2]);
      assert.notEqual(out.copy, input.items);
    });
  });

  describe('cast', () => {
    it('turns scalars into strings and objects and arrays into JSON text', async () => {
      assert.equal(await cast('string', 42), '42');
      assert.equal(await cast('string', true), 'true');
      assert.equal(await cast('string', { a: [1] }), '{"a":[1]}');
      assert.equal(await cast('string', [1, 'x']), '[1,"x"]');
    });

    it('reads numbers from numbers and trimmed decimal text, refusing empty, hex, infinite and non-numeric text', async () => {
      assert.equal(await cast('number', ' 12.5 '), 12.5);
      assert.equal(await cast('number', '-1e3'), -1000);
      assert.equal(await cast('number', 7), 7);
      for (const bad of ['', '   ', 'abc', '0x10', 'Infinity', '1e400', true, [1]]) {
        assert.equal(await cast('number', bad, 'null'), null, `${JSON.stringify(bad)} is not a number`);
      }
    });

    it('reads whole numbers as integers, accepting "42" and 42.0 and refusing 42.5 and unsafe integers', async () => {
      assert.equal(await cast('integer', '42'), 42);
      assert.equal(await cast('integer', 42.0), 42);
      assert.equal(await cast('integer', '42.0'), 42);
      for (const bad of [42.5, '42.5', '12345678901234567890', 'x']) assert.equal(await cast('integer', bad, 'null'), null, `${String(bad)} is not an integer`);
    });

    it('normalises decimals into plain decimal strings without float error', async () => {
      assert.equal(await cast('decimal', '1.50'), '1.5');
      assert.equal(await cast('decimal', ' 1e3 '), '1000');
      assert.equal(await cast('decimal', 0.1), '0.1');
      assert.equal(await cast('decimal', '12345678901234567890.123456789'), '12345678901234567890.123456789');
      for (const bad of ['abc', '0x10', 'NaN', '1e999999999', false]) assert.equal(await cast('decimal', bad, 'null'), null, `${String(bad)} is not a decimal`);
    });

    it('reads booleans from true/false in any case, 1/0 and "1"/"0" only', async () => {
      for (const yes of [true, 'true', 'TRUE', ' True ', 1, '1']) assert.equal(await cast('boolean', yes), true, String(yes));
      for (const no of [false, 'false', 'False', 0, '0']) assert.equal(await cast('boolean', no), false, String(no));
      for (const bad of ['yes', 2, '', 'on']) assert.equal(await cast('boolean', bad, 'null'), null, String(bad));
    });

    it('writes timestamps as ISO 8601 UTC from ISO text, RFC text and epoch milliseconds', async () => {
      assert.equal(await cast('timestamp', '2024-01-02T10:00:00+02:00'), '2024-01-02T08:00:00.000Z');
      assert.equal(await cast('timestamp', '2024-01-02T10:00:00Z'), '2024-01-02T10:00:00.000Z');
      assert.equal(await cast('timestamp', '2024-01-02 10:00'), '2024-01-02T10:00:00.000Z', 'a time without offset is UTC, not the server zone');
      assert.equal(await cast('timestamp', '2024-01-02'), '2024-01-02T00:00:00.000Z');
      assert.equal(await cast('timestamp', 'Tue, 02 Jan 2024 10:00:00 GMT'), '2024-01-02T10:00:00.000Z');
      assert.equal(await cast('timestamp', 1704189600000), '2024-01-02T10:00:00.000Z');
    });

    it('refuses text that is not a real date instead of letting Date guess or roll it over', async () => {
      for (const bad of ['2024-02-30', '2024-13-01', '1', 'soon', '2024-01-02T24:00:00Z', '31 Feb 2024 10:00 GMT', 1e20, true]) {
        assert.equal(await cast('timestamp', bad, 'null'), null, String(bad));
      }
    });

    it('writes dates as YYYY-MM-DD in UTC', async () => {
      assert.equal(await cast('date', '2024-01-02T23:30:00-02:00'), '2024-01-03');
      assert.equal(await cast('date', 1704189600000), '2024-01-02');
      assert.equal(await cast('date', '2024-02-29'), '2024-02-29');
      assert.equal(await cast('date', '2023-02-29', 'null'), null);
    });

    it('parses JSON text and keeps values that are already structured', async () => {
      assert.deepEqual(await cast('json', '{"a":[1,2]}'), { a: [1, 2] });
      assert.equal(await cast('json', '3'), 3);
      assert.deepEqual(await cast('json', { a: 1 }), { a: 1 });
      assert.equal(await cast('json', '{oops', 'null'), null);
    });

    it('keeps null and undefined as null for every type and leaves absent fields absent', async () => {
      for (const type of ['string', 'number', 'integer', 'decimal', 'boolean', 'timestamp', 'date', 'json'] as CastType[]) {
        assert.equal(await cast(type, null), null, type);
        assert.equal(await cast(type, undefined), null, type);
      }
      const [out] = await run({ id: 'c', type: 'cast', fields: { absent: 'number' } }, [{ other: 1 }]);
      assert.deepEqual(out, { other: 1 });
    });

    it('fails by default with a message naming the node, field, value and type', async () => {
      const error = await rejection(() => run({ id: 'clean', type: 'cast', fields: { total: 'number' } }, [{ total: 'abc' }]));
      assert.equal(error.message, 'Node "clean" could not cast field "total" value "abc" to number.');
      assert.deepEqual(error.details, { nodeId: 'clean', field: 'total', value: '"abc"' });
    });

    it('truncates a large failing value to 200 characters in the details', async () => {
      const error = await rejection(() => run({ id: 'clean', type: 'cast', fields: { total: 'number' } }, [{ total: 'x'.repeat(5000) }]));
      assert.equal((error.details?.value as string).length, 200);
    });

    it('sets only the failing field to null with onError "null" and casts the rest', async () => {
      const node: TransformNode = { id: 'c', type: 'cast', fields: { a: 'integer', b: 'integer' }, onError: 'null' };
      assert.deepEqual(await run(node, [{ a: '1', b: 'two', c: 'x' }]), [{ a: 1, b: null, c: 'x' }]);
    });
  });

  describe('dedupe', () => {
    it('keys records by the JSON of their key values, keeping "1" and 1 apart', () => {
      const node: TransformNode = { id: 'd', type: 'dedupe', key: ['id', 'region'] };
      assert.equal(keyOf(node, { id: 1, region: 'eu', other: 'x' }), keyOf(node, { region: 'eu', id: 1, other: 'y' }));
      assert.equal(keyOf(node, { id: 1, region: 'eu' }), '[1,"eu"]');
      assert.notEqual(keyOf(node, { id: '1', region: 'eu' }), keyOf(node, { id: 1, region: 'eu' }));
      assert.notEqual(keyOf(node, { id: 1, region: 'eu' }), keyOf(node, { id: 1, region: 'us' }));
    });

    it('fails naming the key field when a record has no value for it', async () => {
      const node: TransformNode = { id: 'once', type: 'dedupe', key: ['id', 'email'] };
      for (const record of [{ id: 1 }, { id: 1, email: null }]) {
        const error = await rejection(() => keyOf(node, record));
        assert.match(error.message, /^Node "once" .*key field "email"/);
        assert.equal(error.details?.field, 'email');
      }
    });
  });

  describe('static problems', () => {
    it('report an unparseable expression at its path with JSONata’s message and position', () => {
      const problems = transformProblems({ id: 'c', type: 'compute', fields: [{ name: 'ok', expression: 'a + 1' }, { name: 'bad', expression: 'total *' }] });
      assert.equal(problems.length, 1);
      assert.equal(problems[0].path, '/fields/1/expression');
      assert.match(problems[0].message, /Unexpected end of expression.*position 7/);
    });

    it('report a repeated computed name', () => {
      const problems = transformProblems({ id: 'c', type: 'compute', fields: [{ name: 'x', expression: '1' }, { name: 'x', expression: '2' }] });
      assert.deepEqual(problems.map((p) => p.path), ['/fields/1/name']);
    });

    it('report two fields renamed to one name and a rename onto another selected field, but not a swap', () => {
      const collide = transformProblems({ id: 's', type: 'select', rename: { a: 'x', 'b/c': 'x' } });
      assert.deepEqual(collide.map((p) => p.path), ['/rename/b~1c']);
      assert.match(collide[0].message, /"x".*"a"/);
      assert.equal(transformProblems({ id: 's', type: 'select', fields: ['a', 'x'], rename: { a: 'x' } }).length, 1);
      assert.deepEqual(transformProblems({ id: 's', type: 'select', fields: ['a', 'b'], rename: { a: 'b', b: 'a' } }), []);
    });

    it('are empty for valid nodes of every type', () => {
      const nodes: TransformNode[] = [
        { id: 'a', type: 'select', fields: ['x'], rename: { x: 'y' } },
        { id: 'b', type: 'filter', where: [] },
        { id: 'c', type: 'compute', fields: [{ name: 'n', expression: '$string(x)' }] },
        { id: 'd', type: 'cast', fields: { x: 'json' } },
        { id: 'e', type: 'dedupe', key: ['x'] },
      ];
      for (const node of nodes) assert.deepEqual(transformProblems(node), [], node.type);
    });

    it('make compileTransform refuse the node with the problems attached', async () => {
      const error = await rejection(() => compileTransform({ id: 'c', type: 'compute', fields: [{ name: 'bad', expression: '(' }] }));
      assert.match(error.message, /^Node "c" is invalid: \/fields\/0\/expression/);
      assert.equal((error.details?.errors as unknown[]).length, 1);
    });
  });

  it('never mutates the input records', async () => {
    const records = [{ a: '1', b: 'x', nested: { n: 1 } }, { a: '2', b: 'y', nested: { n: 2 } }];
    const before = structuredClone(records);
    const nodes: TransformNode[] = [
      { id: 's', type: 'select', fields: ['a', 'nested'], rename: { a: 'z' } },
      { id: 'f', type: 'filter', where: [{ field: 'a', op: 'eq', value: '1' }] },
      { id: 'c', type: 'compute', fields: [{ name: 'a', expression: '$number(a) + 1' }] },
      { id: 't', type: 'cast', fields: { a: 'integer', b: 'json' }, onError: 'null' },
    ];
    for (const node of nodes) {
      const out = await run(node, records);
      out.forEach((record) => assert.ok(!records.includes(record as never), `${node.type} returned an input object`));
    }
    assert.deepEqual(records, before);
  });
});
