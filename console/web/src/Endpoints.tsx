import { FormEvent, type JSX, useCallback, useEffect, useState } from 'react';
import { RowsTable } from './RowsTable';
import { Pager, type Pagination } from './Pager';
import { call, explain } from './api';
import { follow } from './router';

// Data endpoints: the list (listDataEndpoints, paged on the server, filtered by name, namespace and
// role) and an endpoint's page (getDataEndpoint): its target, its schema (declared and discovered),
// its current snapshot, check and validate, and a records preview that is the records read itself
// (GET /console/api/data-endpoints/:id/records runs the operation GET /api/v1/…/records runs: the
// same data guard and named read grants, the same cursors, metered as a records read).

const ROLES = ['source', 'destination', 'ontology_store'] as const;
const PAGE_SIZE = 25;

interface Endpoint {
  id: string;
  name: string;
  namespace: string;
  role: string;
  capability: { name: string; version: string };
  contractKind: string;
  target: Record<string, unknown>;
  dataIdentity: string;
  schemaHints: { primaryKey?: string[]; columns?: Array<{ name: string; type?: string; nullable?: boolean; description?: string }> } | null;
  freshness: string | null;
  ownerTeam: string | null;
  trustRank: string | null;
  description: string | null;
  createdAt: string;
  updatedAt: string;
}
interface Snapshot { id: string; version: string; committedAt?: string | null }
interface RecordsPage {
  data: Array<Record<string, unknown>>;
  metadata: { rowCount: number; limit: number; hasMore: boolean; nextCursor: string | null; snapshot: Snapshot | null; stopReason: string | null };
}

const when = (value: string | null | undefined) => (value ? new Date(value).toLocaleString() : '—');
const label = (endpoint: Pick<Endpoint, 'namespace' | 'name'>) => `${endpoint.namespace}/${endpoint.name}`;
const endpointPath = (id: string) => `/console/endpoints/${id}`;

export function EndpointsPage() {
  const [filter, setFilter] = useState({ name: '', namespace: '', role: '' });
  const [offset, setOffset] = useState(0);
  const [answer, setAnswer] = useState<{ dataEndpoints: Endpoint[]; pagination: Pagination } | undefined>(undefined);
  const [error, setError] = useState('');

  useEffect(() => {
    let current = true;
    const query = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String(offset) });
    for (const [name, value] of Object.entries(filter)) if (value) query.set(name, value);
    call<{ dataEndpoints: Endpoint[]; pagination: Pagination }>('GET', `/data-endpoints?${query}`).then(
      (next) => { if (current) { setAnswer(next); setError(''); } },
      (failure: unknown) => { if (current) setError(explain(failure, 'Loading endpoints failed.')); },
    );
    return () => { current = false; };
  }, [filter, offset]);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setOffset(0);
    setFilter({ name: String(form.get('name') ?? '').trim(), namespace: String(form.get('namespace') ?? '').trim(), role: String(form.get('role') ?? '') });
  }

  const pagination = answer?.pagination;
  return (
    <section>
      <h1>Data endpoints</h1>
      <form onSubmit={submit} aria-label="Filter endpoints" className="row card">
        <label>Name <input name="name" /></label>
        <label>Namespace <input name="namespace" /></label>
        <label>Role
          <select name="role" defaultValue="">
            <option value="">any</option>
            {ROLES.map((role) => <option key={role} value={role}>{role}</option>)}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      {error && <p role="alert" className="error">{error}</p>}
      {!answer ? (!error && <p role="status">Loading…</p>) : (
        <>
          <table aria-label="Endpoints">
            <thead><tr><th>Name</th><th>Namespace</th><th>Role</th><th>Capability</th><th>Contract</th><th>Updated</th></tr></thead>
            <tbody>
              {answer.dataEndpoints.map((endpoint) => (
                <tr key={endpoint.id}>
                  <td><a href={endpointPath(endpoint.id)} onClick={(e) => follow(e, endpointPath(endpoint.id))}>{endpoint.name}</a></td>
                  <td>{endpoint.namespace}</td>
                  <td>{endpoint.role}</td>
                  <td>{endpoint.capability.name} {endpoint.capability.version}</td>
                  <td>{endpoint.contractKind}</td>
                  <td>{when(endpoint.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {pagination && <Pager pagination={pagination} shown={answer.dataEndpoints.length} none="No endpoints" pageSize={PAGE_SIZE} onOffset={setOffset} />}
        </>
      )}
    </section>
  );
}

/** A loaded answer, or the refusal the page shows in its place. */
type Loaded<T> = { value: T } | { error: string } | undefined;

function useLoaded<T>(path: string): Loaded<T> {
  const [loaded, setLoaded] = useState<Loaded<T>>(undefined);
  useEffect(() => {
    let current = true;
    call<T>('GET', path).then(
      (value) => { if (current) setLoaded({ value }); },
      (failure: unknown) => { if (current) setLoaded({ error: explain(failure, 'Loading failed.') }); },
    );
    return () => { current = false; };
  }, [path]);
  return loaded;
}

function Shown<T>({ loaded, children }: { loaded: Loaded<T>; children(value: T): JSX.Element }) {
  if (!loaded) return <p role="status">Loading…</p>;
  if ('error' in loaded) return <p className="error">{loaded.error}</p>;
  return children(loaded.value);
}

function SchemaSection({ endpoint }: { endpoint: Endpoint }) {
  const discovered = useLoaded<{ fields: Array<{ name: string; type?: string; nullable?: boolean }>; primaryKey?: string[] | null }>(`/data-endpoints/${endpoint.id}/schema`);
  const declared = endpoint.schemaHints;
  return (
    <div role="region" aria-label="Schema" className="card">
      <h2>Schema</h2>
      <h3>Declared</h3>
      {declared?.columns?.length || declared?.primaryKey?.length ? (
        <>
          {declared.primaryKey?.length ? <p>Primary key: {declared.primaryKey.join(', ')}</p> : null}
          {declared.columns?.length ? <p>Columns: {declared.columns.map((c) => (c.type ? `${c.name} (${c.type})` : c.name)).join(', ')}</p> : null}
        </>
      ) : <p className="muted">No schema hints.</p>}
      <h3>Discovered through {endpoint.capability.name}</h3>
      <Shown loaded={discovered}>
        {(schema) => (
          <>
            {schema.primaryKey?.length ? <p>Primary key: {schema.primaryKey.join(', ')}</p> : null}
            <table aria-label="Discovered fields">
              <thead><tr><th>Field</th><th>Type</th><th>Nullable</th></tr></thead>
              <tbody>{schema.fields.map((field) => <tr key={field.name}><td>{field.name}</td><td>{field.type ?? '—'}</td><td>{field.nullable === undefined ? '—' : field.nullable ? 'yes' : 'no'}</td></tr>)}</tbody>
            </table>
          </>
        )}
      </Shown>
    </div>
  );
}

function SnapshotSection({ endpointId, read }: { endpointId: string; read: Snapshot | null | undefined }) {
  const current = useLoaded<{ snapshot: Snapshot }>(`/data-endpoints/${endpointId}/snapshot`);
  const shown = (snapshot: Snapshot) => `${snapshot.id} (version ${snapshot.version}${snapshot.committedAt ? `, committed ${when(snapshot.committedAt)}` : ''})`;
  return (
    <div role="region" aria-label="Snapshots" className="card">
      <h2>Snapshots</h2>
      <dl className="facts">
        <dt>Current</dt>
        <dd aria-label="Current snapshot"><Shown loaded={current}>{({ snapshot }) => <span>{shown(snapshot)}</span>}</Shown></dd>
        <dt>Of the preview</dt>
        <dd aria-label="Preview snapshot">{read ? shown(read) : '—'}</dd>
      </dl>
      <p className="muted">A preview can read one committed snapshot by its id, where the capability keeps them.</p>
    </div>
  );
}

/** Check (the connection, through the capability) and validate (the stored configuration against its contract). */
function ChecksSection({ endpointId }: { endpointId: string }) {
  const [check, setCheck] = useState('');
  const [validation, setValidation] = useState('');
  const [busy, setBusy] = useState(false);
  async function run(action: 'check' | 'validate') {
    setBusy(true);
    try {
      if (action === 'check') {
        const result = await call<{ ok: boolean; message: string; checkedAt: string }>('POST', `/data-endpoints/${endpointId}/check`);
        setCheck(`${result.ok ? 'OK' : 'Failed'}: ${result.message} (${when(result.checkedAt)})`);
      } else {
        const result = await call<{ valid: boolean; problems: Array<{ path: string; message: string }> }>('POST', `/data-endpoints/${endpointId}/validate`);
        setValidation(result.valid ? 'Valid: the configuration matches its capability contract.' : `Invalid: ${result.problems.map((p) => `${p.path} ${p.message}`).join('; ')}`);
      }
    } catch (failure) {
      (action === 'check' ? setCheck : setValidation)(explain(failure, `${action} failed.`));
    } finally {
      setBusy(false);
    }
  }
  return (
    <div role="region" aria-label="Checks" className="card">
      <h2>Check and validate</h2>
      <div className="row">
        <button type="button" disabled={busy} onClick={() => void run('check')}>Check connection</button>
        <button type="button" disabled={busy} onClick={() => void run('validate')}>Validate</button>
      </div>
      <dl className="facts">
        <dt>Check</dt><dd><output aria-label="Check result">{check || '—'}</output></dd>
        <dt>Validation</dt><dd><output aria-label="Validation result">{validation || '—'}</output></dd>
      </dl>
    </div>
  );
}

/** A cell as text: strings as they are, other values as JSON, nothing for an absent field. */

/** The preview's read parameters: kept the same for every page, as the read's cursors ask. */
interface PreviewParams { where: string; snapshotId: string }

function RecordsPreview({ endpointId, onRead }: { endpointId: string; onRead(snapshot: Snapshot | null): void }) {
  const [params, setParams] = useState<PreviewParams>({ where: '', snapshotId: '' });
  // The cursor that read each page so far (none for the first): Previous page reads the one before.
  const [trail, setTrail] = useState<Array<string | undefined>>([undefined]);
  const [page, setPage] = useState<RecordsPage | undefined>(undefined);
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(false);

  const read = useCallback(async (next: PreviewParams, cursor: string | undefined) => {
    const query = new URLSearchParams();
    if (next.where) query.set('where', next.where);
    if (next.snapshotId) query.set('snapshotId', next.snapshotId);
    if (cursor) query.set('cursor', cursor);
    setLoading(true);
    try {
      const answer = await call<RecordsPage>('GET', `/data-endpoints/${endpointId}/records${query.toString() ? `?${query}` : ''}`);
      setPage(answer);
      setError('');
      onRead(answer.metadata.snapshot);
      return true;
    } catch (failure) {
      setPage(undefined);
      setError(explain(failure, 'Reading records failed.'));
      return false;
    } finally {
      setLoading(false);
    }
  }, [endpointId, onRead]);

  useEffect(() => { void read({ where: '', snapshotId: '' }, undefined); }, [read]);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next = { where: String(form.get('where') ?? '').trim(), snapshotId: String(form.get('snapshotId') ?? '').trim() };
    setParams(next);
    setTrail([undefined]);
    void read(next, undefined);
  }
  async function move(to: Array<string | undefined>) {
    if (await read(params, to[to.length - 1])) setTrail(to);
  }

  const columns = page ? [...new Set(page.data.flatMap((row) => Object.keys(row)))] : [];
  const nextCursor = page?.metadata.nextCursor ?? null;
  return (
    <div role="region" aria-label="Records preview" className="card chart">
      <h2>Records preview</h2>
      <form onSubmit={submit} aria-label="Preview records">
        <label>Where (a JSON array of conditions, e.g. {'[{"field":"id","op":"lt","value":10}]'})
          <textarea name="where" rows={2} defaultValue="" />
        </label>
        <label>Snapshot id (optional) <input name="snapshotId" /></label>
        <div className="row"><button type="submit" disabled={loading}>Preview</button></div>
      </form>
      {error && <p role="alert" aria-label="Preview error" className="error">{error}</p>}
      {page && (
        <>
          <div className="row">
            <span role="status" aria-label="Preview page">Page {trail.length} · {page.metadata.rowCount} records{page.metadata.hasMore ? ' · more follow' : ' · last page'}</span>
            <button type="button" disabled={loading || trail.length === 1} onClick={() => void move([undefined])}>First page</button>
            <button type="button" disabled={loading || trail.length === 1} onClick={() => void move(trail.slice(0, -1))}>Previous page</button>
            <button type="button" disabled={loading || nextCursor === null} onClick={() => void move([...trail, nextCursor ?? undefined])}>Next page</button>
          </div>
          <RowsTable label="Records" columns={columns} rows={page.data} />
        </>
      )}
    </div>
  );
}

export function EndpointPage({ endpointId }: { endpointId: string }) {
  const loaded = useLoaded<{ dataEndpoint: Endpoint }>(`/data-endpoints/${encodeURIComponent(endpointId)}`);
  const [readSnapshot, setReadSnapshot] = useState<Snapshot | null | undefined>(undefined);
  const back = <p><a href="/console/endpoints" onClick={(e) => follow(e, '/console/endpoints')}>All endpoints</a></p>;
  if (!loaded || 'error' in loaded) {
    return <section>{back}<h1>Data endpoint</h1>{loaded ? <p role="alert" className="error">{loaded.error}</p> : <p role="status">Loading…</p>}</section>;
  }
  const endpoint = loaded.value.dataEndpoint;
  return (
    <section>
      {back}
      <h1>Endpoint {label(endpoint)}</h1>
      <dl className="facts">
        <dt>Endpoint</dt><dd>{endpoint.id}</dd>
        <dt>Role</dt><dd>{endpoint.role}</dd>
        <dt>Capability</dt><dd>{endpoint.capability.name} {endpoint.capability.version}</dd>
        <dt>Contract</dt><dd>{endpoint.contractKind}</dd>
        <dt>Data</dt><dd>{endpoint.dataIdentity}</dd>
        <dt>Trust rank</dt><dd>{endpoint.trustRank ?? '—'}</dd>
        <dt>Freshness</dt><dd>{endpoint.freshness ?? '—'}</dd>
        <dt>Owner team</dt><dd>{endpoint.ownerTeam ?? '—'}</dd>
        <dt>Description</dt><dd>{endpoint.description ?? '—'}</dd>
        <dt>Updated</dt><dd>{when(endpoint.updatedAt)}</dd>
      </dl>
      <div role="region" aria-label="Target" className="card">
        <h2>Target</h2>
        <pre>{JSON.stringify(endpoint.target, null, 2)}</pre>
      </div>
      <SchemaSection endpoint={endpoint} />
      <SnapshotSection endpointId={endpoint.id} read={readSnapshot} />
      <ChecksSection endpointId={endpoint.id} />
      <RecordsPreview endpointId={endpoint.id} onRead={setReadSnapshot} />
    </section>
  );
}
