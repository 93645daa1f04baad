import { pipelineDocumentSchema } from '../pipelines/document';
import { mcpMiddleware } from '../mcp/server';
import Koa from 'koa';
import { bodyParser } from '@koa/bodyparser';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../core/errors';
import { buildOpenApiDocument } from './openapi';
import { renderDocsPage } from './docs-page';
import { errorMiddleware } from './middleware/errors';
import { bodyShape } from './middleware/body-shape';
import { refuseCredentialsInUrl, requestContext } from './middleware/request-context';
import { defineRoute, AppDependencies, RouteSpec } from './route-spec';
import { buildRouter, methodNotAllowed } from './router';
import { apiRoutes } from './routes';
import { listCapabilities } from '../plugins';

const version = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;

function documentationRoutes(routes: RouteSpec[]): RouteSpec[] {
  let document: Record<string, unknown> | undefined;
  // Capability contracts are published beside the routes: an endpoint's target follows one of them.
  const capabilitySchemas = () =>
    Object.fromEntries(
      listCapabilities().flatMap(({ definition }) => [
        [`Target.${definition.name}`, { ...definition.targetSchema, description: `Endpoint target for ${definition.name} ${definition.version}. ${definition.description}` }],
      ]),
    );
  const openApi = () => (document ??= buildOpenApiDocument(routes, { version, componentSchemas: { ...capabilitySchemas(), PipelineDocument: pipelineDocumentSchema } }));
  return [
    defineRoute({
      method: 'get',
      path: '/api/v1/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This API as OpenAPI 3.1',
      tag: 'Documentation',
      auth: { public: true, reason: 'API description' },
      internal: true,
      responses: { 200: { description: 'OpenAPI document' } },
      async handler() {
        return { body: openApi() };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/docs',
      operationId: 'getDocsPage',
      summary: 'Human-readable API reference',
      tag: 'Documentation',
      auth: { public: true, reason: 'API description' },
      internal: true,
      responses: { 200: { description: 'HTML page' } },
      async handler() {
        return { body: renderDocsPage(openApi()), contentType: 'text/html; charset=utf-8' };
      },
    }),
  ];
}

export function allRoutes(): RouteSpec[] {
  return [...apiRoutes, ...documentationRoutes(apiRoutes)];
}

export function createApp(deps: AppDependencies): Koa {
  const app = new Koa();
  app.proxy = process.env.WEFT_TRUST_PROXY === 'true';
  // Errors are answered by errorMiddleware; Koa's default handler would log them again, unredacted.
  app.silent = true;
  const router = buildRouter(allRoutes(), deps);
  app.use(requestContext());
  app.use(errorMiddleware());
  app.use(refuseCredentialsInUrl());
  app.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: '1mb',
      encoding: 'utf-8',
      onError(error) {
        const status = (error as { status?: number }).status;
        if (status === 413) throw new PayloadTooLargeError('payload_too_large', 'The request body is larger than 1 MB.');
        if (status === 415) throw new UnsupportedMediaTypeError('unsupported_media_type', 'The request body must be UTF-8 JSON.');
        throw new BadRequestError('malformed_json', 'The request body is not valid JSON.');
      },
    }),
  );
  app.use(bodyShape());
  app.use(mcpMiddleware(deps));
  app.use(methodNotAllowed());
  app.use(router.routes());
  return app;
}
