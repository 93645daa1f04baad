import { FormEvent, useEffect, useState } from 'react';
import { call, Problem, Session } from './api';

/** What the sign-in page offers: single sign-on when the installation set it up, and the refusal a single sign-on came back with. */
interface SignInOptions {
  singleSignOn: boolean;
  refusal?: { code: string; message: string };
}

export function SignInPage({ onSignedIn }: { onSignedIn(session: Session): void }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [options, setOptions] = useState<SignInOptions>({ singleSignOn: false });

  useEffect(() => {
    // A single sign-on refused comes back as ?refused=<code>; the server words it (no text from the URL is shown).
    const refused = new URLSearchParams(window.location.search).get('refused');
    call<SignInOptions>('GET', `/sign-in${refused ? `?refused=${encodeURIComponent(refused)}` : ''}`).then((answer) => {
      setOptions(answer);
      if (answer.refusal) setError(`${answer.refusal.message} (${answer.refusal.code})`);
    }, () => undefined);
  }, []);

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
      </form>
      {options.singleSignOn && (
        // A navigation, not a fetch: the provider's pages are the browser's to show.
        <p><button type="button" onClick={() => window.location.assign('/console/sign-in/oidc')}>Sign in with single sign-on</button></p>
      )}
      {error && <p role="alert" className="error">{error}</p>}
    </main>
  );
}
