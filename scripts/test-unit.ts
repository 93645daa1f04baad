/**
 * `npm run test:unit`: the unit tier, test/unit, whose tests need no PostgreSQL and no Temporal dev
 * server, in seconds. Its one set-up is Temporal's time-skipping test server for test/unit/workflows,
 * fetched once per machine. The tier is declared by the folder and checked by imports: a file under
 * test/unit that reaches test/support/environment.ts (which connects to both) or
 * test/support/external-postgres.ts (which creates databases on the test run's cluster), through
 * any relative import, fails the run before a test starts; it belongs in test/integration. Extra
 * arguments go to mocha. `npm test` runs this tier first, then test/integration with the stack.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { say } from './infra/process';
import { ensureTemporalTestServer } from './infra/temporal-test-server';
import { testFiles } from './test-files';

const testRoot = path.join(projectRoot, 'test');
const servicesReached = new Set(['environment.ts', 'external-postgres.ts'].map((file) => path.join(testRoot, 'support', file)));
const workflowUnitTests = path.join(testRoot, 'unit', 'workflows') + path.sep;
const IMPORT = /(?:from|import|require\()\s*['"](\.{1,2}\/[^'"]+)['"]/g;

/** The file a relative import names, if it is a TypeScript file under test/ (the tier's concern). */
function resolved(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(from), specifier);
  if (!base.startsWith(testRoot)) return undefined;
  return [`${base}.ts`, path.join(base, 'index.ts'), base].find((candidate) => candidate.endsWith('.ts') && existsSync(candidate));
}

const verdicts = new Map<string, boolean>();

/** Does this file, or anything it imports from test/, reach the environment? */
function needsEnvironment(file: string): boolean {
  if (servicesReached.has(file)) return true;
  const known = verdicts.get(file);
  if (known !== undefined) return known;
  verdicts.set(file, false);
  const source = readFileSync(file, 'utf8');
  const imports = [...source.matchAll(IMPORT)].map((match) => resolved(file, match[1])).filter((found): found is string => found !== undefined);
  const verdict = imports.some(needsEnvironment);
  verdicts.set(file, verdict);
  return verdict;
}

const unitRoot = path.join(testRoot, 'unit') + path.sep;
const named = process.argv.slice(2).filter((arg) => arg.endsWith('.test.ts')).map((arg) => path.resolve(arg));
const outside = named.filter((file) => !file.startsWith(unitRoot));
if (outside.length) {
  say(`not in the unit tier (test/unit): ${outside.map((file) => path.relative(projectRoot, file)).join(', ')}; run them with npm test`);
  process.exit(2);
}
const unit = named.length ? named : testFiles(unitRoot);
const needing = unit.filter((file) => needsEnvironment(file));
if (needing.length) {
  say(`these unit tests reach PostgreSQL or Temporal (test/support/environment.ts or external-postgres.ts): move them to test/integration: ${needing.map((file) => path.relative(projectRoot, file)).join(', ')}`);
  process.exit(2);
}
say(`unit tier: ${unit.length} test files in test/unit, without PostgreSQL or Temporal`);
// The workflow unit tests run Temporal's time-skipping test server: fetched once per machine, before mocha, so a Maven failure is not a test failure.
if (unit.some((file) => file.startsWith(workflowUnitTests))) ensureTemporalTestServer();
const mochaArgs = [
  path.join(projectRoot, 'node_modules', 'mocha', 'bin', 'mocha.js'),
  // Not .mocharc: its root hooks start PostgreSQL and Temporal.
  '--no-config', '--require', 'tsx/cjs', '--reporter', 'test/support/summary-reporter.cjs', '--timeout', '60000', '--slow', '2000', '--exit',
  ...unit.map((file) => path.relative(projectRoot, file)),
  ...process.argv.slice(2).filter((arg) => !arg.endsWith('.test.ts')),
];
const mocha = spawn(process.execPath, mochaArgs, { cwd: projectRoot, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } });
mocha.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
