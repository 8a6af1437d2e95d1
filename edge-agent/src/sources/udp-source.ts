// UDP listener (SITL, mavlink-router, a companion computer forwarding the link). It only binds and
// receives: it never sends, not even the GCS heartbeat some routers wait for before they stream, so
// point the router at the agent (an outbound endpoint) rather than expecting the agent to call it.
// Each datagram is a chunk tagged with its sender, and the pipeline frames senders separately.
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { Clock } from '../core/clock.ts';
import { LiveSource } from './live-source.ts';

export interface UdpSourceOptions {
  readonly host: string;
  /** 0 picks a free port (tests); see address() after open(). */
  readonly port: number;
  readonly clock?: Clock;
  readonly maxQueuedBytes?: number;
  /** Kernel receive buffer asked for, so a burst is not dropped before Node reads it. Default 4 MiB. */
  readonly receiveBufferBytes?: number;
}

export class UdpSource extends LiveSource {
  override readonly kind = 'udp' as const;
  override readonly description: string;
  readonly #opts: UdpSourceOptions;
  #socket: Socket | null = null;
  #state = 'not started';
  readonly #peers = new Set<string>();

  constructor(options: UdpSourceOptions) {
    super(options);
    this.#opts = options;
    this.description = `udp listen ${formatHostPort(options.host, options.port)}`;
  }

  /** Binds; fails here when the address is in use or not local. */
  async open(): Promise<void> {
    const socket = createSocket({ type: isIPv6(this.#opts.host) ? 'udp6' : 'udp4' });
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(this.#opts.port, this.#opts.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    try {
      socket.setRecvBufferSize(this.#opts.receiveBufferBytes ?? 4 * 1024 * 1024);
    } catch {
      // Capped by net.core.rmem_max: the default buffer still works, bursts may drop sooner.
    }
    socket.on('message', (msg, rinfo) => {
      const origin = formatHostPort(rinfo.address, rinfo.port);
      if (this.#peers.size < 1024) this.#peers.add(origin);
      this.receive(msg, origin);
    });
    socket.on('error', (error) => {
      this.#state = `error: ${error.message}`;
      this.endChunks(error);
    });
    this.#socket = socket;
    const { address, port } = socket.address();
    this.#state = `listening on ${formatHostPort(address, port)}`;
  }

  /** The bound address (the real port when 0 was asked for). */
  address(): { address: string; port: number } {
    if (!this.#socket) throw new Error('UdpSource is not open');
    const { address, port } = this.#socket.address();
    return { address, port };
  }

  /** Senders heard so far (at most 1024 remembered). */
  peers(): string[] {
    return [...this.#peers];
  }

  override state(): string {
    return this.#peers.size > 0 ? `${this.#state}, ${this.#peers.size} sender(s)` : this.#state;
  }

  override async close(): Promise<void> {
    const socket = this.#socket;
    this.#socket = null;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
    this.#state = 'closed';
    this.endChunks();
  }
}

function formatHostPort(host: string, port: number): string {
  return isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}
