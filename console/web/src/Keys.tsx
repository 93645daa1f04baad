import { FormEvent, useCallback, useEffect, useState } from 'react';
import type { ApiKeyView as ApiKey } from '../../../services/tenancy/api-key-view';
import { call, Problem } from './api';

/** The areas of SPEC 5.3, by a scope's prefix; the scopes themselves come from the server (core/scopes.ts). */
const AREAS: Record<string, string> = {
  org: 'Workspace', projects: 'Projects', plugins: 'Plugins', endpoints: 'Endpoints', data: 'Data', policy: 'Write policies',
  sparql: 'SPARQL', ontologies: 'Ontology', bindings: 'Bindings', queries: 'Queries', pipelines: 'Pipelines', runs: 'Runs',
};

function groupsOf(scopes: string[]): Array<[string, string[]]> {
  const groups = new Map<string, string[]>();
  for (const scope of scopes) {
    const prefix = scope.split(':')[0];
    const area = AREAS[prefix] ?? prefix;
    groups.set(area, [...(groups.get(area) ?? []), scope]);
  }
  return [...groups];
}

const when = (value: string | null) => (value ? new Date(value).toLocaleString() : '—');
const listed = (values: string[], none = '—') => (values.length ? values.join(', ') : none);

function CreateKeyForm({ scopes, onCreated, onCancel }: { scopes: string[]; onCreated(secret: string): void; onCancel(): void }) {
  const [error, setError] = useState('');
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const split = (name: string) => String(form.get(name) ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const body: Record<string, unknown> = { name: form.get('name'), scopes: form.getAll('scope') };
    const projectIds = split('projectIds');
    if (projectIds.length) body.projectIds = projectIds;
    if (split('readPermissions').length) body.readPermissions = split('readPermissions');
    if (split('writePermissions').length) body.writePermissions = split('writePermissions');
    if (form.get('workspaceResources')) body.workspaceResources = true;
    const expires = String(form.get('expiresAt') ?? '');
    if (expires) body.expiresAt = new Date(expires).toISOString();
    try {
      const created = await call<{ key: { secret: string } }>('POST', '/keys', body);
      onCreated(created.key.secret);
    } catch (failure) {
      setError(failure instanceof Problem ? `${failure.message} (${failure.code})` : 'Creating the key failed.');
    }
  }
  return (
    <form onSubmit={submit} aria-label="New key" className="card">
      <label>Name <input name="name" required maxLength={200} /></label>
      <fieldset>
        <legend>Scopes</legend>
        {groupsOf(scopes).map(([area, inArea]) => (
          <fieldset key={area} className="group">
            <legend>{area}</legend>
            {inArea.map((scope) => <label key={scope} className="check"><input type="checkbox" name="scope" value={scope} /> {scope}</label>)}
          </fieldset>
        ))}
      </fieldset>
      <label>Project ids (comma-separated; empty: every project) <input name="projectIds" /></label>
      <label className="check"><input type="checkbox" name="workspaceResources" /> Workspace resources for a restricted key</label>
      <label>Read grants (comma-separated) <input name="readPermissions" /></label>
      <label>Write grants (comma-separated) <input name="writePermissions" /></label>
      <label>Expires <input name="expiresAt" type="datetime-local" /></label>
      <div className="row"><button type="submit">Create</button><button type="button" onClick={onCancel}>Cancel</button></div>
      {error && <p role="alert" className="error">{error}</p>}
    </form>
  );
}

function NewSecret({ secret, onDone }: { secret: string; onDone(): void }) {
  const [copied, setCopied] = useState(false);
  return (
    <section className="card" aria-label="Key created">
      <p>Copy the secret now: it is shown this once and cannot be recovered.</p>
      <output aria-label="Secret" className="secret">{secret}</output>
      <div className="row">
        <button type="button" onClick={async () => { await navigator.clipboard.writeText(secret); setCopied(true); }}>Copy</button>
        <button type="button" onClick={onDone}>Done</button>
        {copied && <span role="status">Copied</span>}
      </div>
    </section>
  );
}

export function KeysPage({ scopes }: { scopes: string[] }) {
  const [keys, setKeys] = useState<ApiKey[] | undefined>(undefined);
  const [error, setError] = useState('');
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState('');
  const [revoking, setRevoking] = useState<ApiKey | null>(null);

  const load = useCallback(async () => {
    try {
      setKeys((await call<{ keys: ApiKey[] }>('GET', '/keys?limit=100')).keys);
    } catch (failure) {
      setError(failure instanceof Problem ? `${failure.message} (${failure.code})` : 'Loading keys failed.');
    }
  }, []);
  useEffect(() => { void load(); }, [load]);

  async function revoke(key: ApiKey) {
    try {
      await call('DELETE', `/keys/${key.id}`);
      setRevoking(null);
      await load();
    } catch (failure) {
      setError(failure instanceof Problem ? `${failure.message} (${failure.code})` : 'Revoking failed.');
    }
  }

  return (
    <section>
      <h1>API keys</h1>
      {error && <p role="alert" className="error">{error}</p>}
      {secret ? <NewSecret secret={secret} onDone={() => setSecret('')} />
        : creating ? <CreateKeyForm scopes={scopes} onCancel={() => setCreating(false)} onCreated={(s) => { setCreating(false); setSecret(s); void load(); }} />
        : <button type="button" onClick={() => setCreating(true)}>Create key</button>}
      {keys === undefined ? <p role="status">Loading…</p> : (
        <table>
          <thead><tr><th>Name</th><th>Prefix</th><th>Scopes</th><th>Projects</th><th>Grants</th><th>Last use</th><th>Expiry</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {keys.map((key) => (
              <tr key={key.id}>
                <td>{key.name}</td>
                <td><code>{key.prefix}</code></td>
                <td>{listed(key.scopes)}</td>
                <td>{listed(key.projectIds, 'all')}{key.projectIds.length > 0 && key.workspaceResources ? ' + workspace resources' : ''}</td>
                <td>{listed([...key.readPermissions.map((g) => `read ${g}`), ...key.writePermissions.map((g) => `write ${g}`)])}</td>
                <td>{when(key.lastUsedAt)}</td>
                <td>{when(key.expiresAt)}</td>
                <td><button type="button" aria-label={`Revoke ${key.name}`} onClick={() => setRevoking(key)}>Revoke</button></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {revoking && (
        <div role="dialog" aria-modal="true" aria-labelledby="revoke-title" className="dialog">
          <h2 id="revoke-title">Revoke {revoking.name}?</h2>
          <p>Requests with this key fail from now on. Revocation cannot be undone.</p>
          <div className="row"><button type="button" onClick={() => revoke(revoking)}>Revoke</button><button type="button" onClick={() => setRevoking(null)}>Cancel</button></div>
        </div>
      )}
    </section>
  );
}
