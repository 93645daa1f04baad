import { FormEvent, useState } from 'react';
import { call, typedValue } from './api';
import { FailureAlert } from './FailureAlert';
import { useAnswer } from './useAnswer';

// Request limits (owners and admins, as getApiLimits declares): the operations of GET and PUT
// /api/v1/api-limits. The form leaves judging the values to putApiLimits, whose refusal it shows.

interface ApiLimits { workspaceRequests: number; apiKeyRequests: number; windowSeconds: number }

/** A field as typed (empty is null), for putApiLimits to judge. */
const valueOf = (entry: FormDataEntryValue | null): unknown => {
  const text = String(entry ?? '').trim();
  return text === '' ? null : typedValue(text);
};

export function LimitsPage() {
  const { answer, failure } = useAnswer<ApiLimits>('/api-limits');
  const [saved, setSaved] = useState<ApiLimits | undefined>(undefined);
  const [saveFailure, setSaveFailure] = useState<unknown>(undefined);
  const limits = saved ?? answer;

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setSaveFailure(undefined);
    try {
      setSaved(await call<ApiLimits>('PUT', '/api-limits', { workspaceRequests: valueOf(form.get('workspaceRequests')), apiKeyRequests: valueOf(form.get('apiKeyRequests')) }));
    } catch (refusal) {
      setSaved(undefined);
      setSaveFailure(refusal);
    }
  }

  return (
    <section>
      <h1>Limits</h1>
      <FailureAlert failure={failure} fallback="Loading the limits failed." />
      {!limits ? (failure === undefined && <p role="status">Loading…</p>) : (
        <>
          <p aria-label="Current limits">{limits.workspaceRequests} requests per {limits.windowSeconds} seconds for the workspace; {limits.apiKeyRequests} for each key or signed-in member.</p>
          <form onSubmit={submit} aria-label="Request limits" className="card" noValidate>
            <p className="muted">Changing a limit keeps what the current {limits.windowSeconds}-second window has used.</p>
            <label>Workspace requests per window <input name="workspaceRequests" type="number" defaultValue={limits.workspaceRequests} /></label>
            <label>Requests per key or member per window <input name="apiKeyRequests" type="number" defaultValue={limits.apiKeyRequests} /></label>
            <button type="submit">Save limits</button>
            {saved && <p role="status">Limits saved.</p>}
            <FailureAlert failure={saveFailure} fallback="Saving the limits failed." />
          </form>
        </>
      )}
    </section>
  );
}
