// The console's client of its own routes (/console/api): the session cookie goes by itself; every
// change carries the session's token in a header, which no other site can read or set.

export interface Membership { memberId: string; workspaceId: string; workspaceName: string; role: string }
export interface PageLink { name: string; path: string; built: boolean }
export interface Session {
  email: string;
  member: { id: string; name: string; email: string | null; role: string; workspaceId: string; workspaceName: string } | null;
  memberships: Membership[];
  /** The navigation's pages. */
  pages: PageLink[];
  /** Pages reached from those (a run from the Runs page), not in the navigation. */
  innerPages: PageLink[];
  scopes: string[];
  /** The operations of the console's routes the member's role admits: a page offers only those. */
  operations: string[];
  csrfToken: string;
}

export class Problem extends Error {
  /** The problem's body as answered (its `errors` name each field or element at fault). */
  constructor(readonly status: number, readonly code: string, message: string, readonly retryAfter?: string, readonly body?: Record<string, unknown>) {
    super(message);
  }
}

/** A failure as a page shows it: the refusal's own message and code, as over HTTP. */
export const explain = (failure: unknown, fallback: string): string => (failure instanceof Problem ? `${failure.message} (${failure.code})` : fallback);

/** One field or element at fault, as a problem's `errors` name it. */
export interface FieldProblem { path?: string; message: string }

/** The fields at fault a refusal names (a 422's `errors`), none for any other failure. */
export const fieldProblems = (failure: unknown): FieldProblem[] => (failure instanceof Problem && Array.isArray(failure.body?.errors) ? failure.body.errors as FieldProblem[] : []);

/** A form field as typed, for the operation to judge: a number where the text is one, else the text. */
export const typedValue = (text: string): unknown => (/^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text);

let csrfToken = '';
export const useToken = (token: string) => { csrfToken = token; };

/** An answer with its headers, for a page that shows one (Weft-Withheld-Bindings on SPARQL results). */
export async function callWithHeaders<T = unknown>(method: string, path: string, body?: unknown): Promise<{ body: T; headers: Headers }> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-Weft-Console-Token'] = csrfToken;
  const response = await fetch(`/console/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  if (response.status === 204) return { body: undefined as T, headers: response.headers };
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : undefined;
  if (!response.ok) throw new Problem(response.status, parsed?.code ?? 'error', parsed?.message ?? `HTTP ${response.status}`, response.headers.get('Retry-After') ?? undefined, parsed);
  return { body: parsed as T, headers: response.headers };
}

export async function call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  return (await callWithHeaders<T>(method, path, body)).body;
}
