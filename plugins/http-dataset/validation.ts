import type { FieldProblem } from '../../core/errors';
import type { InstallationContext } from '../capability';
import type { HttpDatasetCredentials, HttpDatasetTarget, ParameterLocation } from './definition';
import { displayUrl, isUnderBase } from './safe-fetch';
import { isZeroDuration, parseDuration } from './window';

const pointer = (...segments: string[]) => segments.map((s) => `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/** Installation rules beyond the schema: the base URL is a plain http(s) prefix, with credentials kept in headers. */
export function validateInstallation(config: Record<string, unknown>): FieldProblem[] {
  let base: URL;
  try {
    base = new URL(String(config.baseUrl));
  } catch {
    return [{ path: '/baseUrl', message: 'must be an absolute URL' }];
  }
  const problems: FieldProblem[] = [];
  if (base.protocol !== 'http:' && base.protocol !== 'https:') problems.push({ path: '/baseUrl', message: 'must be an http or https URL' });
  if (base.username || base.password) problems.push({ path: '/baseUrl', message: 'must not embed credentials; send them in headers' });
  if (base.search || base.hash) problems.push({ path: '/baseUrl', message: 'must not have a query string or fragment; it is an origin and path prefix' });
  return problems;
}

interface SentParameter {
  path: string;
  name: string;
  location: ParameterLocation;
}

/**
 * Target rules beyond the schema (run after it): the URL stays under the installation's base URL,
 * body parameters need POST, the window is not empty, and no parameter is sent twice, so fixed
 * query values never shadow the window or pagination values, and no query parameter of the target
 * shares a name with the installation's queryParameters (which would replace it on every request).
 * Problems name the installation's parameters, never their values.
 */
export function validateTarget(raw: Record<string, unknown>, installation: InstallationContext): FieldProblem[] {
  const target = raw as unknown as HttpDatasetTarget;
  const problems: FieldProblem[] = [];
  const baseUrl = typeof installation.settings.baseUrl === 'string' ? installation.settings.baseUrl : undefined;
  if (!baseUrl) problems.push({ path: '/request/url', message: 'cannot be checked: the installation has no baseUrl' });
  else if (!isUnderBase(target.request.url, baseUrl)) problems.push({ path: '/request/url', message: `must be under the installation's base URL ${displayUrl(baseUrl)}` });

  const post = (target.request.method ?? 'GET') === 'POST';
  for (const part of ['window', 'pagination'] as const) {
    if (target[part]?.location === 'body' && !post) problems.push({ path: `/${part}/location`, message: 'body needs request.method POST' });
  }
  const lookback = target.window?.lookback;
  if (lookback && isZeroDuration(parseDuration(lookback))) problems.push({ path: '/window/lookback', message: 'must be longer than zero' });

  const fixed: SentParameter[] = Object.keys(target.request.query ?? {}).map((name) => ({ path: pointer('request', 'query', name), name, location: 'query' }));
  const windowParameters: SentParameter[] = [];
  if (target.window) {
    const location = target.window.location ?? 'query';
    windowParameters.push({ path: '/window/startParameter', name: target.window.startParameter, location });
    if (target.window.endParameter) windowParameters.push({ path: '/window/endParameter', name: target.window.endParameter, location });
  }
  const paging: SentParameter[] = [];
  const pagination = target.pagination;
  if (pagination) {
    const location = pagination.location ?? 'query';
    if (pagination.parameter && pagination.type !== 'link') paging.push({ path: '/pagination/parameter', name: pagination.parameter, location });
    if (pagination.pageSizeParameter) paging.push({ path: '/pagination/pageSizeParameter', name: pagination.pageSizeParameter, location });
    if (pagination.limitParameter) paging.push({ path: '/pagination/limitParameter', name: pagination.limitParameter, location });
  }
  // SPEC 2.2: request.query never repeats a window parameter, even when the window goes in the body.
  const sent = [...windowParameters, ...fixed, ...paging];
  sent.forEach((parameter, index) => {
    const clash = sent.slice(0, index).find((other) => other.name === parameter.name
      && (other.location === parameter.location || (windowParameters.includes(other) && fixed.includes(parameter))));
    if (clash) problems.push({ path: parameter.path, message: `repeats "${parameter.name}", already sent as ${clash.path.slice(1).split('/').join('.')}` });
  });

  const credentials = installation.credentials as HttpDatasetCredentials;
  const installationNames = new Set(Object.keys(credentials.queryParameters ?? {}));
  if (installationNames.size) {
    const inUrl: SentParameter[] = [];
    try {
      for (const name of new Set(new URL(target.request.url).searchParams.keys())) inUrl.push({ path: '/request/url', name, location: 'query' });
    } catch {
      // An unparseable URL is already a problem of the base URL check.
    }
    for (const parameter of [...inUrl, ...sent]) {
      // One problem per path: a parameter the target already repeats is reported once.
      if (parameter.location === 'query' && installationNames.has(parameter.name) && !problems.some((p) => p.path === parameter.path)) {
        problems.push({ path: parameter.path, message: `sends the query parameter "${parameter.name}", which the installation's queryParameters already set; use another name or drop it from the target` });
      }
    }
  }
  return problems;
}
