import assert from 'node:assert/strict';
import path from 'node:path';
import { projectRoot } from '../../core/paths';

// ESLint is ESM-only; load it at run time from this CommonJS test.
const loadEslint = () => import('eslint') as Promise<typeof import('eslint')>;

async function lintWorkflowSource(source: string, file = 'workflows/probe.ts'): Promise<string[]> {
  const { ESLint } = await loadEslint();
  // The probe file is virtual, so type-aware rules (which need it in the TS project) are off here.
  const eslint = new ESLint({
    cwd: projectRoot,
    overrideConfig: {
      languageOptions: { parserOptions: { projectService: false } },
      rules: { '@typescript-eslint/no-floating-promises': 'off' },
    },
  });
  const [result] = await eslint.lintText(source, { filePath: path.join(projectRoot, file) });
  return result.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe('The workflow determinism lint rules', function () {
  this.timeout(30_000);

  it('reject Node built-ins, database clients and I/O modules in workflow code', async () => {
    const problems = await lintWorkflowSource(
      "import fs from 'node:fs';\nimport knex from 'knex';\nimport { createDb } from '../db/connection';\nexport const w = [fs, knex, createDb];\n",
    );
    assert.equal(problems.filter((p) => p.startsWith('no-restricted-imports')).length, 3, problems.join('\n'));
  });

  it('reject timers and fetch, which bypass the replayable workflow clock and activities', async () => {
    const problems = await lintWorkflowSource('export async function w() { setTimeout(() => 1, 5); return fetch("http://x"); }\n');
    assert.equal(problems.filter((p) => p.startsWith('no-restricted-globals')).length, 2, problems.join('\n'));
  });

  it('allow type-only imports of activities, as proxyActivities needs', async () => {
    const problems = await lintWorkflowSource("import type { SystemActivities } from '../activities/system-check';\nexport type A = SystemActivities;\n");
    assert.deepEqual(problems, []);
  });

  it('leave activity code free to do I/O', async () => {
    const problems = await lintWorkflowSource("import fs from 'node:fs';\nexport const a = fs;\n", 'activities/probe.ts');
    assert.deepEqual(problems, []);
  });
});
