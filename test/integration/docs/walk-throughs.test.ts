import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../../core/paths';
import { startOrdersServer, type OrdersServer } from '../../../scripts/demo-orders-api';
import { env } from '../../support/environment';

/**
 * Docs that run (issue 37): every shell block of the README and of docs/guides/, in the order the
 * README lists the guides, runs in one bash from the repository's folder against a running Weft,
 * as a reader pastes them. The blocks run as written, with `set -euo pipefail` (a variable nothing
 * defines, or a command that fails, stops the run). Two things differ from a reader's terminal,
 * both transport: the addresses (the test's API and demo API listen on ports of their own, so
 * `127.0.0.1:8080` and `127.0.0.1:8090` are replaced by theirs), and curl is wrapped to end each
 * answer with a newline and to note its status on stderr, so the test can tell every answer apart
 * and check that each was a success.
 *
 * A block that must not run (the two commands themselves) is preceded by a line
 * `<!-- not run by the docs test: <why> -->`.
 */

const README = 'README.md';
const GUIDES = 'docs/guides';
const NOT_RUN = /^<!-- not run by the docs test: .+ -->$/;
const README_API = 'http://127.0.0.1:8080';
const README_DEMO_API = '127.0.0.1:8090';

interface ShellBlock {
  file: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
  text: string;
}

/** The sh/bash blocks of a Markdown file, in order, but those marked as not run. */
function shellBlocks(file: string): ShellBlock[] {
  const lines = readFileSync(path.join(projectRoot, file), 'utf8').split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash|shell)\s*$/.test(lines[i])) continue;
    const end = lines.findIndex((line, j) => j > i && /^```\s*$/.test(line));
    assert.ok(end > i, `${file}:${i + 1}: a shell block is not closed`);
    if (!NOT_RUN.test(lines[i - 1] ?? '')) blocks.push({ file, line: i + 1, text: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

/** The walk-throughs in reading order: the README, then the guides as the README's table lists them. */
function walkThroughs(): string[] {
  const readme = readFileSync(path.join(projectRoot, README), 'utf8');
  const listed = [...readme.matchAll(/\]\((docs\/guides\/[\w-]+\.md)\)/g)].map((match) => match[1]);
  const guides = [...new Set(listed)];
  const present = readdirSync(path.join(projectRoot, GUIDES)).filter((name) => name.endsWith('.md')).map((name) => `${GUIDES}/${name}`);
  assert.deepEqual([...present].sort(), [...guides].sort(), 'every guide is listed in the README, and every listed guide exists');
  return [README, ...guides];
}

interface BlockRun {
  block: ShellBlock;
  /** What the block printed: each curl answer on a line (or lines) of its own. */
  output: string;
}

interface ScriptRun {
  code: number | null;
  blocks: BlockRun[];
  /** Every curl request: its HTTP status and URL. */
  requests: Array<{ status: number; url: string }>;
  stderr: string;
}

const MARK = '::weft-docs-block::';

/** Runs the blocks in one bash, in order, and splits what they printed by block. */
async function runBlocks(blocks: ShellBlock[], addresses: { api: string; demoApi: string }): Promise<ScriptRun> {
  const script = [
    // Each answer on a line of its own; status and URL to stderr (curl's %{stderr} switches the stream).
    `curl() { command curl -w '\\n%{stderr}::curl:: %{http_code} %{url_effective}\\n' "$@"; }`,
    ...blocks.map((block, index) => `printf '\\n${MARK}%d\\n' ${index}\n${block.text.replaceAll(README_API, addresses.api).replaceAll(README_DEMO_API, addresses.demoApi)}`),
  ].join('\n');
  const folder = mkdtempSync(path.join(tmpdir(), 'weft-docs-'));
  const file = path.join(folder, 'walk-throughs.sh');
  writeFileSync(file, script);
  const child = spawn('bash', ['--noprofile', '--norc', '-euo', 'pipefail', file], { cwd: projectRoot, env: { ...process.env, WEFT_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  rmSync(folder, { recursive: true, force: true });
  const parts = stdout.split(new RegExp(`\\n${MARK}(\\d+)\\n`));
  const runs: BlockRun[] = [];
  for (let i = 1; i < parts.length; i += 2) runs.push({ block: blocks[Number(parts[i])], output: parts[i + 1] });
  const requests = [...stderr.matchAll(/^::curl:: (\d{3}) (\S+)$/gm)].map((match) => ({ status: Number(match[1]), url: match[2] }));
  return { code, blocks: runs, requests, stderr: stderr.replace(/^::curl:: .*\n/gm, '') };
}

/** The JSON answers a block printed, one per line that holds one. */
function jsonAnswers(output: string): any[] {
  return output.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line)];
    } catch {
      return [];
    }
  });
}

function outputOf(run: ScriptRun, file: string, nth = 0): string {
  const found = run.blocks.filter((block) => block.block.file === file)[nth];
  assert.ok(found, `${file}: block ${nth + 1} ran`);
  return found.output;
}

describe('docs that run: the README and the guides, block by block in bash', function () {
  this.timeout(300_000);
  let demoApi: OrdersServer;
  let run: ScriptRun;

  before(async () => {
    demoApi = await startOrdersServer(250);
    const blocks = walkThroughs().flatMap(shellBlocks);
    run = await runBlocks(blocks, { api: env().baseUrl.replace(/\/$/, ''), demoApi: new URL(demoApi.baseUrl).host });
  });

  after(async () => {
    await demoApi?.close();
  });

  it('runs every block to its end, and every request it makes succeeds', () => {
    const last = run.blocks.at(-1);
    assert.equal(run.code, 0, `bash stopped (exit ${run.code}) in the block at ${last ? `${last.block.file}:${last.block.line}` : 'the start'}:\n${run.stderr.slice(-3000)}\n--- its output ---\n${last?.output.slice(-3000)}`);
    const failed = run.requests.filter((request) => request.status >= 400 || request.status < 200);
    assert.deepEqual(failed, [], 'every request of the walk-throughs answers a success');
    assert.ok(run.requests.length > 20, `the walk-throughs made ${run.requests.length} requests`);
  });

  it('README: reads records from the demo API, and filters them', () => {
    const [page, filtered] = jsonAnswers(outputOf(run, README));
    assert.equal(page.data.length, 20);
    assert.deepEqual(Object.keys(page.data[0]).sort(), ['id', 'total']);
    assert.ok(page.metadata.nextCursor, 'the first page has a next cursor');
    assert.equal(filtered.data.length, 5);
    assert.ok(filtered.data.every((record: { status: string }) => record.status === 'open'));
  });

  it('pipelines: the run succeeds and its rows carry the run as their provenance', () => {
    const output = outputOf(run, `${GUIDES}/pipelines.md`);
    const answers = jsonAnswers(output);
    const records = answers.find((answer) => answer.provenance);
    const runAnswer = [...answers].reverse().find((answer) => answer.run)?.run;
    assert.equal(runAnswer?.status, 'succeeded');
    assert.equal(records.data.length, 5);
    assert.ok(records.data.every((record: { status: string; total_with_tax: number }) => record.status === 'open' && typeof record.total_with_tax === 'number'));
    assert.deepEqual(records.provenance.map((entry: { kind: string; id: string }) => [entry.kind, entry.id]), records.data.map(() => ['run', runAnswer.id]));
    const listed = outputOf(run, `${GUIDES}/pipelines.md`, 1);
    assert.match(listed, new RegExp(`weft-run-${runAnswer.id}`), 'the Temporal CLI lists the run workflow by its PipelineId');
  });

  it('ontology and SPARQL: the bound table answers the query, biggest totals first', () => {
    const output = outputOf(run, `${GUIDES}/ontology-and-sparql.md`);
    const csv = output.trim().split('\n').slice(-6).map((line) => line.trim());
    assert.equal(csv[0], 'order,total');
    const totals = csv.slice(1).map((line) => Number(line.split(',')[1]));
    assert.equal(totals.length, 5);
    assert.deepEqual(totals, [...totals].sort((a, b) => b - a));
  });

  it('published queries: a release executes and answers rows past the minimum', () => {
    const answers = jsonAnswers(outputOf(run, `${GUIDES}/published-queries.md`));
    const final = answers.at(-1);
    assert.equal(final.status, 'succeeded');
    assert.ok(final.data.length > 0, 'the execution answers rows');
    assert.ok(final.data.every((row: { total: number }) => row.total >= 50));
  });

  it('pipelines: records sort by an orderBy array, and version 2 with a cast node is activated', () => {
    const answers = jsonAnswers(outputOf(run, `${GUIDES}/pipelines.md`));
    const sorted = answers.find((answer) => answer.data?.length === 3);
    assert.ok(sorted, 'the sorted read answers three records');
    const totals = sorted.data.map((record: { total: number }) => record.total);
    assert.deepEqual(totals, [...totals].sort((a, b) => b - a));
    const activated = answers.at(-1).pipeline;
    assert.deepEqual([activated.activeVersion.number, activated.activeVersion.commitMessage], [2, 'Typed ids and totals']);
  });

  it('MCP: the SDK client launches the pipeline through the workspace connection, and the run succeeds', () => {
    const output = outputOf(run, `${GUIDES}/mcp.md`);
    const [launched, ended] = jsonAnswers(output);
    assert.ok(launched?.run && ended?.run, `the client prints the launched run and the run at its end: ${output}`);
    assert.equal(launched.run.status, 'queued');
    // Version 2 (the cast node) is what it runs; it ends as the first run did.
    assert.deepEqual([ended.run.id, ended.run.status, ended.run.versionNumber], [launched.run.id, 'succeeded', 2]);
  });

  it('console: the operator CLI invites the reader, whose link opens the invite page', async () => {
    const [invited] = jsonAnswers(outputOf(run, `${GUIDES}/console.md`));
    assert.match(invited.memberId, /^[0-9a-f-]{36}$/);
    const page = await fetch(invited.inviteUrl.replace(README_API, env().baseUrl.replace(/\/$/, '')));
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
  });

  it('governed writes: the approved action applies as an update and the log records it', () => {
    const answers = jsonAnswers(outputOf(run, `${GUIDES}/governed-writes.md`));
    const dryRun = answers.find((answer) => answer.dryRun === true);
    assert.ok(dryRun, 'the dry run answers');
    assert.deepEqual([dryRun.changeSet.counts.added, dryRun.changeSet.counts.changed], [0, 1], 'the write changes an existing row, adding none');
    assert.equal(dryRun.changeSet.changed[0].after.total, 99.5);
    const approved = [...answers].reverse().find((answer) => answer.writeAction?.status === 'applied');
    assert.ok(approved?.writeAction.snapshotAfter, 'the approval applies the write, with the snapshot it made');
    const log = answers.at(-1);
    assert.deepEqual(log.entries.map((entry: { kind: string }) => entry.kind).sort(), ['applied', 'approved', 'proposed']);
  });
});
