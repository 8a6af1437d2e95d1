/**
 * An example Sortie webhook receiver, the shape the spec recommends: verify → persist durably → answer
 * 2xx at once → act at most once per command.id → acknowledge through ack.url (nack when refusing).
 * A verified `ping` (a test event) is answered 200 and nothing else: no journal entry, no ack.
 *
 *   SORTIE_WEBHOOK_SECRETS=whsec_… node contracts/examples/webhook-receiver.ts
 *
 * Environment: SORTIE_WEBHOOK_SECRETS (comma-separated: both during a rotation overlap), PORT (8443),
 * RECEIVER_JOURNAL (./receiver-journal.jsonl), RECEIVER_TLS_CERT / RECEIVER_TLS_KEY (PEM files; Sortie
 * only delivers to https, so without them put a TLS proxy in front).
 *
 * The journal is an append-only JSON-lines file, fsynced before the 2xx goes out, so a delivery the
 * receiver accepted survives a crash. Each command moves received → acting → done. At most once: a
 * command found `acting` after a restart is never acted again (whether it happened is unknown); it is
 * left to reach `timed_out` in Sortie, which is what "unknown" should look like there.
 */
import { open, readFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pathToFileURL } from 'node:url';
import { verifyWebhook, WebhookVerificationError, type CommandDispatchedBody } from '../src/index.ts';

export interface Decision {
  state: 'acked' | 'nacked';
  detail: string;
  /** When the vehicle carried the command out, if it says. */
  vehicleTime?: string;
}

export interface ReceiverOptions {
  secrets: string[];
  journalPath: string;
  /** Do the thing (or refuse it). Called at most once per command.id, ever, for this journal. */
  act(command: CommandDispatchedBody['command']): Promise<Decision>;
  fetch?: typeof fetch;
  onError?(error: unknown): void;
}

type JournalEntry =
  | { type: 'received'; body: CommandDispatchedBody }
  | { type: 'acting'; commandId: string }
  | { type: 'done'; commandId: string; outcome: string };

export interface WebhookReceiver {
  /** Feed one HTTP request (raw body bytes, headers); returns what to answer. */
  handle(rawBody: Uint8Array, headers: Record<string, string | string[] | undefined>): Promise<{ status: number; body: string }>;
  /** Resolves when every accepted command has been handled. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export async function createWebhookReceiver(options: ReceiverOptions): Promise<WebhookReceiver> {
  const doFetch = options.fetch ?? fetch;
  const state = new Map<string, 'received' | 'acting' | 'done'>();
  const pending: CommandDispatchedBody[] = [];
  // Replay the journal: the state of every command this receiver has ever accepted.
  const text = await readFile(options.journalPath, 'utf8').catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? '' : Promise.reject(e)));
  const bodies = new Map<string, CommandDispatchedBody>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let entry: JournalEntry;
    try {
      entry = JSON.parse(line) as JournalEntry;
    } catch {
      continue; // a torn last line from a crash mid-write: that delivery was never answered 2xx
    }
    if (entry.type === 'received') {
      state.set(entry.body.command.id, 'received');
      bodies.set(entry.body.command.id, entry.body);
    } else state.set(entry.commandId, entry.type);
  }
  for (const [id, s] of state) if (s === 'received') pending.push(bodies.get(id)!);

  const journal = await open(options.journalPath, 'a');
  let writing = Promise.resolve();
  const append = (entry: JournalEntry) => {
    // One writer at a time; each entry is on disk (fsync) before the caller goes on.
    writing = writing.then(async () => {
      await journal.write(`${JSON.stringify(entry)}\n`);
      await journal.datasync();
    });
    return writing;
  };

  let working: Promise<void> = Promise.resolve();
  const work = () => {
    working = working.then(async () => {
      while (pending.length > 0) {
        const body = pending.shift()!;
        try {
          await process(body);
        } catch (error) {
          options.onError?.(error);
        }
      }
    });
  };

  const process = async (body: CommandDispatchedBody) => {
    const id = body.command.id;
    if (Date.parse(body.ack.deadline) <= Date.now()) {
      await append({ type: 'done', commandId: id, outcome: 'deadline passed before acting' });
      state.set(id, 'done');
      return;
    }
    await append({ type: 'acting', commandId: id });
    state.set(id, 'acting');
    let decision: Decision;
    try {
      decision = await options.act(body.command);
    } catch (error) {
      decision = { state: 'nacked', detail: `receiver failed: ${(error as Error).message}` };
    }
    const response = await doFetch(body.ack.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${body.ack.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ commandId: id, ...decision }),
    });
    await append({ type: 'done', commandId: id, outcome: `${decision.state}; ack answered ${response.status}` });
    state.set(id, 'done');
  };

  if (pending.length > 0) work();

  return {
    async handle(rawBody, headers) {
      let body: CommandDispatchedBody;
      try {
        // Verify over the raw bytes, before parsing. A bad signature is a 4xx: Sortie will not retry it.
        body = (await verifyWebhook(rawBody, headers, options.secrets)).body as CommandDispatchedBody;
      } catch (error) {
        if (error instanceof WebhookVerificationError) return { status: 401, body: error.code };
        throw error;
      }
      // A `ping` (POST /api/webhooks/test, or the console's "send test event") proves URL, TLS and secret:
      // answer 2xx and act on nothing. It names no command and carries no ack token.
      if ((body as { eventType?: unknown }).eventType === 'ping') return { status: 200, body: 'pong' };
      if (body.eventType !== 'command.dispatched') return { status: 202, body: 'ignored event type' };
      // At-least-once delivery: the same command may arrive again; act on it only the first time.
      if (state.has(body.command.id)) return { status: 200, body: 'duplicate' };
      state.set(body.command.id, 'received');
      await append({ type: 'received', body });
      pending.push(body);
      work();
      return { status: 202, body: 'accepted' };
    },
    idle: async () => {
      await working;
    },
    async close() {
      await working;
      await writing;
      await journal.close();
    },
  };
}

async function readBody(req: IncomingMessage): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
}

/** Serve a receiver over HTTPS. */
export function serveReceiver(receiver: WebhookReceiver, tls: { cert: string; key: string }) {
  return createHttpsServer(tls, (req: IncomingMessage, res: ServerResponse) => {
    readBody(req)
      .then((raw) => receiver.handle(raw, req.headers))
      .then(({ status, body }) => res.writeHead(status, { 'content-type': 'text/plain' }).end(body))
      .catch(() => res.writeHead(500).end('receiver error'));
  });
}

// Run directly: a receiver that accepts every command (replace `act` with your vehicle's code).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const secrets = (process.env.SORTIE_WEBHOOK_SECRETS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (secrets.length === 0 || !process.env.RECEIVER_TLS_CERT || !process.env.RECEIVER_TLS_KEY) {
    console.error('set SORTIE_WEBHOOK_SECRETS, RECEIVER_TLS_CERT and RECEIVER_TLS_KEY');
    process.exit(2);
  }
  const receiver = await createWebhookReceiver({
    secrets,
    journalPath: process.env.RECEIVER_JOURNAL ?? './receiver-journal.jsonl',
    act: async (command) => {
      console.log(`acting on ${command.id}: ${command.commandText} ${JSON.stringify(command.args)}`);
      return { state: 'acked', detail: 'done by the example receiver' };
    },
    onError: (e) => console.error(e),
  });
  const port = Number(process.env.PORT ?? 8443);
  const tls = { cert: await readFile(process.env.RECEIVER_TLS_CERT, 'utf8'), key: await readFile(process.env.RECEIVER_TLS_KEY, 'utf8') };
  serveReceiver(receiver, tls).listen(port, () => console.log(`receiver listening on https://0.0.0.0:${port}`));
}
