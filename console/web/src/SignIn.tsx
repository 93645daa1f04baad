import { FormEvent, useState } from 'react';
import { call, Problem, Session } from './api';

export function SignInPage({ onSignedIn }: { onSignedIn(session: Session): void }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setBusy(true);
    setError('');
    try {
      onSignedIn(await call<Session>('POST', '/session', { email: form.get('email'), password: form.get('password') }));
    } catch (failure) {
      setError(failure instanceof Problem && failure.status === 429 ? `${failure.message}` : failure instanceof Error ? failure.message : 'Signing in failed.');
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="narrow">
      <h1>Sign in to Weft</h1>
      <form onSubmit={submit}>
        <label>Email <input name="email" type="email" autoComplete="username" required /></label>
        <label>Password <input name="password" type="password" autoComplete="current-password" required /></label>
        <button type="submit" disabled={busy}>Sign in</button>
        {error && <p role="alert" className="error">{error}</p>}
      </form>
    </main>
  );
}
