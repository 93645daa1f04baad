import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { projectRoot } from '../../../core/paths';
import * as errorClasses from '../../../core/errors';
import { registry } from '../../../observability/metrics';
import { newWorkspace, request } from '../../support/fixtures';
import { connectWatched } from '../../support/mcp-client';
import { runAdmin } from '../../support/processes';

// What Weft shows the world, recorded, so that a refactoring (issue 37) that should change nothing
// a client sees is proven to change nothing: the OpenAPI document, the MCP tool lists of both kinds
// of connection, the error codes the code can throw, the metric names with their labels, and the
// shape of every operator CLI command's --json output. A change that is meant is re-recorded with
// `npm run record-interface` and reviewed in the diff of the record.

const RECORD_FILE = path.join(projectRoot, 'test', 'fixtures', 'interface-record.json');
const recording = process.env.WEFT_RECORD_INTERFACE === '1';

/** The JSON type of every value, keys sorted: what a client parsing the output relies on, without the ids and times. */
function shapeOf(value: unknown): unknown {
  if (value === null) return 'null';
  if (Array.isArray(value)) return value.length ? [shapeOf(value[0])] : [];
  if (typeof value === 'object') return Object.fromEntries(Object.keys(value as object).sort().map((key) => [key, shapeOf((value as Record<string, unknown>)[key])]));
  return typeof value;
}

/** Object keys sorted at every level, so the record's text changes only when its content does. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value && typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]));
  return value;
}

const SOURCE_FOLDERS = ['activities', 'api', 'console/server', 'core', 'db', 'mcp', 'observability', 'ontology', 'pipelines', 'plugins', 'schemas', 'scripts', 'services', 'worker', 'workflows'];

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/**
 * Every `new XError('code', …)` of a DomainError class in the sources, by the error's kind. Codes
 * built at run time (a variable as the first argument) are not seen; they are few and come from
 * tables of literal codes that this scan reads where they are thrown.
 */
function thrownErrorCodes(): Record<string, string[]> {
  const kindOf = new Map<string, string>();
  const codes = new Map<string, Set<string>>();
  const add = (kind: string, code: string) => codes.set(kind, (codes.get(kind) ?? new Set()).add(code));
  for (const [name, value] of Object.entries(errorClasses)) {
    if (typeof value !== 'function' || !(value.prototype instanceof errorClasses.DomainError)) continue;
    const probe = Reflect.construct(value, ['probe', 'probe', { dimension: 'probe' }]) as errorClasses.DomainError;
    // A class with a fixed code (RateLimitError) takes a message first: record its code, not its messages.
    if (probe.code === 'probe') kindOf.set(name, probe.kind);
    else add(probe.kind, probe.code);
  }
  for (const file of SOURCE_FOLDERS.flatMap((folder) => sourceFiles(path.join(projectRoot, folder)))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
    const visit = (node: ts.Node): void => {
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && kindOf.has(node.expression.text)) {
        const first = node.arguments?.[0];
        if (first && ts.isStringLiteralLike(first)) {
          add(kindOf.get(node.expression.text)!, first.text);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return Object.fromEntries([...codes.keys()].sort().map((kind) => [kind, [...codes.get(kind)!].sort()]));
}

async function metricNames(): Promise<Record<string, { type: string; labels: string[] }>> {
  // Weft's own: the runtime's default metrics (nodejs_*, process_*) vary with the Node version.
  const metrics = (await registry.getMetricsAsJSON()).filter((metric) => metric.name.startsWith('weft_'));
  const declared = registry.getMetricsAsArray() as unknown as Array<{ name: string; labelNames?: string[] }>;
  const labelsOf = new Map(declared.map((metric) => [metric.name, [...(metric.labelNames ?? [])].sort()]));
  return Object.fromEntries(metrics.map((metric) => [metric.name, { type: String(metric.type), labels: labelsOf.get(metric.name) ?? [] }]).sort(([a], [b]) => String(a).localeCompare(String(b))));
}

async function toolList(key: string, connection: string): Promise<unknown> {
  const { client } = await connectWatched(key, { path: connection });
  try {
    return (await client.listTools()).tools;
  } finally {
    await client.close();
  }
}

async function cliShapes(): Promise<Record<string, unknown>> {
  const admin = async (...args: string[]) => {
    const result = await runAdmin([...args, '--json']);
    assert.equal(result.code, 0, `admin ${args.join(' ')}: ${result.stderr}`);
    return JSON.parse(result.stdout) as Record<string, any>;
  };
  // Independent commands run side by side: each is a process of its own, and most of its time is start-up.
  const [bootstrap, migrated] = await Promise.all([admin('bootstrap', '--workspace', 'Interface record', '--owner', 'Owner'), admin('migrate')]);
  const workspace = bootstrap.workspaceId as string;
  const [installed, added, invited, planned] = await Promise.all([
    admin('plugin', 'install', '--workspace', workspace, '--capability', 'http_dataset', '--config', JSON.stringify({ baseUrl: 'https://example.com/api' })),
    admin('member', 'add', '--workspace', workspace, '--name', 'Second', '--role', 'member'),
    admin('member', 'invite', '--workspace', workspace, '--email', `new-${Date.now()}@example.com`, '--role', 'admin'),
    admin('plan', 'set', '--workspace', workspace, '--plan', 'team'),
  ]);
  const keyCreated = await admin('key', 'create', '--workspace', workspace, '--member', added.memberId, '--name', 'record', '--scopes', 'org:read');
  const removed = await admin('member', 'remove', '--workspace', workspace, '--member', added.memberId);
  const shapes = {
    bootstrap, migrate: migrated, 'plugin install': installed, 'member add': added, 'member invite': invited, 'plan set': planned, 'key create': keyCreated, 'member remove': removed,
  };
  return Object.fromEntries(Object.entries(shapes).map(([command, output]) => [command, shapeOf(output)]));
}

describe('What Weft shows the world (the interface record)', function () {
  this.timeout(180_000);

  it('is unchanged: OpenAPI, MCP tools, error codes, metric names and the CLI’s --json output', async () => {
    const ws = await newWorkspace();
    const openapi = await request('GET', '/api/v1/openapi.json');
    assert.equal(openapi.status, 200);
    const current = sortedKeys({
      openapi: openapi.body,
      mcpTools: {
        workspaceConnection: await toolList(ws.apiKey, '/mcp'),
        projectConnection: await toolList(ws.apiKey, `/mcp/projects/${ws.projectId}`),
      },
      errorCodes: thrownErrorCodes(),
      metrics: await metricNames(),
      cli: await cliShapes(),
    }) as Record<string, unknown>;
    if (recording) {
      writeFileSync(RECORD_FILE, `${JSON.stringify(current, null, 2)}\n`);
      return;
    }
    const recorded = JSON.parse(readFileSync(RECORD_FILE, 'utf8')) as Record<string, unknown>;
    // Part by part, so a failure names what changed.
    for (const part of Object.keys(recorded)) assert.deepEqual(current[part], recorded[part], `${part} changed: re-record with npm run record-interface if that is meant`);
    assert.deepEqual(Object.keys(current), Object.keys(recorded));
  });
});
