import type { JSX, MouseEvent } from 'react';
import { call, Session } from './api';
import { navigate } from './router';
import { KeysPage } from './Keys';
import { MembersPage } from './Members';
import { UsagePage } from './Usage';
import { LimitsPage } from './Limits';
import { RunPage, RunsPage } from './Runs';
import { OverviewPage } from './Overview';
import { EndpointPage, EndpointsPage } from './Endpoints';
import { PipelinesPage } from './Pipelines';
import { PipelinePage } from './Pipeline';
import { WritesPage } from './Writes';
import { OntologyPage, SparqlPage } from './Ontology';
import { QueriesPage, QueryPage } from './Queries';

/** The built pages by their path pattern (as the server declares them, console/server/pages.ts). */
const BUILT: Record<string, (session: Session, params: Record<string, string>) => JSX.Element> = {
  '/console/keys': (session) => <KeysPage scopes={session.scopes} />,
  '/console/members': () => <MembersPage />,
  '/console/usage': () => <UsagePage />,
  '/console/limits': () => <LimitsPage />,
  '/console/endpoints': () => <EndpointsPage />,
  '/console/endpoints/:endpoint_id': (_session, params) => <EndpointPage key={params.endpoint_id} endpointId={params.endpoint_id} />,
  '/console/runs': (session) => <RunsPage session={session} />,
  '/console/runs/:run_id': (_session, params) => <RunPage key={params.run_id} runId={params.run_id} />,
  '/console/pipelines': () => <PipelinesPage />,
  '/console/pipelines/:pipeline_id': (session, params) => <PipelinePage key={params.pipeline_id} pipelineId={params.pipeline_id} session={session} />,
  '/console/writes': () => <WritesPage />,
  '/console/ontology': () => <OntologyPage />,
  '/console/ontology/sparql': () => <SparqlPage />,
  '/console/queries': () => <QueriesPage />,
  '/console/queries/:query_id': (_session, params) => <QueryPage key={params.query_id} queryId={params.query_id} />,
};

/** The path's parameters if it matches the pattern (`/console/runs/:run_id`), else undefined. */
function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const have = path.split('/');
  if (want.length !== have.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i += 1) {
    if (want[i].startsWith(':')) params[want[i].slice(1)] = decodeURIComponent(have[i]);
    else if (want[i] !== have[i]) return undefined;
  }
  return params;
}

export function Shell({ session, path, onSignedOut }: { session: Session; path: string; onSignedOut(): void }) {
  const member = session.member!;
  const page = [...session.pages, ...session.innerPages].find((p) => matchPath(p.path, path));
  const params = page ? matchPath(page.path, path)! : {};
  const follow = (event: MouseEvent<HTMLAnchorElement>, to: string) => {
    event.preventDefault();
    navigate(to);
  };
  let content: JSX.Element;
  if (path === '/console') content = <OverviewPage session={session} />;
  else if (!page) content = <section><h1>Not available</h1><p role="alert">Your role cannot use this page.</p></section>;
  else content = BUILT[page.path]?.(session, params) ?? <section><h1>{page.name}</h1><p>This page is not built yet: use the API or MCP tools for now.</p></section>;

  return (
    <div className="shell">
      <header>
        <a href="/console" onClick={(e) => follow(e, '/console')} className="brand">Weft · {member.workspaceName}</a>
        <span className="muted">{member.email} · {member.role}</span>
        {session.memberships.length > 1 && <a href="/console/workspaces" onClick={(e) => follow(e, '/console/workspaces')}>Switch workspace</a>}
        <button type="button" onClick={async () => { await call('DELETE', '/session'); onSignedOut(); }}>Sign out</button>
      </header>
      <nav aria-label="Console">
        <ul className="plain">
          {session.pages.map((p) => (
            <li key={p.path}><a href={p.path} aria-current={p.path === path ? 'page' : undefined} onClick={(e) => follow(e, p.path)}>{p.name}</a></li>
          ))}
        </ul>
      </nav>
      <main>{content}</main>
    </div>
  );
}
