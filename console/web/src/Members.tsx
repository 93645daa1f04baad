import { FormEvent, useCallback, useEffect, useState } from 'react';
import { call, Problem } from './api';

interface MemberRow {
  id: string;
  name: string;
  email: string | null;
  role: 'owner' | 'admin' | 'member';
  readPermissions: string[];
  writePermissions: string[];
  canSignIn: boolean;
}

const ROLES = ['owner', 'admin', 'member'] as const;
const split = (text: FormDataEntryValue | null) => String(text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const explain = (failure: unknown, fallback: string) => (failure instanceof Problem ? `${failure.message} (${failure.code})` : fallback);

function InviteForm({ onInvited }: { onInvited(): void }) {
  const [link, setLink] = useState('');
  const [error, setError] = useState('');
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setError('');
    try {
      const invited = await call<{ inviteUrl: string }>('POST', '/members/invites', { email: form.get('email'), role: form.get('role') });
      setLink(invited.inviteUrl);
      onInvited();
    } catch (failure) {
      setError(explain(failure, 'Inviting failed.'));
    }
  }
  return (
    <form onSubmit={submit} aria-label="Invite a member" className="card">
      <label>Email <input name="email" type="email" required /></label>
      <label>Role <select name="role" defaultValue="member">{ROLES.map((r) => <option key={r} value={r}>{r}</option>)}</select></label>
      <button type="submit">Invite</button>
      {link && <p>Send this link (one use, 7 days): <output aria-label="Invite link" className="secret">{link}</output></p>}
      {error && <p role="alert" className="error">{error}</p>}
    </form>
  );
}

function EditMember({ member, onDone }: { member: MemberRow; onDone(changed: boolean): void }) {
  const [error, setError] = useState('');
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    try {
      await call('PATCH', `/members/${member.id}`, { role: form.get('role'), readPermissions: split(form.get('readPermissions')), writePermissions: split(form.get('writePermissions')) });
      onDone(true);
    } catch (failure) {
      setError(explain(failure, 'Saving failed.'));
    }
  }
  return (
    <form onSubmit={submit} role="dialog" aria-label={`Edit ${member.email ?? member.name}`} className="dialog">
      <label>Role <select name="role" defaultValue={member.role}>{ROLES.map((r) => <option key={r} value={r}>{r}</option>)}</select></label>
      <label>Read grants (comma-separated) <input name="readPermissions" defaultValue={member.readPermissions.join(', ')} /></label>
      <label>Write grants (comma-separated) <input name="writePermissions" defaultValue={member.writePermissions.join(', ')} /></label>
      <div className="row"><button type="submit">Save</button><button type="button" onClick={() => onDone(false)}>Cancel</button></div>
      {error && <p role="alert" className="error">{error}</p>}
    </form>
  );
}

export function MembersPage() {
  const [members, setMembers] = useState<MemberRow[] | undefined>(undefined);
  const [error, setError] = useState('');
  const [inviting, setInviting] = useState(false);
  const [editing, setEditing] = useState<MemberRow | null>(null);
  const [removing, setRemoving] = useState<MemberRow | null>(null);

  const load = useCallback(async () => {
    try {
      setMembers((await call<{ members: MemberRow[] }>('GET', '/members?limit=100')).members);
    } catch (failure) {
      setError(explain(failure, 'Loading members failed.'));
    }
  }, []);
  useEffect(() => { void load(); }, [load]);

  async function remove(member: MemberRow) {
    setError('');
    try {
      await call('DELETE', `/members/${member.id}`);
      await load();
    } catch (failure) {
      setError(explain(failure, 'Removing failed.'));
    }
    setRemoving(null);
  }

  return (
    <section>
      <h1>Members</h1>
      {error && <p role="alert" className="error">{error}</p>}
      {inviting ? <InviteForm onInvited={() => void load()} /> : <button type="button" onClick={() => setInviting(true)}>Invite member</button>}
      {members === undefined ? <p role="status">Loading…</p> : (
        <table>
          <thead><tr><th>Name</th><th>Email</th><th>Role</th><th>Grants</th><th>Signs in</th><th><span className="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {members.map((member) => (
              <tr key={member.id}>
                <td>{member.name}</td>
                <td>{member.email ?? '—'}</td>
                <td>{member.role}</td>
                <td>{[...member.readPermissions.map((g) => `read ${g}`), ...member.writePermissions.map((g) => `write ${g}`)].join(', ') || '—'}</td>
                <td>{member.canSignIn ? 'yes' : 'invited'}</td>
                <td className="row">
                  <button type="button" aria-label={`Edit ${member.email ?? member.name}`} onClick={() => setEditing(member)}>Edit</button>
                  <button type="button" aria-label={`Remove ${member.email ?? member.name}`} onClick={() => setRemoving(member)}>Remove</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {editing && <EditMember member={editing} onDone={(changed) => { setEditing(null); if (changed) void load(); }} />}
      {removing && (
        <div role="dialog" aria-modal="true" aria-labelledby="remove-title" className="dialog">
          <h2 id="remove-title">Remove {removing.email ?? removing.name}?</h2>
          <p>Their sessions end now; their keys keep reading but can no longer change anything.</p>
          <div className="row"><button type="button" onClick={() => remove(removing)}>Remove</button><button type="button" onClick={() => setRemoving(null)}>Cancel</button></div>
        </div>
      )}
    </section>
  );
}
