/** Prometheus text exposition, as tests read it: one sample per line, labels parsed. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name] = value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** GET a /metrics URL over HTTP and parse it. */
export async function scrape(url: string): Promise<{ text: string; contentType: string; samples: Sample[] }> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
  const text = await res.text();
  return { text, contentType: res.headers.get('content-type') ?? '', samples: parsePrometheus(text) };
}

/** The sum of a metric's samples whose labels include `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

/**
 * Label values that could grow without bound (ids, keys, raw paths) or leak a tenant's data: a
 * uuid, an API key, or one of the `forbidden` strings (the test's workspace id, record values).
 */
export function unboundedLabels(samples: Sample[], forbidden: string[] = []): string[] {
  const found = new Set<string>();
  for (const sample of samples) {
    for (const [label, value] of Object.entries(sample.labels)) {
      if (UUID.test(value) || value.includes('weft_sk_') || forbidden.some((f) => f && value.includes(f))) found.add(`${sample.name}{${label}="${value}"}`);
    }
  }
  return [...found];
}
