import { strict as assert } from 'node:assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { workflowBundlePath } from '../../../worker/workflow-bundle';

// The worker loads workflows from a bundle kept on disk (built in a child process, so webpack's heap
// never stays in the worker). It must be reused while its inputs are unchanged and rebuilt otherwise.
describe('The kept workflow bundle', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'weft-bundle-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const manifest = () => JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { code: string; inputs: Record<string, string> };

  it('is built once, names what it was built from, and is reused while that is unchanged', async () => {
    const first = await workflowBundlePath(dir);
    assert.equal(first.built, true);
    assert.match(readFileSync(first.codePath, 'utf8'), /pipelineRunWorkflow/, 'the bundle holds the workflows');
    const inputs = Object.keys(manifest().inputs);
    for (const input of ['workflows/index.ts', 'workflows/pipeline-run.ts', 'package-lock.json']) assert.ok(inputs.includes(input), `${input} is an input`);
    assert.ok(!inputs.some((input) => input.includes('node_modules')), 'dependencies are covered by the lockfile');
    assert.deepEqual(await workflowBundlePath(dir), { codePath: first.codePath, built: false });
  });

  it('is rebuilt when an input differs from what it was built from, or its code is gone', async () => {
    const kept = manifest();
    writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ ...kept, inputs: { ...kept.inputs, 'workflows/pipeline-run.ts': '0'.repeat(64) } }));
    const rebuilt = await workflowBundlePath(dir);
    assert.equal(rebuilt.built, true);
    assert.deepEqual(manifest().inputs, kept.inputs, 'the manifest names the inputs as they are now');
    rmSync(rebuilt.codePath);
    assert.equal((await workflowBundlePath(dir)).built, true);
  });
});
