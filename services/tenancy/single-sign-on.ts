import { timingSafeEqual } from 'node:crypto';
import type * as OpenIdClient from 'openid-client' with { 'resolution-mode': 'import' };
import type { OidcSettings } from '../../core/config';
import { AuthenticationError, DomainError, UpstreamError } from '../../core/errors';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import type { Db } from '../../db/connection';
import { ConsoleSession, signInWithVerifiedEmail } from './console-sessions';

// The console's single sign-on (issue 36): OpenID Connect's authorization code flow with PKCE,
// through openid-client (certified, by the author of the JOSE libraries it verifies with). The
// state, nonce and PKCE verifier of a sign-in under way travel sealed (AES-256-GCM under the
// installation's key) in a cookie of the browser that started it, so nothing a client sends is
// believed: a cookie it altered or made up does not open, and a callback whose state is not the
// cookie's is refused. The provider is discovered afresh at each step: sign-ins are rare, its
// keys may rotate, and no cache needs keeping.

/** How long a person may spend at their provider between leaving the sign-in page and coming back. */
export const FLOW_MINUTES = 10;
/** What the sealed flow is for, so that no other sealed value of Weft's opens as one. */
const FLOW_PURPOSE = 'weft-console-oidc-flow';

interface Flow {
  purpose: typeof FLOW_PURPOSE;
  state: string;
  nonce: string;
  codeVerifier: string;
  expiresAt: number;
}

/** Every way a single sign-on ends without a session, as the sign-in page explains it. */
export const SINGLE_SIGN_ON_REFUSALS = {
  sso_not_configured: 'Single sign-on is not set up on this installation: sign in with your email and password.',
  sso_flow_lost: 'This single sign-on attempt is unknown or expired: start again from the sign-in page.',
  sso_state_mismatch: 'This single sign-on answer does not belong to the attempt this browser started: start again from the sign-in page.',
  sso_denied: 'Your single sign-on provider did not sign you in.',
  sso_failed: 'Your single sign-on provider’s answer could not be verified.',
  sso_unavailable: 'The single sign-on provider could not be reached: try again later.',
  sso_email_unverified: 'Your single sign-on provider has not verified your email address, so it cannot sign you in here.',
  sso_no_member: 'No member of any workspace has the email address your single sign-on provider verified: ask an owner or admin to invite it.',
} as const;
export type SingleSignOnRefusal = keyof typeof SINGLE_SIGN_ON_REFUSALS;

export const isSingleSignOnRefusal = (code: string): code is SingleSignOnRefusal => Object.hasOwn(SINGLE_SIGN_ON_REFUSALS, code);

const refused = (code: SingleSignOnRefusal): DomainError =>
  code === 'sso_unavailable' ? new UpstreamError(code, SINGLE_SIGN_ON_REFUSALS[code]) : new AuthenticationError(code, SINGLE_SIGN_ON_REFUSALS[code]);

/** The provider's metadata and this client at it, with every ID token's signature checked against the provider's keys. */
async function discover(settings: OidcSettings): Promise<{ oidc: typeof OpenIdClient; configuration: OpenIdClient.Configuration }> {
  // ESM only: loaded when single sign-on is used.
  const oidc = await import('openid-client');
  try {
    // client_secret_basic: OpenID Connect's default for a registered client.
    const configuration = await oidc.discovery(settings.issuer, settings.clientId, undefined, oidc.ClientSecretBasic(settings.clientSecret), {
      // http only for a provider on this machine (config.ts refuses it elsewhere).
      execute: settings.issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
      timeout: 10,
    });
    oidc.enableNonRepudiationChecks(configuration);
    return { oidc, configuration };
  } catch (error) {
    throw Object.assign(refused('sso_unavailable'), { cause: error });
  }
}

const sameText = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

function openFlow(sealed: string | undefined, encryptionKey: Buffer, now: number): Flow {
  if (!sealed || sealed.length > 2_000) throw refused('sso_flow_lost');
  let flow: Flow;
  try {
    flow = JSON.parse(decryptSecret(sealed, encryptionKey)) as Flow;
  } catch {
    throw refused('sso_flow_lost');
  }
  if (flow.purpose !== FLOW_PURPOSE || typeof flow.expiresAt !== 'number' || flow.expiresAt < now) throw refused('sso_flow_lost');
  return flow;
}

/**
 * Starts a sign-in at the provider: the URL to send the browser to, and the sealed flow for the
 * browser's cookie (its state, nonce and PKCE verifier, good for FLOW_MINUTES).
 */
export async function beginSingleSignOn(settings: OidcSettings, encryptionKey: Buffer, redirectUri: string, now = Date.now()): Promise<{ authorizationUrl: string; sealedFlow: string }> {
  const { oidc, configuration } = await discover(settings);
  const flow: Flow = {
    purpose: FLOW_PURPOSE,
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    codeVerifier: oidc.randomPKCECodeVerifier(),
    expiresAt: now + FLOW_MINUTES * 60_000,
  };
  const authorizationUrl = oidc.buildAuthorizationUrl(configuration, {
    redirect_uri: redirectUri,
    scope: 'openid email',
    response_type: 'code',
    code_challenge: await oidc.calculatePKCECodeChallenge(flow.codeVerifier),
    code_challenge_method: 'S256',
    state: flow.state,
    nonce: flow.nonce,
  });
  return { authorizationUrl: authorizationUrl.href, sealedFlow: encryptSecret(JSON.stringify(flow), encryptionKey) };
}

/** The email the provider vouches for, and whether it verified it: from the ID token, or its UserInfo when the token carries none. */
async function verifiedClaims(oidc: typeof OpenIdClient, configuration: OpenIdClient.Configuration, tokens: OpenIdClient.TokenEndpointResponse & OpenIdClient.TokenEndpointResponseHelpers): Promise<{ email: unknown; emailVerified: unknown }> {
  const idToken = tokens.claims();
  if (!idToken) throw refused('sso_failed');
  if (idToken.email !== undefined) return { email: idToken.email, emailVerified: idToken.email_verified };
  // The UserInfo must be about the ID token's subject (openid-client checks it).
  const userInfo = await oidc.fetchUserInfo(configuration, tokens.access_token, idToken.sub);
  return { email: userInfo.email, emailVerified: userInfo.email_verified };
}

/**
 * Finishes a sign-in when the provider sends the browser back: the callback's state must be the
 * sealed flow's; the code is exchanged with the PKCE verifier; the ID token's signature, issuer,
 * audience, expiry and nonce are checked; the email must be verified (`email_verified` true); then
 * every membership with that email opens a session, as a password sign-in does. Anything else is
 * one of SINGLE_SIGN_ON_REFUSALS.
 */
export async function completeSingleSignOn(
  db: Db,
  settings: OidcSettings,
  encryptionKey: Buffer,
  callbackUrl: URL,
  sealedFlow: string | undefined,
  now = Date.now(),
): Promise<{ sessionId: string; session: ConsoleSession }> {
  const flow = openFlow(sealedFlow, encryptionKey, now);
  const state = callbackUrl.searchParams.get('state');
  if (state === null || !sameText(state, flow.state)) throw refused('sso_state_mismatch');
  if (callbackUrl.searchParams.has('error')) throw refused('sso_denied');
  const { oidc, configuration } = await discover(settings);
  let claims: { email: unknown; emailVerified: unknown };
  try {
    const tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
      pkceCodeVerifier: flow.codeVerifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
      idTokenExpected: true,
    });
    claims = await verifiedClaims(oidc, configuration, tokens);
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw Object.assign(refused('sso_failed'), { cause: error });
  }
  if (claims.emailVerified !== true || typeof claims.email !== 'string' || claims.email === '') throw refused('sso_email_unverified');
  const signedIn = await signInWithVerifiedEmail(db, claims.email);
  if (!signedIn) throw refused('sso_no_member');
  return signedIn;
}
