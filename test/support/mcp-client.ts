import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env } from './environment';

// The MCP SDK's own client against the test API's workspace connection, for tests that compare a
// tool's refusal with the HTTP route's.

export async function connectMcp(key: string, name = 'weft-test'): Promise<Client> {
  return (await connectWatched(key, { name })).client;
}

/**
 * A connection whose standalone SSE stream can be awaited: after initialize the SDK client opens
 * it with a GET that it does not await, and that GET is a request of the key like any other. A
 * test that counts the key's requests waits for it first, or it lands at a random point. (The
 * GET's response comes only after the request is counted.)
 */
export async function connectWatched(key: string, { path = '/mcp', baseUrl = env().baseUrl, name = 'weft-test' } = {}): Promise<{ client: Client; streamOpened: Promise<void> }> {
  let opened!: () => void;
  const streamOpened = new Promise<void>((resolve) => (opened = resolve));
  const watchedFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if ((init?.method ?? 'GET').toUpperCase() === 'GET') opened();
    return response;
  };
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}${path}`), { fetch: watchedFetch, requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return { client, streamOpened };
}

/** The tool's refusal code (an isError result), or undefined when it was not refused. A protocol error (invalid arguments) rejects. */
export async function toolRefusal(key: string, name: string, args: Record<string, unknown>): Promise<string | undefined> {
  const client = await connectMcp(key);
  try {
    const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: { code?: string } };
    return result.isError ? result.structuredContent?.code : undefined;
  } finally {
    await client.close();
  }
}
