import { FormEvent, useCallback, useEffect, useState } from 'react';
import { call, callWithHeaders, explain, fieldProblems, Problem } from './api';
import { FailureAlert } from './FailureAlert';
import { follow } from './router';
import { ProjectSwitcher, useProjectParam } from './ProjectSwitcher';

// The Ontology page of a project: its collections on main (terms, links, shapes, imports), its
// read bindings, the active package, and compile and activate, each the operation the API runs.
// The SPARQL page queries through /console/api/…/ontology/sparql: the protocol's query operation
// run as the member, so their named read grants and the data guard decide as for a key.

const LIST = '?limit=200';

interface Pagination { total: number }
type Item = { id: string } & Record<string, unknown>;
interface PackageView { id: string; contentHash: string; tripleCount: number; compiledAt: string; versionNumber?: number | null }
interface Binding { id: string; termId: string; dataEndpointId: string; requiredReadPermissions: string[]; status: string; ontologyPackageId: string }

const ontologyPath = (projectId: string) => `/projects/${encodeURIComponent(projectId)}/ontology`;
const text = (value: unknown) => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

/** One collection as a table: its id and the columns named, the rest of each element as JSON. */
function CollectionTable({ title, items, total, columns }: { title: string; items: Item[]; total: number; columns: string[] }) {
  return (
    <div role="region" aria-label={title} className="card">
      <h2>{title} <span className="muted">({total})</span></h2>
      {items.length === 0 ? <p className="muted">None.</p> : (
        <table aria-label={title}>
          <thead><tr><th>Id</th>{columns.map((column) => <th key={column}>{column}</th>)}</tr></thead>
          <tbody>
            {items.map((item) => (
              <tr key={item.id}><td>{item.id}</td>{columns.map((column) => <td key={column}>{text(item[column])}</td>)}</tr>
            ))}
          </tbody>
        </table>
      )}
      {total > items.length && <p className="muted">The first {items.length} of {total}.</p>}
    </div>
  );
}

interface Collections {
  terms: { terms: Item[]; pagination: Pagination };
  links: { links: Item[]; pagination: Pagination };
  shapes: { shapes: Item[]; pagination: Pagination };
  imports: { imports: Item[]; pagination: Pagination };
  bindings: { bindings: Binding[]; pagination: Pagination };
}

export function OntologyPage() {
  const [projectId, chooseProject] = useProjectParam();
  const [collections, setCollections] = useState<Collections | undefined>(undefined);
  // The active package, or null while none is (GET …/ontology answers 404).
  const [active, setActive] = useState<PackageView | null | undefined>(undefined);
  const [compiled, setCompiled] = useState<PackageView | undefined>(undefined);
  // A refusal of Compile that names the elements at fault.
  const [problems, setProblems] = useState<unknown>(undefined);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const load = useCallback(async (project: string) => {
    const base = ontologyPath(project);
    const [terms, links, shapes, imports, bindings] = await Promise.all([
      call<Collections['terms']>('GET', `${base}/terms${LIST}`),
      call<Collections['links']>('GET', `${base}/links${LIST}`),
      call<Collections['shapes']>('GET', `${base}/shapes${LIST}`),
      call<Collections['imports']>('GET', `${base}/imports${LIST}`),
      call<Collections['bindings']>('GET', `${base}/read-bindings${LIST}`),
    ]);
    setCollections({ terms, links, shapes, imports, bindings });
    try {
      setActive((await call<{ ontology: { package: PackageView } }>('GET', base)).ontology.package);
    } catch (failure) {
      if (failure instanceof Problem && failure.status === 404) setActive(null);
      else throw failure;
    }
  }, []);

  useEffect(() => {
    if (!projectId) return;
    setCollections(undefined);
    setCompiled(undefined);
    setProblems(undefined);
    setError('');
    load(projectId).catch((failure: unknown) => setError(explain(failure, 'Loading the ontology failed.')));
  }, [projectId, load]);

  async function compile() {
    setBusy(true);
    setProblems(undefined);
    setError('');
    try {
      setCompiled((await call<{ package: PackageView }>('POST', `${ontologyPath(projectId)}/compile`, {})).package);
    } catch (failure) {
      setCompiled(undefined);
      // A definition that does not compile: the problem names each element at fault.
      if (fieldProblems(failure).length) setProblems(failure);
      else setError(explain(failure, 'Compiling failed.'));
    } finally {
      setBusy(false);
    }
  }

  async function activate(packageId: string) {
    setBusy(true);
    setError('');
    try {
      setActive((await call<{ ontology: { package: PackageView } }>('POST', `${ontologyPath(projectId)}/activate`, { packageId })).ontology.package);
      await load(projectId);
    } catch (failure) {
      setError(explain(failure, 'Activating failed.'));
    } finally {
      setBusy(false);
    }
  }

  const sparqlPath = `/console/ontology/sparql?project=${encodeURIComponent(projectId)}`;
  return (
    <section>
      <h1>Ontology</h1>
      <div className="row">
        <ProjectSwitcher projectId={projectId} onChoose={chooseProject} />
        {projectId && <a href={sparqlPath} onClick={(e) => follow(e, sparqlPath)}>SPARQL editor</a>}
      </div>
      {error && <p role="alert" className="error">{error}</p>}
      <div role="region" aria-label="Package" className="card">
        <h2>Package</h2>
        <dl className="facts">
          <dt>Active package</dt>
          <dd aria-label="Active package">{active === undefined ? '…' : active === null ? 'none' : active.id}</dd>
          {active && <><dt>Compiled</dt><dd>{new Date(active.compiledAt).toLocaleString()} · {active.tripleCount} triples</dd></>}
        </dl>
        <div className="row">
          <button type="button" disabled={busy || !projectId} onClick={() => void compile()}>Compile</button>
          {compiled && <span role="status" aria-label="Compiled package">{compiled.id}</span>}
          {compiled && compiled.id !== active?.id && <button type="button" disabled={busy} onClick={() => void activate(compiled.id)}>Activate</button>}
          {compiled && compiled.id === active?.id && <span className="muted">This package is active.</span>}
        </div>
        <FailureAlert failure={problems} fallback="Compiling failed." label="Compile errors" />
      </div>
      {!collections ? (!error && <p role="status">Loading…</p>) : (
        <>
          <CollectionTable title="Terms" items={collections.terms.terms} total={collections.terms.pagination.total} columns={['kind', 'label', 'domain', 'datatype']} />
          <CollectionTable title="Links" items={collections.links.links} total={collections.links.pagination.total} columns={['from', 'to', 'maxCount']} />
          <CollectionTable title="Shapes" items={collections.shapes.shapes} total={collections.shapes.pagination.total} columns={['targetClass', 'properties']} />
          <CollectionTable title="Imports" items={collections.imports.imports} total={collections.imports.pagination.total} columns={['kind']} />
          <div role="region" aria-label="Read bindings" className="card">
            <h2>Read bindings <span className="muted">({collections.bindings.pagination.total})</span></h2>
            {collections.bindings.bindings.length === 0 ? <p className="muted">None.</p> : (
              <table aria-label="Read bindings">
                <thead><tr><th>Term</th><th>Endpoint</th><th>Named read grants</th><th>Status</th><th>Package</th></tr></thead>
                <tbody>
                  {collections.bindings.bindings.map((binding) => (
                    <tr key={binding.id}>
                      <td>{binding.termId}</td>
                      <td><a href={`/console/endpoints/${binding.dataEndpointId}`} onClick={(e) => follow(e, `/console/endpoints/${binding.dataEndpointId}`)}>{binding.dataEndpointId.slice(0, 8)}</a></td>
                      <td>{binding.requiredReadPermissions.join(', ') || '—'}</td>
                      <td>{binding.status}</td>
                      <td>{binding.ontologyPackageId.slice(0, 8)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
        </>
      )}
    </section>
  );
}

interface SparqlResults {
  head?: { vars?: string[] };
  results?: { bindings: Array<Record<string, { type: string; value: string }>> };
  boolean?: boolean;
}

export function SparqlPage() {
  const [projectId, chooseProject] = useProjectParam();
  const [results, setResults] = useState<SparqlResults | undefined>(undefined);
  // Bindings whose named read grants this member lacks: their records are left out of the answer.
  const [withheld, setWithheld] = useState(0);
  const [error, setError] = useState('');
  const [running, setRunning] = useState(false);

  async function run(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const query = String(new FormData(event.currentTarget).get('query') ?? '');
    setRunning(true);
    setError('');
    try {
      const answer = await callWithHeaders<SparqlResults>('GET', `${ontologyPath(projectId)}/sparql?${new URLSearchParams({ query })}`);
      setResults(answer.body);
      setWithheld(Number(answer.headers.get('Weft-Withheld-Bindings') ?? 0));
    } catch (failure) {
      setResults(undefined);
      setError(explain(failure, 'The query failed.'));
    } finally {
      setRunning(false);
    }
  }

  const vars = results?.head?.vars ?? [];
  const rows = results?.results?.bindings ?? [];
  const back = `/console/ontology?project=${encodeURIComponent(projectId)}`;
  return (
    <section>
      <p><a href={back} onClick={(e) => follow(e, back)}>Ontology</a></p>
      <h1>SPARQL</h1>
      <ProjectSwitcher projectId={projectId} onChoose={chooseProject} />
      <form onSubmit={(event) => void run(event)} aria-label="SPARQL editor" className="card">
        <label>Query
          <textarea name="query" rows={10} spellCheck={false} required defaultValue={'SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 20'} />
        </label>
        <div className="row"><button type="submit" disabled={running || !projectId}>Run</button></div>
      </form>
      {error && <p role="alert" className="error">{error}</p>}
      {results?.boolean !== undefined && <p role="status" aria-label="Answer">{String(results.boolean)}</p>}
      {results?.results && (
        <>
          <p role="status" aria-label="Result count">{rows.length} {rows.length === 1 ? 'row' : 'rows'}</p>
          {withheld > 0 && <p role="note" aria-label="Withheld bindings">{withheld} {withheld === 1 ? 'binding was' : 'bindings were'} left out: reading {withheld === 1 ? 'it needs' : 'them needs'} named read grants you do not hold.</p>}
          <table aria-label="Results">
            <thead><tr>{vars.map((name) => <th key={name}>{name}</th>)}</tr></thead>
            <tbody>
              {rows.map((row, i) => <tr key={i}>{vars.map((name) => <td key={name}>{row[name]?.value ?? ''}</td>)}</tr>)}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
