import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { connectTemporal, createTemporalClient } from '../../../core/temporal';
import { temporalConnectionOptions, temporalSettings } from '../../../core/temporal-config';
import { NativeConnection } from '@temporalio/worker';
import { startWorker } from '../../../worker';
import { certificateAuthority } from '../../support/certificates';
import { env } from '../../support/environment';

/**
 * Weft against a Temporal cluster secured with mTLS. The dev server speaks only plaintext, so the
 * test puts a TLS front on its own port before it, as a production cluster's frontend or a load
 * balancer would: a throwaway CA, a server certificate for "temporal.test" and a client
 * certificate, made by openssl; the front requires a client certificate signed by that CA.
 */

function makeCertificates(dir: string): Record<'ca' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey' | 'strangerCert' | 'strangerKey', string> {
  const ca = certificateAuthority(dir, 'ca', 'Weft test CA');
  const server = ca.issue('server', '/CN=temporal.test', 'subjectAltName=DNS:temporal.test\nextendedKeyUsage=serverAuth\n');
  const client = ca.issue('client', '/CN=weft-worker', 'extendedKeyUsage=clientAuth\n');
  // A client certificate from another CA: well-formed, but not one the cluster trusts.
  const stranger = certificateAuthority(dir, 'stranger-ca', 'Stranger CA').issue('stranger', '/CN=stranger', 'extendedKeyUsage=clientAuth\n');
  return {
    ca: ca.pem,
    serverCert: server.cert,
    serverKey: server.key,
    clientCert: client.cert,
    clientKey: client.key,
    strangerCert: stranger.cert,
    strangerKey: stranger.key,
  };
}

/** Terminates mTLS (HTTP/2 over TLS, as gRPC needs) and passes the bytes on to the plaintext dev server. */
async function startTlsFront(upstream: string, certs: ReturnType<typeof makeCertificates>): Promise<{ address: string; accepted: () => number; close(): Promise<void> }> {
  const [host, port] = [upstream.slice(0, upstream.lastIndexOf(':')), Number(upstream.slice(upstream.lastIndexOf(':') + 1))];
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const server = tls.createServer(
    {
      key: readFileSync(certs.serverKey),
      cert: readFileSync(certs.serverCert),
      ca: readFileSync(certs.ca),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (client) => {
      accepted++;
      const backend = net.connect({ host, port });
      for (const socket of [client, backend]) {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(backend).pipe(client);
      client.once('close', () => backend.destroy());
      backend.once('close', () => client.destroy());
    },
  );
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: frontPort } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${frontPort}`,
    accepted: () => accepted,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('A Temporal cluster secured with mTLS', function () {
  this.timeout(120_000);
  let dir: string;
  let certs: ReturnType<typeof makeCertificates>;
  let front: Awaited<ReturnType<typeof startTlsFront>>;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'weft-temporal-tls-'));
    certs = makeCertificates(dir);
    front = await startTlsFront(process.env.TEMPORAL_ADDRESS!, certs);
  });

  after(async () => {
    await front?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const secured = (overrides: Record<string, string> = {}) =>
    temporalConnectionOptions(front.address, {
      TEMPORAL_TLS_CA_PATH: certs.ca,
      TEMPORAL_TLS_CERT_PATH: certs.clientCert,
      TEMPORAL_TLS_KEY_PATH: certs.clientKey,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
      ...overrides,
    });

  it('runs a workflow with a client and a worker that connect through the TEMPORAL_TLS_* settings', async () => {
    const taskQueue = `tls-${randomUUID()}`;
    const worker = await startWorker({ db: env().db, encryptionKey: env().encryptionKey, temporalAddress: front.address, temporalConnection: secured(), namespace: temporalSettings().namespace, taskQueue });
    let connection: Connection | undefined;
    try {
      connection = await connectTemporal(secured());
      const handle = await createTemporalClient(connection).workflow.start('systemCheckWorkflow', { taskQueue, workflowId: `tls-check-${randomUUID()}` });
      const result = (await handle.result()) as { databaseTime: string };
      assert.ok(Date.parse(result.databaseTime), 'the worker behind mTLS ran the workflow and its database activity');
    } finally {
      await connection?.close();
      await worker.shutdown();
    }
    assert.ok(front.accepted() >= 2, 'client and worker both came through the TLS front');
  });

  it('cannot connect in plaintext, without a client certificate, with an untrusted one, or with the wrong server name', async () => {
    const attempts: Array<[string, ReturnType<typeof temporalConnectionOptions>]> = [
      ['plaintext', temporalConnectionOptions(front.address, {})],
      ['no client certificate', temporalConnectionOptions(front.address, { TEMPORAL_TLS_CA_PATH: certs.ca, TEMPORAL_TLS_SERVER_NAME: 'temporal.test' })],
      ['untrusted client certificate', secured({ TEMPORAL_TLS_CERT_PATH: certs.strangerCert, TEMPORAL_TLS_KEY_PATH: certs.strangerKey })],
      ['server name not on the certificate', secured({ TEMPORAL_TLS_SERVER_NAME: 'elsewhere.test' })],
      ['server CA not trusted', secured({ TEMPORAL_TLS_CA_PATH: '' })],
    ];
    // The attempts at once (each waits out its timeout alone).
    await Promise.all(attempts.map(async ([what, options]) => {
      // Connection.connect itself, with a short timeout: each failure would otherwise retry for 10 s.
      const failure = await Connection.connect({ ...options, connectTimeout: '2s' }).then(
        async (connection) => {
          // A lazy connection only fails on its first call.
          try {
            await connection.workflowService.getSystemInfo({});
            return null;
          } catch (error) {
            return error as Error;
          } finally {
            await connection.close();
          }
        },
        (error: Error) => error,
      );
      assert.ok(failure, `${what}: the connection should fail`);
    }));
  });

  it('sends TEMPORAL_API_KEY as a bearer token over TLS, from the client and from the worker', async () => {
    // A TLS gRPC endpoint that records each call's authorization header and refuses the call, as
    // a cluster does for a wrong key: both connections call it while connecting.
    const seen: Array<string | undefined> = [];
    const server = http2.createSecureServer({ key: readFileSync(certs.serverKey), cert: readFileSync(certs.serverCert) });
    const sessions = new Set<http2.ServerHttp2Session>();
    server.on('session', (session) => sessions.add(session));
    server.on('stream', (stream, headers) => {
      seen.push(headers.authorization as string | undefined);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '16', 'grpc-message': 'unknown key' }, { endStream: true });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const options = temporalConnectionOptions(address, { TEMPORAL_API_KEY: 'weft-test-key', TEMPORAL_TLS_CA_PATH: certs.ca, TEMPORAL_TLS_SERVER_NAME: 'temporal.test' });
    try {
      await assert.rejects(Connection.connect({ ...options, connectTimeout: '5s' }));
      const clientCalls = seen.length;
      assert.ok(clientCalls > 0, 'the client reached the TLS endpoint');
      await assert.rejects(NativeConnection.connect(options), /valid authentication credentials/);
      assert.ok(seen.length > clientCalls, 'the worker connection reached it too');
      assert.deepEqual([...new Set(seen)], ['Bearer weft-test-key']);
    } finally {
      // The clients keep their HTTP/2 sessions open; close waits for them.
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('refuses half a client certificate pair and unreadable files with a message that names the setting', () => {
    assert.throws(() => temporalConnectionOptions('x:1', { TEMPORAL_TLS_CERT_PATH: certs.clientCert }), /TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH .*set both or neither \(only the certificate is set\)/);
    assert.throws(() => temporalConnectionOptions('x:1', { TEMPORAL_TLS_KEY_PATH: certs.clientKey }), /only the key is set/);
    assert.throws(() => temporalConnectionOptions('x:1', { TEMPORAL_TLS_CA_PATH: path.join(dir, 'missing.pem') }), /TEMPORAL_TLS_CA_PATH names .*missing\.pem, which cannot be read: ENOENT/);
    assert.throws(() => temporalConnectionOptions('x:1', { TEMPORAL_TLS: 'maybe' }), /TEMPORAL_TLS must be true or false/);
    assert.throws(() => temporalConnectionOptions('x:1', { TEMPORAL_TLS: 'false', TEMPORAL_TLS_CA_PATH: certs.ca }), /contradicts/);
  });

  it('passes an API key, with TLS on by default as Temporal Cloud expects, and TEMPORAL_TLS=true alone trusts the system CAs', () => {
    assert.deepEqual(temporalConnectionOptions('x:1', { TEMPORAL_API_KEY: ' secret ' }), { address: 'x:1', apiKey: 'secret' });
    assert.deepEqual(temporalConnectionOptions('x:1', { TEMPORAL_TLS: 'true' }), { address: 'x:1', tls: true });
    assert.deepEqual(temporalConnectionOptions('x:1', {}), { address: 'x:1' });
    const options = secured();
    assert.equal(typeof options.tls, 'object');
    const tlsConfig = options.tls as { serverNameOverride?: string; clientCertPair?: { crt: Uint8Array }; serverRootCACertificate?: Uint8Array };
    assert.equal(tlsConfig.serverNameOverride, 'temporal.test');
    assert.deepEqual(Buffer.from(tlsConfig.clientCertPair!.crt), readFileSync(certs.clientCert));
    assert.deepEqual(Buffer.from(tlsConfig.serverRootCACertificate!), readFileSync(certs.ca));
  });
});
