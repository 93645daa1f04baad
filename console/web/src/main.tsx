import { StrictMode, useCallback, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { call, Problem, Session, useToken } from './api';
import { navigate, usePath } from './router';
import { SignInPage } from './SignIn';
import { InvitePage } from './Invite';
import { WorkspacePicker } from './Workspaces';
import { Shell } from './Shell';
import './styles.css';

function App() {
  const path = usePath();
  const [session, setSession] = useState<Session | null | undefined>(undefined);

  const adopt = useCallback((next: Session | null) => {
    if (next) useToken(next.csrfToken);
    setSession(next);
  }, []);

  useEffect(() => {
    call<Session>('GET', '/session').then(adopt, (error: unknown) => {
      if (error instanceof Problem && error.status === 401) adopt(null);
      else throw error;
    });
  }, [adopt]);

  if (path === '/console/invite') return <InvitePage />;
  if (session === undefined) return <p role="status">Loading…</p>;
  if (session === null || path === '/console/sign-in') {
    return <SignInPage onSignedIn={(next) => { adopt(next); navigate(next.member ? '/console' : '/console/workspaces'); }} />;
  }
  if (!session.member || path === '/console/workspaces') {
    return <WorkspacePicker session={session} onChosen={(next) => { adopt(next); navigate('/console'); }} />;
  }
  return <Shell session={session} path={path} onSignedOut={() => { adopt(null); navigate('/console/sign-in'); }} />;
}

createRoot(document.getElementById('root')!).render(<StrictMode><App /></StrictMode>);
