import { FormEvent, useEffect, useState } from 'react';
import { call, Problem } from './api';

/** The invite link's page: its token is in the fragment, which the browser never sends; it goes in a body. */
export function InvitePage() {
  const token = window.location.hash.slice(1);
  const [invite, setInvite] = useState<{ email: string; workspaceName: string } | null | undefined>(undefined);
  const [error, setError] = useState('');
  const [done, setDone] = useState('');

  useEffect(() => {
    if (!token) return setInvite(null);
    call<{ email: string; workspaceName: string }>('POST', '/invite', { token }).then(setInvite, () => setInvite(null));
  }, [token]);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    if (form.get('password') !== form.get('confirm')) return setError('The two passwords differ.');
    setError('');
    try {
      const accepted = await call<{ email: string }>('POST', '/invite/accept', { token, password: form.get('password') });
      window.history.replaceState(null, '', '/console/invite');
      setDone(accepted.email);
    } catch (failure) {
      setError(failure instanceof Problem ? failure.message : 'Setting the password failed.');
    }
  }

  if (invite === undefined) return <p role="status">Loading…</p>;
  if (done) return <main className="narrow"><h1>Password set</h1><p role="status">Sign in as {done}.</p><a href="/console/sign-in">Sign in</a></main>;
  if (invite === null) return <main className="narrow"><h1>Invite</h1><p role="alert">This invite link is unknown, used or expired: ask an owner or admin for a new one.</p></main>;
  return (
    <main className="narrow">
      <h1>Join {invite.workspaceName}</h1>
      <p>Set the password of {invite.email}.</p>
      <form onSubmit={submit}>
        <label>Password <input name="password" type="password" autoComplete="new-password" minLength={10} required /></label>
        <label>Confirm password <input name="confirm" type="password" autoComplete="new-password" minLength={10} required /></label>
        <button type="submit">Set password</button>
        {error && <p role="alert" className="error">{error}</p>}
      </form>
    </main>
  );
}
