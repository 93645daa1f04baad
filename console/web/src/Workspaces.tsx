import { call, Session } from './api';

/** A person who is a member of several workspaces picks the one to act in. */
export function WorkspacePicker({ session, onChosen }: { session: Session; onChosen(session: Session): void }) {
  return (
    <main className="narrow">
      <h1>Pick a workspace</h1>
      <ul className="plain">
        {session.memberships.map((membership) => (
          <li key={membership.memberId}>
            <button type="button" onClick={async () => onChosen(await call<Session>('PUT', '/session/member', { memberId: membership.memberId }))}>
              {membership.workspaceName}
            </button>{' '}
            <span className="muted">{membership.role}</span>
          </li>
        ))}
      </ul>
    </main>
  );
}
