import { FormEvent, useCallback, useEffect, useRef, useState } from 'react';
import { Pager, type Pagination } from './Pager';
import { call, explain } from './api';
import { RowsTable } from './RowsTable';
import { ProjectSwitcher, useProjectParam } from './ProjectSwitcher';
import { follow } from './router';

// Published queries: a project's queries (listQueries, paged on the server) and a query's page: its
// releases (listQueryReleases), retiring one (retireQueryRelease, whoever its declared access
// admits), and executing a release (executeQuery) with a form generated from the query's input
// contract. An execution over the sync budget answers 202 with a job: the page shows it running
// and follows its continuation until the rows come, then pages the job's rows with continuations.

const PAGE_SIZE = 25;
const ROWS_PER_PAGE = 25;
const POLL_MS = 1000;

/** One parameter of an input contract: the JSON Schema subset queries accept (validateDefinition). */
interface ParameterSchema { type?: 'string' | 'integer' | 'number' | 'boolean'; enum?: unknown[]; description?: string; default?: unknown; minimum?: number; maximum?: number }
interface Contract { type?: string; required?: string[]; properties?: Record<string, ParameterSchema> }
interface QueryVersion { id: string; number: number; definition: { sparql: string; inputSchema: Contract; outputSchema: Contract }; requiredReadPermissions: string[] }
interface Query { id: string; projectId: string; name: string; version: QueryVersion | null; selectedRelease: number | null; updatedAt: string }
interface Release { version: number; queryVersionId: string; status: 'published' | 'retired'; publishedAt: string; retiredAt: string | null }
interface Execution {
  status: 'succeeded' | 'pending';
  data: Array<Record<string, unknown>>;
  metadata: {
    release: number;
    rowCount?: number;
    limit?: number;
    offset?: number;
    totalRows?: number | null;
    job?: { id: string; status: string; expiresAt: string };
    continuation?: string | null;
  };
}

const when = (value: string | null) => (value ? new Date(value).toLocaleString() : '—');
const queryPath = (projectId: string, queryId: string) => `/console/queries/${queryId}?project=${encodeURIComponent(projectId)}`;

export function QueriesPage() {
  const [projectId, chooseProject] = useProjectParam();
  const [offset, setOffset] = useState(0);
  const [answer, setAnswer] = useState<{ queries: Query[]; pagination: Pagination } | undefined>(undefined);
  const [error, setError] = useState('');

  useEffect(() => {
    if (!projectId) return undefined;
    let current = true;
    setAnswer(undefined);
    call<{ queries: Query[]; pagination: Pagination }>('GET', `/projects/${encodeURIComponent(projectId)}/queries?limit=${PAGE_SIZE}&offset=${offset}`).then(
      (next) => { if (current) { setAnswer(next); setError(''); } },
      (failure: unknown) => { if (current) setError(explain(failure, 'Loading queries failed.')); },
    );
    return () => { current = false; };
  }, [projectId, offset]);

  const choose = useCallback((next: string) => { setOffset(0); chooseProject(next); }, [chooseProject]);
  const pagination = answer?.pagination;
  return (
    <section>
      <h1>Published queries</h1>
      <div className="row card"><ProjectSwitcher projectId={projectId} onChoose={choose} /></div>
      {error && <p role="alert" className="error">{error}</p>}
      {!answer ? (!error && <p role="status">Loading…</p>) : (
        <>
          <table aria-label="Queries">
            <thead><tr><th>Name</th><th>Current version</th><th>Selected release</th><th>Parameters</th><th>Updated</th></tr></thead>
            <tbody>
              {answer.queries.map((query) => (
                <tr key={query.id}>
                  <td><a href={queryPath(projectId, query.id)} onClick={(e) => follow(e, queryPath(projectId, query.id))}>{query.name}</a></td>
                  <td>{query.version ? `v${query.version.number}` : '—'}</td>
                  <td>{query.selectedRelease ?? 'none'}</td>
                  <td>{Object.keys(query.version?.definition.inputSchema.properties ?? {}).join(', ') || '—'}</td>
                  <td>{when(query.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {pagination && <Pager pagination={pagination} shown={answer.queries.length} none="No queries" pageSize={PAGE_SIZE} onOffset={setOffset} />}
        </>
      )}
    </section>
  );
}

/** A field's text as the contract's value; undefined (left out of the input) when empty. */
function parameterValue(schema: ParameterSchema, text: string): unknown {
  if (text === '') return undefined;
  if (schema.enum) return JSON.parse(text);
  if (schema.type === 'integer' || schema.type === 'number') return Number(text);
  if (schema.type === 'boolean') return text === 'true';
  return text;
}

/** One labelled input per parameter of the contract, typed by its schema; required ones marked. */
function ParameterField({ name, schema, required }: { name: string; schema: ParameterSchema; required: boolean }) {
  const field = `parameter-${name}`;
  const label = <>{name} <span className="muted">({schema.enum ? 'one of' : schema.type ?? 'any'}{required ? ', required' : ''})</span></>;
  const described = schema.description ? { 'aria-describedby': `${field}-about` } : {};
  const about = schema.description && <small id={`${field}-about`} className="muted">{schema.description}</small>;
  const initial = schema.default === undefined ? '' : schema.enum ? JSON.stringify(schema.default) : String(schema.default);
  // No HTML `required`: the release's contract decides, and its refusal is shown as over HTTP.
  const common = { name: field, 'aria-required': required, defaultValue: initial, ...described };
  if (schema.enum) {
    return <label>{label}<select {...common}><option value="">—</option>{schema.enum.map((v) => <option key={JSON.stringify(v)} value={JSON.stringify(v)}>{String(v)}</option>)}</select>{about}</label>;
  }
  if (schema.type === 'boolean') {
    return <label>{label}<select {...common}><option value="">—</option><option value="true">true</option><option value="false">false</option></select>{about}</label>;
  }
  if (schema.type === 'integer' || schema.type === 'number') {
    return <label>{label}<input type="number" step={schema.type === 'integer' ? 1 : 'any'} {...common} />{about}</label>;
  }
  return <label>{label}<input type="text" {...common} />{about}</label>;
}

/**
 * A contract's fields in a stable order: its required ones as it lists them, then the others (stored
 * schemas and a job's stored rows come back with their keys reordered, so neither order is the author's).
 */
const byRequired = (schema: Contract) => {
  const required = schema.required ?? [];
  const rank = (name: string) => (required.includes(name) ? required.indexOf(name) : required.length);
  return (a: string, b: string) => rank(a) - rank(b);
};

/** Where a page is read: an execution at an offset, or (cursor) the job that execution became, through its continuation. */
interface Position { offset: number; cursor?: string }
interface Request { version: number | undefined; input: Record<string, unknown>; limit: number }

function ExecutePanel({ projectId, query, releases }: { projectId: string; query: Query; releases: Release[] }) {
  const contract = query.version?.definition.inputSchema ?? {};
  const required = contract.required ?? [];
  const inputOrder = byRequired(contract);
  const parameters = Object.entries(contract.properties ?? {}).sort(([a], [b]) => inputOrder(a, b));
  const output = query.version?.definition.outputSchema ?? {};
  const columns = Object.keys(output.properties ?? {}).sort(byRequired(output));
  const [request, setRequest] = useState<Request | undefined>(undefined);
  // The positions of the pages read so far: Previous page reads the one before.
  const [trail, setTrail] = useState<Position[]>([]);
  const [answer, setAnswer] = useState<Execution | undefined>(undefined);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const poll = useRef<number | undefined>(undefined);
  // The last read started: an answer to an earlier one (a poll overtaken by a new execution) is dropped.
  const latest = useRef(0);
  useEffect(() => () => window.clearTimeout(poll.current), []);

  const base = `/projects/${encodeURIComponent(projectId)}/queries/${encodeURIComponent(query.id)}`;
  const read = useCallback(async (sent: Request, at: Position, trailThen: Position[]) => {
    window.clearTimeout(poll.current);
    const mine = ++latest.current;
    setBusy(true);
    try {
      const next = at.cursor
        ? await call<Execution>('POST', `${base}/execute?cursor=${encodeURIComponent(at.cursor)}`, { options: { limit: sent.limit } })
        : await call<Execution>('POST', `${base}/execute${sent.version === undefined ? '' : `?version=${sent.version}`}`, { input: sent.input, options: { limit: sent.limit, offset: at.offset } });
      if (mine !== latest.current) return;
      // An execution that became a job is read through its continuation from then on.
      const position = next.status === 'pending' && !at.cursor ? { offset: at.offset, cursor: next.metadata.continuation! } : at;
      const positions = [...trailThen.slice(0, -1), position];
      setTrail(positions);
      setAnswer(next);
      setError('');
      if (next.status === 'pending') poll.current = window.setTimeout(() => void read(sent, position, positions), POLL_MS);
    } catch (failure) {
      if (mine !== latest.current) return;
      setAnswer(undefined);
      setError(explain(failure, 'Executing the query failed.'));
    } finally {
      if (mine === latest.current) setBusy(false);
    }
  }, [base]);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const input: Record<string, unknown> = {};
    for (const [name, schema] of parameters) {
      const value = parameterValue(schema, String(form.get(`parameter-${name}`) ?? ''));
      if (value !== undefined) input[name] = value;
    }
    const version = String(form.get('release') ?? '');
    const limit = Number(form.get('limit')) || ROWS_PER_PAGE;
    const sent = { version: version === '' ? undefined : Number(version), input, limit };
    setRequest(sent);
    void read(sent, { offset: 0 }, [{ offset: 0 }]);
  }

  async function cancel(jobId: string) {
    window.clearTimeout(poll.current);
    latest.current += 1;
    try {
      await call('DELETE', `${base}/jobs/${encodeURIComponent(jobId)}`);
      setAnswer(undefined);
      setError('The job was canceled.');
    } catch (failure) {
      setError(explain(failure, 'Canceling the job failed.'));
    }
  }

  const meta = answer?.metadata;
  const pending = answer?.status === 'pending';
  const position = trail[trail.length - 1];
  // The next page: more of a job's rows through its continuation, else, when the execution's page
  // was full (its rows, or its job's), the execution at the next offset.
  const executionRows = meta?.job ? meta.totalRows ?? 0 : answer?.data.length ?? 0;
  const next: Position | undefined = !answer || pending || !request || !position ? undefined
    : meta?.continuation ? { offset: position.offset, cursor: meta.continuation }
      : executionRows === request.limit ? { offset: position.offset + request.limit } : undefined;
  const shownColumns = answer ? [...new Set([...columns, ...answer.data.flatMap((row) => Object.keys(row))])] : columns;
  return (
    <div role="region" aria-label="Execute" className="card chart">
      <h2>Execute</h2>
      <form onSubmit={submit} aria-label="Execute query">
        <label>Release
          <select name="release" defaultValue="">
            <option value="">selected release{query.selectedRelease ? ` (${query.selectedRelease})` : ''}</option>
            {releases.map((r) => <option key={r.version} value={r.version}>{r.version}{r.status === 'retired' ? ' (retired)' : ''}</option>)}
          </select>
        </label>
        <fieldset>
          <legend>Input</legend>
          {parameters.length === 0 ? <p className="muted">This query takes no parameters.</p> : parameters.map(([name, schema]) => <ParameterField key={name} name={name} schema={schema} required={required.includes(name)} />)}
        </fieldset>
        <label>Rows per page <input type="number" name="limit" min={1} max={1000} defaultValue={ROWS_PER_PAGE} /></label>
        <p className="muted">The form follows the query’s current contract; a release checks the input against its own.</p>
        <div className="row"><button type="submit" disabled={busy && !pending}>Execute</button></div>
      </form>
      {error && <p role="alert" aria-label="Execution error" className="error">{error}</p>}
      {pending && meta?.job && (
        <div className="row">
          <span role="status" aria-label="Execution status">Running: job {meta.job.id.slice(0, 8)} (release {meta.release}), checked every second…</span>
          <button type="button" onClick={() => void cancel(meta.job!.id)}>Cancel job</button>
        </div>
      )}
      {answer && !pending && (
        <>
          <div className="row">
            <span role="status" aria-label="Execution status">
              Release {meta?.release} · page {trail.length} · {answer.data.length} rows{meta?.totalRows != null ? ` of ${meta.totalRows}` : ''}{meta?.job ? ` · job ${meta.job.id.slice(0, 8)}` : ''}
            </span>
            <button type="button" disabled={busy || trail.length < 2} onClick={() => void read(request!, trail[trail.length - 2], trail.slice(0, -1))}>Previous page</button>
            <button type="button" disabled={busy || !next} onClick={() => void read(request!, next!, [...trail, next!])}>Next page</button>
          </div>
          <RowsTable label="Results" columns={shownColumns} rows={answer.data} />
        </>
      )}
    </div>
  );
}

function ReleasesSection({ projectId, query, releases, onChanged }: { projectId: string; query: Query; releases: Release[]; onChanged(): void }) {
  const [retiring, setRetiring] = useState<Release | null>(null);
  const [error, setError] = useState('');
  async function retire(release: Release) {
    setRetiring(null);
    try {
      await call('PATCH', `/projects/${encodeURIComponent(projectId)}/queries/${encodeURIComponent(query.id)}/releases/${release.version}`, { status: 'retired' });
      setError('');
      onChanged();
    } catch (failure) {
      setError(explain(failure, 'Retiring the release failed.'));
    }
  }
  return (
    <div role="region" aria-label="Releases" className="card">
      <h2>Releases</h2>
      {error && <p role="alert" aria-label="Release error" className="error">{error}</p>}
      {releases.length === 0 ? <p className="muted">No release yet: publish one through the API.</p> : (
        <table aria-label="Releases">
          <thead><tr><th>Release</th><th>Status</th><th>Query version</th><th>Published</th><th>Retired</th><th /></tr></thead>
          <tbody>
            {releases.map((release) => (
              <tr key={release.version}>
                <td>{release.version}</td>
                <td aria-label={`Release ${release.version} status`}>{release.status}</td>
                <td>{release.queryVersionId === query.version?.id ? 'current' : release.queryVersionId.slice(0, 8)}</td>
                <td>{when(release.publishedAt)}</td>
                <td>{when(release.retiredAt)}</td>
                <td>{release.status === 'published' && <button type="button" aria-label={`Retire release ${release.version}`} onClick={() => setRetiring(release)}>Retire</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {retiring && (
        <div role="dialog" aria-modal="true" aria-labelledby="retire-title" className="dialog">
          <h2 id="retire-title">Retire release {retiring.version}?</h2>
          <p>Consumers executing release {retiring.version} are refused from then on (410 release_retired).</p>
          <div className="row"><button type="button" onClick={() => void retire(retiring)}>Retire</button><button type="button" onClick={() => setRetiring(null)}>Cancel</button></div>
        </div>
      )}
    </div>
  );
}

export function QueryPage({ queryId }: { queryId: string }) {
  const [projectId] = useProjectParam();
  const [loaded, setLoaded] = useState<{ query: Query; releases: Release[] } | { error: string } | undefined>(undefined);
  const load = useCallback(async () => {
    const base = `/projects/${encodeURIComponent(projectId)}/queries/${encodeURIComponent(queryId)}`;
    try {
      const [{ query }, { releases }] = await Promise.all([call<{ query: Query }>('GET', base), call<{ releases: Release[] }>('GET', `${base}/releases`)]);
      setLoaded({ query, releases });
    } catch (failure) {
      setLoaded({ error: explain(failure, 'Loading the query failed.') });
    }
  }, [projectId, queryId]);
  useEffect(() => { if (projectId) void load(); }, [projectId, load]);

  const back = <p><a href={`/console/queries?project=${encodeURIComponent(projectId)}`} onClick={(e) => follow(e, `/console/queries?project=${encodeURIComponent(projectId)}`)}>All queries</a></p>;
  if (!projectId) return <section>{back}<h1>Query</h1><p role="alert" className="error">Open the query from the Queries page (its link names the project).</p></section>;
  if (!loaded || 'error' in loaded) return <section>{back}<h1>Query</h1>{loaded ? <p role="alert" className="error">{loaded.error}</p> : <p role="status">Loading…</p>}</section>;
  const { query, releases } = loaded;
  return (
    <section>
      {back}
      <h1>Query {query.name}</h1>
      <dl className="facts">
        <dt>Query</dt><dd>{query.id}</dd>
        <dt>Current version</dt><dd>{query.version ? `v${query.version.number} (${query.version.id})` : '—'}</dd>
        <dt>Selected release</dt><dd>{query.selectedRelease ?? 'none'}</dd>
        <dt>Named read grants</dt><dd>{query.version?.requiredReadPermissions.join(', ') || 'none'}</dd>
      </dl>
      {query.version && <details className="card"><summary>SPARQL of the current version</summary><pre>{query.version.definition.sparql}</pre></details>}
      <ReleasesSection projectId={projectId} query={query} releases={releases} onChanged={() => void load()} />
      <ExecutePanel projectId={projectId} query={query} releases={releases} />
    </section>
  );
}
