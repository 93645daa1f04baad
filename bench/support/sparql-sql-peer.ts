/**
 * The sparql bench's SQL peer: bare Koa in a process of its own answering the mix's texts at POST
 * /sparql (application/sparql-query) with the hand-written SQL of each (sparql-sql.ts), run by
 * node-postgres on a pool of its own, as SPARQL JSON results (N-Triples for CONSTRUCT). No key,
 * limits, metering or parsing: the text is looked up as sent, so the peer pays HTTP and the
 * statement, nothing else. Each text is a named (prepared) statement, as a service written by
 * hand would keep it. The parent sends the queries over IPC and hears 'ready'.
 */
import Koa from 'koa';
import pg from 'pg';
import { DataFactory, Writer } from 'n3';
import type { ColumnTerm, SqlQuery } from './sparql-sql';

interface PeerSetup {
  databaseUrl: string;
  queries: Array<SqlQuery & { text: string }>;
}

type JsonTerm = { type: 'uri' | 'literal'; value: string; datatype?: string };

const XSD_STRING = 'http://www.w3.org/2001/XMLSchema#string';

function termOf(spec: ColumnTerm, value: unknown, type: unknown): JsonTerm | undefined {
  if (value === null || value === undefined) return undefined;
  const text = String(value);
  if (spec === 'dynamic') {
    if (type === 'uri') return { type: 'uri', value: text };
    return type && type !== XSD_STRING ? { type: 'literal', value: text, datatype: String(type) } : { type: 'literal', value: text };
  }
  if ('iri' in spec) return { type: 'uri', value: `${spec.iri}${text}` };
  return spec.literal ? { type: 'literal', value: text, datatype: spec.literal } : { type: 'literal', value: text };
}

function bindings(query: SqlQuery, rows: Array<Record<string, unknown>>): Array<Record<string, JsonTerm>> {
  return rows.map((row) => {
    const out: Record<string, JsonTerm> = {};
    for (const name of query.vars) {
      const term = termOf(query.terms[name], row[name], row[`${name}_t`]);
      if (term) out[name] = term;
    }
    return out;
  });
}

function ntriples(query: SqlQuery, rows: Array<Record<string, unknown>>): string {
  const { namedNode, literal } = DataFactory;
  const writer = new Writer({ format: 'N-Triples' });
  const node = (term: JsonTerm) => (term.type === 'uri' ? namedNode(term.value) : literal(term.value, term.datatype ? namedNode(term.datatype) : undefined));
  const lines = new Set<string>();
  for (const binding of bindings(query, rows)) {
    const [s, p, o] = query.vars.map((name) => binding[name]);
    if (s && p && o) lines.add(writer.quadToString(node(s) as never, node(p) as never, node(o) as never));
  }
  return [...lines].join('');
}

const port = Number(process.argv[2]);
process.once('message', ({ databaseUrl, queries }: PeerSetup) => {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const byText = new Map(queries.map((query) => [query.text, query]));
  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method !== 'POST' || ctx.path !== '/sparql') {
      ctx.status = 404;
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const query = byText.get(Buffer.concat(chunks).toString('utf8'));
    if (!query) {
      ctx.status = 400;
      ctx.body = { code: 'unknown_query' };
      return;
    }
    const { rows } = await pool.query<Record<string, unknown>>({ name: query.id, text: query.sql, values: query.values });
    if (query.kind === 'ask') {
      ctx.type = 'application/sparql-results+json';
      ctx.body = JSON.stringify({ head: {}, boolean: Boolean(rows[0]?.ask) });
    } else if (query.kind === 'construct') {
      ctx.type = 'application/n-triples';
      ctx.body = ntriples(query, rows);
    } else {
      ctx.type = 'application/sparql-results+json';
      ctx.body = JSON.stringify({ head: { vars: query.vars }, results: { bindings: bindings(query, rows) } });
    }
  });
  app.listen(port, '127.0.0.1', () => process.send?.('ready'));
});
process.once('SIGTERM', () => process.exit(0));
