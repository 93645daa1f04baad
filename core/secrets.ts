import * as crypto from 'node:crypto';
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** AES-256-GCM envelope "v1:<iv>:<tag>:<ciphertext>" (base64url parts) for credentials at rest. */
export function encryptSecret(plaintext: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(':');
}

export function decryptSecret(envelope: string, key: Buffer): string {
  const [version, iv, tag, body] = envelope.split(':');
  if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('Unrecognised secret envelope');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
}

/** SHA-256 suffices for API-key secrets: they carry 256 random bits, so there is nothing to brute-force. */
export function sha256Hex(value: string): string {
  // Node's one-shot digest (20.12+): no Hash object, about half the cost, on every request's key.
  return typeof crypto.hash === 'function' ? crypto.hash('sha256', value, 'hex') : createHash('sha256').update(value).digest('hex');
}

export function constantTimeEqualHex(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * The forms a secret may take when a remote system echoes it back: as is, percent-encoded (in a
 * URL path or query), and, for a header value with a scheme ("Bearer abc…"), the token alone.
 */
export function secretForms(secret: string | undefined): string[] {
  // Shorter values cannot be cut out without mangling every message (a header "X-Version: 2"), and are no credential.
  if (!secret || secret.length < 4) return [];
  const token = /^[A-Za-z][\w-]*\s+(\S{6,})$/.exec(secret)?.[1];
  const forms = new Set<string>();
  for (const value of token ? [secret, token] : [secret]) {
    forms.add(value);
    forms.add(encodeURIComponent(value));
    forms.add(encodeURI(value));
  }
  return [...forms];
}

/**
 * Cuts secrets out of an error (or any value) before it is logged, returned or handed to Temporal,
 * where messages end up in logs, run records and workflow histories. Remote systems (an upstream
 * API, a PostgreSQL server or proxy, Stripe) can echo the credentials they were sent in their
 * messages, redirect targets or links, so their text is not trusted to be clean. Every string
 * property is rewritten in place, also the non-enumerable message and stack, and those of the
 * objects the error carries (a driver's detail and hint, an SDK's raw answer, a cause), a few
 * levels deep. Changed in place and returned, so the error keeps its class, code and identity.
 */
export function scrubSecrets<T>(value: T, secrets: Iterable<string | undefined>, replacement = '***'): T {
  const forms = [...new Set([...secrets].flatMap(secretForms))].sort((a, b) => b.length - a.length);
  if (!forms.length) return value;
  const clean = (text: string) => forms.reduce((out, form) => (out.includes(form) ? out.split(form).join(replacement) : out), text);
  const seen = new WeakSet<object>();
  const visit = (target: unknown, depth: number): unknown => {
    if (typeof target === 'string') return clean(target);
    if (!target || typeof target !== 'object' || depth > 4 || seen.has(target) || ArrayBuffer.isView(target)) return target;
    seen.add(target);
    for (const key of Object.getOwnPropertyNames(target)) {
      const descriptor = Object.getOwnPropertyDescriptor(target, key);
      if (!descriptor || !('value' in descriptor) || !descriptor.writable) continue;
      const next = visit(descriptor.value, depth + 1);
      if (next !== descriptor.value) (target as Record<string, unknown>)[key] = next;
    }
    return target;
  };
  return visit(value, 0) as T;
}
