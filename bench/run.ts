/**
 * `npm run bench` runs every benchmark, each in its own process, and prints one table of ratios
 * against the peers measured in the same run; `npm run bench -- NAME [NAME…] [--flag …]` runs some,
 * passing the flags from the first one on to each (`npm run bench -- NAME --help` lists them). The last
 * table, with the machine it ran on, is kept in bench/README.md (between the last-run markers)
 * when every benchmark ran.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import { BenchRow, parseRows, table } from './support/report';

export const BENCHMARKS = ['api', 'ingest', 'records', 'sparql', 'runs', 'console'] as const;

function runOne(name: string, flags: string[]): Promise<{ rows: BenchRow[]; code: number | null; seconds: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, `${name}.ts`), ...flags], {
      cwd: path.join(__dirname, '..'),
      env: { ...process.env, WEFT_BENCH_RUNNER: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      output += text;
      for (const line of text.split('\n')) if (line && !line.startsWith('BENCH_RESULT ')) process.stdout.write(`[${name}] ${line}\n`);
    });
    child.on('exit', (code) => resolve({ rows: parseRows(output), code, seconds: (Date.now() - started) / 1000 }));
  });
}

function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${process.platform}`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const firstFlag = args.findIndex((a) => a.startsWith('-'));
  const asked = firstFlag < 0 ? args : args.slice(0, firstFlag);
  const flags = firstFlag < 0 ? [] : args.slice(firstFlag);
  if (flags.length && !asked.length) {
    console.error('Flags belong to a benchmark: name it first, e.g. npm run bench -- ingest --records 100k.');
    process.exit(2);
  }
  const unknown = asked.filter((name) => !(BENCHMARKS as readonly string[]).includes(name));
  if (unknown.length) {
    console.error(`Unknown benchmark ${unknown.join(', ')}: choose from ${BENCHMARKS.join(', ')}.`);
    process.exit(2);
  }
  const names = asked.length ? asked : [...BENCHMARKS];
  const rows: BenchRow[] = [];
  const failures: string[] = [];
  for (const name of names) {
    console.log(`\n== bench ${name}`);
    const result = await runOne(name, flags);
    rows.push(...result.rows);
    if (result.code !== 0) failures.push(`${name} (exit ${result.code})`);
    console.log(`== bench ${name}: ${result.seconds.toFixed(0)} s`);
  }
  const rendered = table(rows);
  const stamp = `Ran ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${machine()}.`;
  console.log(`\n${stamp}\n\n${rendered}`);
  if (failures.length) console.log(`\nFailed: ${failures.join(', ')}`);
  if (!asked.length && !failures.length) {
    const readmePath = path.join(__dirname, 'README.md');
    const readme = readFileSync(readmePath, 'utf8');
    const block = `<!-- last-run:start -->\n${stamp}\n\n${rendered}\n<!-- last-run:end -->`;
    const updated = readme.includes('<!-- last-run:start -->')
      ? readme.replace(/<!-- last-run:start -->[\s\S]*<!-- last-run:end -->/, block)
      : `${readme.trimEnd()}\n\n## The last full run\n\n${block}\n`;
    writeFileSync(readmePath, updated);
  }
  process.exit(failures.length ? 1 : 0);
}

void main();
