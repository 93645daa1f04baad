import { useCallback, useEffect, useState } from 'react';
import { call, Problem } from './api';

// Writes: the governed write actions waiting for approval on every endpoint (listSourceWrites per
// endpoint, status pending_approval), with Approve and Reject (approveSourceWrite,
// rejectSourceWrite through the console door: the operations decide who may, and the decision
// records the signed-in member as its actor).

interface Endpoint { id: string; name: string }
interface Decision { memberId: string; decision: string; comment: string | null }
interface WriteAction {
  actionId: string;
  dataEndpointId: string;
  operation: string;
  status: string;
  approval: { approvers: number; counted: number; expiresAt: string | null; decisions: Decision[] };
  changeSet: unknown;
  proposedByMemberId: string;
  createdAt: string;
}
interface Pagination { nextOffset: number | null }

const explain = (failure: unknown, fallback: string) => (failure instanceof Problem ? `${failure.message} (${failure.code})` : fallback);

/** Every page of a list, by its nextOffset. */
async function everyPage<T>(path: string, field: string): Promise<T[]> {
  const rows: T[] = [];
  for (let offset: number | null = 0; offset !== null;) {
    const answer: Record<string, unknown> & { pagination: Pagination } = await call('GET', `${path}${path.includes('?') ? '&' : '?'}limit=200&offset=${offset}`);
    rows.push(...(answer[field] as T[]));
    offset = answer.pagination.nextOffset;
  }
  return rows;
}

export function WritesPage() {
  const [pending, setPending] = useState<Array<WriteAction & { endpointName: string }> | undefined>(undefined);
  const [deciding, setDeciding] = useState('');
  const [notice, setNotice] = useState('');
  const [error, setError] = useState('');

  const load = useCallback(async () => {
    try {
      const endpoints = await everyPage<Endpoint>('/data-endpoints', 'dataEndpoints');
      const lists = await Promise.all(endpoints.map(async (endpoint) => (await everyPage<WriteAction>(`/data-endpoints/${endpoint.id}/writes?status=pending_approval`, 'writeActions')).map((action) => ({ ...action, endpointName: endpoint.name }))));
      setPending(lists.flat().sort((a, b) => a.createdAt.localeCompare(b.createdAt)));
    } catch (failure) {
      setError(explain(failure, 'Loading the write actions failed.'));
    }
  }, []);
  useEffect(() => { void load(); }, [load]);

  async function decide(action: WriteAction, decision: 'approve' | 'reject') {
    setDeciding(action.actionId);
    setError('');
    setNotice('');
    try {
      const { writeAction } = await call<{ writeAction: WriteAction }>('POST', `/data-endpoints/${action.dataEndpointId}/writes/${action.actionId}/${decision}`, {});
      setNotice(`${decision === 'approve' ? 'Approved' : 'Rejected'} ${action.actionId}: it is ${writeAction.status}.`);
      await load();
    } catch (failure) {
      setError(explain(failure, 'The decision failed.'));
    } finally {
      setDeciding('');
    }
  }

  return (
    <section>
      <h1>Writes</h1>
      <p className="muted">Governed writes waiting for approval, oldest first.</p>
      {notice && <p role="status" aria-label="Decision">{notice}</p>}
      {error && <p role="alert" className="error">{error}</p>}
      {!pending ? (!error && <p role="status">Loading…</p>) : pending.length === 0 ? <p>No write waits for approval.</p> : (
        <table aria-label="Writes waiting for approval">
          <thead><tr><th>Action</th><th>Endpoint</th><th>Operation</th><th>Approvals</th><th>Expires</th><th>Changes</th><th><span className="visually-hidden">Decide</span></th></tr></thead>
          <tbody>
            {pending.map((action) => (
              <tr key={action.actionId} data-action={action.actionId}>
                <td>{action.actionId}</td>
                <td>{action.endpointName}</td>
                <td>{action.operation}</td>
                <td>{action.approval.counted} of {action.approval.approvers}</td>
                <td>{action.approval.expiresAt ? new Date(action.approval.expiresAt).toLocaleString() : '—'}</td>
                <td><details><summary>Change set</summary><pre>{JSON.stringify(action.changeSet, null, 2)}</pre></details></td>
                <td className="row">
                  <button type="button" disabled={deciding !== ''} onClick={() => void decide(action, 'approve')}>Approve</button>
                  <button type="button" disabled={deciding !== ''} onClick={() => void decide(action, 'reject')}>Reject</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
