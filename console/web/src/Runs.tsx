import { FormEvent, MouseEvent, useCallback, useEffect, useRef, useState } from 'react';
import { Pager, type Pagination } from './Pager';
import { call, Problem, Session } from './api';
import { navigate } from './router';

// Runs: the list (listRuns, paged on the server by its nextOffset, filtered by status and pipeline)
// and a run's page (getRun), polled while the run is queued or running, with a Cancel button while
// it is (cancelRun). Runs are launched from the Pipelines page.

const STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;
const PAGE_SIZE = 25;
const POLL_MS = 1000;

interface RunSummary {
  id: string;
  projectId: string;
  pipelineId: string;
  pipelineName: string;
  versionNumber: number;
  trigger: string;
  status: string;
  queuedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
  warnings: unknown[];
  error: { nodeId: string | null; code: string; message: string; remoteStatus: number | null } | null;
  workflow: { workflowId: string; namespace: string; webUiUrl: string | null };
}
interface RunNode {
  nodeId: string;
  type: string;
  status: string;
  recordsRead: number | null;
  recordsIn: number | null;
  recordsOut: number | null;
  recordsWritten: number | null;
  pages: number | null;
  stopReason: string | null;
  snapshot: unknown;
  warnings: unknown[];
  startedAt: string | null;
  finishedAt: string | null;
}
interface Run extends RunSummary { document: unknown; nodes: RunNode[] }

const when = (value: string | null) => (value ? new Date(value).toLocaleString() : '—');
const count = (value: number | null) => (value === null ? '—' : String(value));
const explain = (failure: unknown, fallback: string) => (failure instanceof Problem ? `${failure.message} (${failure.code})` : fallback);
const open = (status: string) => status === 'queued' || status === 'running';
const follow = (event: MouseEvent<HTMLAnchorElement>, to: string) => {
  event.preventDefault();
  navigate(to);
};

export function RunsPage({ session: _session }: { session: Session }) {
  const [filter, setFilter] = useState({ status: '', pipelineId: '' });
  const [offset, setOffset] = useState(0);
  const [answer, setAnswer] = useState<{ runs: RunSummary[]; pagination: Pagination } | undefined>(undefined);
  const [pipelines, setPipelines] = useState<Array<{ id: string; name: string }>>([]);
  const [error, setError] = useState('');

  useEffect(() => {
    // The pipeline filter's choices: the pipelines of every project (their first page each).
    (async () => {
      const { projects } = await call<{ projects: Array<{ id: string }> }>('GET', '/projects?limit=200');
      const lists = await Promise.all(projects.map((p) => call<{ pipelines: Array<{ id: string; name: string }> }>('GET', `/projects/${p.id}/pipelines?limit=200`)));
      setPipelines(lists.flatMap((l) => l.pipelines).sort((a, b) => a.name.localeCompare(b.name)));
    })().catch((failure: unknown) => setError(explain(failure, 'Loading pipelines failed.')));
  }, []);

  useEffect(() => {
    let current = true;
    const query = new URLSearchParams({ limit: String(PAGE_SIZE), offset: String(offset) });
    if (filter.status) query.set('status', filter.status);
    if (filter.pipelineId) query.set('pipelineId', filter.pipelineId);
    call<{ runs: RunSummary[]; pagination: Pagination }>('GET', `/runs?${query}`).then(
      (next) => { if (current) { setAnswer(next); setError(''); } },
      (failure: unknown) => { if (current) setError(explain(failure, 'Loading runs failed.')); },
    );
    return () => { current = false; };
  }, [filter, offset]);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setOffset(0);
    setFilter({ status: String(form.get('status') ?? ''), pipelineId: String(form.get('pipelineId') ?? '') });
  }

  const pagination = answer?.pagination;
  return (
    <section>
      <h1>Runs</h1>
      <form onSubmit={submit} aria-label="Filter runs" className="row card">
        <label>Status
          <select name="status" defaultValue="">
            <option value="">any</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label>Pipeline
          <select name="pipelineId" defaultValue="">
            <option value="">any</option>
            {pipelines.map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      {error && <p role="alert" className="error">{error}</p>}
      {!answer ? (!error && <p role="status">Loading…</p>) : (
        <>
          <table aria-label="Runs">
            <thead><tr><th>Run</th><th>Pipeline</th><th>Status</th><th>Trigger</th><th>Queued</th><th>Duration</th></tr></thead>
            <tbody>
              {answer.runs.map((run) => (
                <tr key={run.id}>
                  <td><a href={`/console/runs/${run.id}`} onClick={(e) => follow(e, `/console/runs/${run.id}`)}>{run.id.slice(0, 8)}</a></td>
                  <td>{run.pipelineName} (v{run.versionNumber})</td>
                  <td>{run.status}</td>
                  <td>{run.trigger}</td>
                  <td>{when(run.queuedAt)}</td>
                  <td>{run.durationMs === null ? '—' : `${(run.durationMs / 1000).toFixed(1)} s`}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {pagination && <Pager pagination={pagination} shown={answer.runs.length} none="No runs" pageSize={PAGE_SIZE} onOffset={setOffset} />}
        </>
      )}
    </section>
  );
}

/** Records a node has handled so far: what a source read, what a destination wrote, else what came in. */
const handled = (node: RunNode) => node.recordsRead ?? node.recordsWritten ?? node.recordsIn ?? 0;

/** Records per second since the node started (to its end, once it ended). */
function throughput(node: RunNode, now: number): string {
  if (!node.startedAt) return '—';
  const seconds = ((node.finishedAt ? Date.parse(node.finishedAt) : now) - Date.parse(node.startedAt)) / 1000;
  return seconds > 0 ? `${(handled(node) / seconds).toFixed(1)}/s` : '—';
}

export function RunPage({ runId }: { runId: string }) {
  const [run, setRun] = useState<Run | undefined>(undefined);
  const [error, setError] = useState('');
  const [polledAt, setPolledAt] = useState(Date.now());
  const [canceling, setCanceling] = useState(false);
  const timer = useRef<number | undefined>(undefined);

  const load = useCallback(async () => {
    try {
      const { run: next } = await call<{ run: Run }>('GET', `/runs/${encodeURIComponent(runId)}`);
      setRun(next);
      setPolledAt(Date.now());
      setError('');
      // Live while it runs: polled until it ends, without reloading the page.
      if (open(next.status)) timer.current = window.setTimeout(() => void load(), POLL_MS);
    } catch (failure) {
      setError(explain(failure, 'Loading the run failed.'));
      if (!(failure instanceof Problem) || failure.status >= 500) timer.current = window.setTimeout(() => void load(), POLL_MS);
    }
  }, [runId]);
  useEffect(() => {
    void load();
    return () => window.clearTimeout(timer.current);
  }, [load]);

  async function cancel(target: Run) {
    setCanceling(true);
    try {
      const { run: next } = await call<{ run: Run }>('POST', `/projects/${encodeURIComponent(target.projectId)}/runs/${encodeURIComponent(target.id)}/cancel`);
      // The answer has the run's new status; the poll (still scheduled while it was open) shows the rest.
      setRun((shown) => (shown ? { ...shown, status: next.status, finishedAt: next.finishedAt } : shown));
      setError('');
    } catch (failure) {
      setError(explain(failure, 'Canceling the run failed.'));
    } finally {
      setCanceling(false);
    }
  }

  if (!run) return <section><h1>Run</h1>{error ? <p role="alert" className="error">{error}</p> : <p role="status">Loading…</p>}</section>;
  const snapshots = run.nodes.filter((n) => n.type === 'destination');
  return (
    <section>
      <p><a href="/console/runs" onClick={(e) => follow(e, '/console/runs')}>All runs</a></p>
      <h1>Run of {run.pipelineName} (v{run.versionNumber})</h1>
      {error && <p role="alert" className="error">{error}</p>}
      <dl className="facts">
        <dt>Status</dt><dd aria-label="Run status">{run.status}</dd>
        <dt>Run</dt><dd>{run.id}</dd>
        <dt>Trigger</dt><dd>{run.trigger}</dd>
        <dt>Queued</dt><dd>{when(run.queuedAt)}</dd>
        <dt>Started</dt><dd>{when(run.startedAt)}</dd>
        <dt>Finished</dt><dd>{when(run.finishedAt)}</dd>
        <dt>Workflow</dt><dd>{run.workflow.webUiUrl ? <a href={run.workflow.webUiUrl} target="_blank" rel="noreferrer">Open in Temporal Web UI</a> : run.workflow.workflowId}</dd>
      </dl>
      {open(run.status) && (
        <div className="row">
          <p className="muted" role="status">Live: refreshed every second.</p>
          <button type="button" disabled={canceling} onClick={() => void cancel(run)}>Cancel</button>
        </div>
      )}
      <table aria-label="Nodes">
        <thead><tr><th>Node</th><th>Type</th><th>Status</th><th>Read</th><th>In</th><th>Out</th><th>Written</th><th>Pages</th><th>Throughput</th></tr></thead>
        <tbody>
          {run.nodes.map((node) => (
            <tr key={node.nodeId} data-node={node.nodeId}>
              <td>{node.nodeId}</td>
              <td>{node.type}</td>
              <td>{node.status}</td>
              <td aria-label={`${node.nodeId} read`}>{count(node.recordsRead)}</td>
              <td aria-label={`${node.nodeId} in`}>{count(node.recordsIn)}</td>
              <td aria-label={`${node.nodeId} out`}>{count(node.recordsOut)}</td>
              <td aria-label={`${node.nodeId} written`}>{count(node.recordsWritten)}</td>
              <td>{count(node.pages)}</td>
              <td>{throughput(node, polledAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {run.error && (
        <div role="region" aria-label="Error evidence" className="card error">
          <h2>Error</h2>
          <dl className="facts">
            <dt>Code</dt><dd>{run.error.code}</dd>
            <dt>Message</dt><dd>{run.error.message}</dd>
            <dt>Node</dt><dd>{run.error.nodeId ?? '—'}</dd>
            <dt>Remote status</dt><dd>{run.error.remoteStatus ?? '—'}</dd>
          </dl>
        </div>
      )}
      {run.warnings.length > 0 && <div role="region" aria-label="Warnings" className="card"><h2>Warnings</h2><pre>{JSON.stringify(run.warnings, null, 2)}</pre></div>}
      <div role="region" aria-label="Snapshot" className="card">
        <h2>Snapshot</h2>
        {snapshots.map((node) => <p key={node.nodeId}>{node.nodeId}: {node.snapshot ? <code>{JSON.stringify(node.snapshot)}</code> : 'none yet'}</p>)}
        <details><summary>Pipeline document this run ran (version {run.versionNumber})</summary><pre>{JSON.stringify(run.document, null, 2)}</pre></details>
      </div>
    </section>
  );
}
