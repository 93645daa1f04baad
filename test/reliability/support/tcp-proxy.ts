import net from 'node:net';

/**
 * A TCP proxy to `target` on a port of its own, whose link can be cut: cutting resets every open
 * connection and every new one until it is restored, as a network partition between one process
 * and a server would look to that process (the server itself stays up for everyone else).
 */
export class TcpProxy {
  private server?: net.Server;
  private readonly open = new Set<net.Socket>();
  private isCut = false;
  /** host:port to give the process whose link this proxy carries. */
  address = '';

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<this> {
    this.server = net.createServer((client) => this.carry(client));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.address = `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
    return this;
  }

  get cut(): boolean {
    return this.isCut;
  }

  /** Resets every connection and refuses new ones (each is reset as it arrives) until restore(). */
  cutLink(): void {
    this.isCut = true;
    for (const socket of this.open) socket.resetAndDestroy();
    this.open.clear();
  }

  restore(): void {
    this.isCut = false;
  }

  async close(): Promise<void> {
    this.cutLink();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private carry(client: net.Socket): void {
    if (this.isCut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(this.target);
    this.open.add(client);
    this.open.add(upstream);
    // Either side ending or failing ends both, as a broken connection would.
    const end = () => {
      this.open.delete(client);
      this.open.delete(upstream);
      if (!client.destroyed) client.resetAndDestroy();
      if (!upstream.destroyed) upstream.resetAndDestroy();
    };
    for (const socket of [client, upstream]) {
      socket.setNoDelay(true);
      socket.once('error', end);
      socket.once('close', end);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
