import { MouseEvent, useEffect, useState } from 'react';
import { call, explain, Session } from './api';
import type { BillingMonth } from './Billing';
import { navigate } from './router';

// The Overview: this month's usage against the plan, the recent and failing runs and the newest
// endpoints with their last snapshot, each shown when the member may use the page it summarizes
// (Usage, Runs, Endpoints: their operations decide).

interface EndpointRow { id: string; name: string; namespace: string; snapshot?: { id: string; version: string; committedAt: string | null } | null }
interface RunRow { id: string; pipelineName: string; status: string; queuedAt: string; error: { code: string; message: string } | null }

const follow = (event: MouseEvent<HTMLAnchorElement>, to: string) => {
  event.preventDefault();
  navigate(to);
};

function RunList({ label, runs }: { label: string; runs: RunRow[] }) {
  return (
    <div role="region" aria-label={label} className="card">
      <h2>{label}</h2>
      {runs.length === 0 ? <p>None.</p> : (
        <ul className="plain">
          {runs.map((run) => (
            <li key={run.id}>
              <a href={`/console/runs/${run.id}`} onClick={(e) => follow(e, `/console/runs/${run.id}`)}>{run.id.slice(0, 8)}</a> {run.pipelineName} · {run.status} · {new Date(run.queuedAt).toLocaleString()}
              {run.error && <span className="error"> · {run.error.code}</span>}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function OverviewPage({ session }: { session: Session }) {
  const member = session.member!;
  const may = (name: string) => session.pages.some((page) => page.name === name);
  const [billing, setBilling] = useState<BillingMonth | undefined>(undefined);
  const [recent, setRecent] = useState<RunRow[] | undefined>(undefined);
  const [failing, setFailing] = useState<RunRow[] | undefined>(undefined);
  const [endpoints, setEndpoints] = useState<EndpointRow[] | undefined>(undefined);
  const [error, setError] = useState('');
  const showsUsage = may('Usage');
  const showsRuns = may('Runs');
  const showsEndpoints = may('Endpoints');

  useEffect(() => {
    const failed = (failure: unknown) => setError(explain(failure, 'Loading the overview failed.'));
    if (showsUsage) call<{ billing: BillingMonth }>('GET', '/usage/billing').then((answer) => setBilling(answer.billing), failed);
    if (showsRuns) {
      call<{ runs: RunRow[] }>('GET', '/runs?limit=5').then((answer) => setRecent(answer.runs), failed);
      call<{ runs: RunRow[] }>('GET', '/runs?limit=5&status=failed').then((answer) => setFailing(answer.runs), failed);
    }
    // The five newest endpoints with their last snapshot (null where the capability keeps none).
    if (showsEndpoints) {
      call<{ dataEndpoints: EndpointRow[] }>('GET', '/data-endpoints?limit=5').then(async (answer) => {
        const withSnapshots = await Promise.all(answer.dataEndpoints.map(async (endpoint) => ({
          ...endpoint,
          snapshot: await call<{ snapshot: NonNullable<EndpointRow['snapshot']> }>('GET', `/data-endpoints/${endpoint.id}/snapshot`).then((found) => found.snapshot, () => null),
        })));
        setEndpoints(withSnapshots);
      }, failed);
    }
  }, [showsUsage, showsRuns, showsEndpoints]);

  const share = billing && Number(billing.includedCredit) > 0 ? Math.min(100, (Number(billing.used) / Number(billing.includedCredit)) * 100) : 0;
  return (
    <section>
      <h1>{member.workspaceName}</h1>
      <p>Signed in as {member.email} ({member.role}).</p>
      {error && <p role="alert" className="error">{error}</p>}
      {billing && (
        <div role="region" aria-label="This month’s usage" className="card">
          <h2>This month ({billing.period}, {billing.plan} plan)</h2>
          <p aria-label="Used of included credit">{billing.used} of {billing.includedCredit} {billing.currency} used</p>
          <div className="meter" role="meter" aria-label="Credit used" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(share)}>
            <div className="meter-fill" ref={(el) => { if (el) el.style.width = `${share}%`; }} />
          </div>
          <p>Remaining {billing.remainingCredit}{Number(billing.overage) > 0 ? ` · overage ${billing.overage}` : ''}{billing.paidWorkPaused ? ' · paid work is paused' : ''}</p>
        </div>
      )}
      {recent && <RunList label="Recent runs" runs={recent} />}
      {failing && <RunList label="Failing runs" runs={failing} />}
      {endpoints && (
        <div role="region" aria-label="Endpoints" className="card">
          <h2>Endpoints</h2>
          {endpoints.length === 0 ? <p>None.</p> : (
            <ul className="plain">
              {endpoints.map((endpoint) => (
                <li key={endpoint.id}>
                  <a href={`/console/endpoints/${endpoint.id}`} onClick={(e) => follow(e, `/console/endpoints/${endpoint.id}`)}>{endpoint.namespace}/{endpoint.name}</a>{' · '}
                  <span aria-label={`Last snapshot of ${endpoint.namespace}/${endpoint.name}`}>{endpoint.snapshot ? `snapshot ${endpoint.snapshot.id} (version ${endpoint.snapshot.version}${endpoint.snapshot.committedAt ? `, ${new Date(endpoint.snapshot.committedAt).toLocaleString()}` : ''})` : 'no snapshot'}</span>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}
