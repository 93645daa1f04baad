/**
 * How a benchmark reports: rows of one measure each, Weft's figure next to the peer's from the
 * same run, and their ratio. A bench prints its rows as a table when run alone, and as
 * `BENCH_RESULT <json>` lines that `bench/run.ts` collects into the one table.
 */
export interface BenchRow {
  benchmark: string;
  /** What is measured, e.g. "GET /organization req/s". */
  measure: string;
  weft: number;
  peer: number | null;
  /** The peer's name, e.g. "bare Koa", "dlt 1.x", "COPY". */
  peerName: string;
  unit: string;
  /** weft / peer, or peer / weft where lower is better for Weft (see `higherIsBetter`). */
  ratio: number | null;
  /** The target for the ratio, e.g. ">= 0.35" or "<= 2". */
  target?: string;
  met?: boolean | null;
  note?: string;
}

const MARKER = 'BENCH_RESULT ';

/** A row comparing Weft with a peer. Ratios are Weft over peer; the target says which way is good. */
export function row(input: Omit<BenchRow, 'ratio' | 'met'> & { target?: string }): BenchRow {
  const ratio = input.peer ? input.weft / input.peer : null;
  let met: boolean | null = null;
  const target = /^(>=|<=)\s*([\d.]+)$/.exec(input.target ?? '');
  if (target && ratio !== null) met = target[1] === '>=' ? ratio >= Number(target[2]) : ratio <= Number(target[2]);
  return { ...input, ratio, met };
}

/** A figure with no peer (context: absolute latency, memory). */
export function figure(input: { benchmark: string; measure: string; weft: number; unit: string; note?: string; target?: string; met?: boolean | null }): BenchRow {
  return { peer: null, peerName: '', ratio: null, met: input.met ?? null, ...input };
}

export function emit(rows: BenchRow[]): void {
  for (const r of rows) process.stdout.write(`${MARKER}${JSON.stringify(r)}\n`);
  if (!process.env.WEFT_BENCH_RUNNER) process.stdout.write(`\n${table(rows)}\n`);
}

export function parseRows(output: string): BenchRow[] {
  return output.split('\n').filter((line) => line.startsWith(MARKER)).map((line) => JSON.parse(line.slice(MARKER.length)) as BenchRow);
}

const formatNumber = (n: number | null): string => {
  if (n === null || Number.isNaN(n)) return '';
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(n === 0 ? 0 : Math.abs(n) < 0.1 ? 3 : 2);
};

/** A Markdown table (readable in a terminal, pasteable into bench/README.md). */
export function table(rows: BenchRow[]): string {
  const header = ['benchmark', 'measure', 'Weft', 'peer', 'peer value', 'unit', 'ratio', 'target', 'met'];
  const lines = rows.map((r) => [
    r.benchmark,
    r.measure,
    formatNumber(r.weft),
    r.peerName,
    formatNumber(r.peer),
    r.unit,
    r.ratio === null ? '' : r.ratio.toFixed(r.ratio < 0.1 ? 3 : 2),
    r.target ?? '',
    r.met === null || r.met === undefined ? '' : r.met ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const render = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  const notes = rows.filter((r) => r.note).map((r) => `- ${r.benchmark} / ${r.measure}: ${r.note}`);
  return [render(header), render(widths.map((w) => '-'.repeat(w))), ...lines.map(render), ...(notes.length ? ['', ...notes] : [])].join('\n');
}

/** Percentile of sorted-or-not samples (nearest rank). */
export function percentile(samples: number[], p: number): number {
  if (!samples.length) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const median = (samples: number[]): number => percentile(samples, 50);
