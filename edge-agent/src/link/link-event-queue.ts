// Link events waiting for the uplink to turn them into annotations (POST /api/datasets/events).
// They must survive a restart like the frames do, so they live in a small append-only JSON-lines file
// beside the spool segments (the spool directory's LOCK covers it):
//
//   {"v":1,"kind":"event","id":7,"key":"LINK_LOSS:1:1533737161905000","at":"2026-…","event":{…}}
//   {"v":1,"kind":"ack","id":7}
//   {"v":1,"kind":"base","nextId":8}     first line after compaction
//
// Each line is appended and fdatasync'ed on its own: at most two events per outage, so an fsync each
// is nothing, and a crash loses no event the detector produced. A torn last line (crash mid-write) is
// cut off at open. Once everything is acknowledged the file is rewritten to its base line.
//
// Why not records in the spool: the spool's acknowledged offset is one cumulative seq for the frame
// stream, and annotations go to another endpoint at another pace; a separate queue keeps the uplink's
// two jobs independent.
import { EventEmitter } from 'node:events';
import { open, readFile, truncate } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { writeFileAtomically } from '../fs/write-file-atomically.ts';
import type { LinkEvent } from './link-loss-detector.ts';

export const LINK_EVENTS_FILE = 'link-events.jsonl';
const FORMAT_VERSION = 1;
const COMPACT_BYTES = 64 * 1024;

export interface QueuedLinkEvent {
  /** Local id, monotonic per spool directory: what ack() takes. */
  readonly id: number;
  /**
   * Stable across redelivery and across replays of the same recording (type, system id and the time
   * of the last frame before the silence), usable as an idempotency key for the annotation.
   */
  readonly key: string;
  /** Wall-clock time the agent queued it (a replayed event's own times are the recording's). */
  readonly at: string;
  readonly event: LinkEvent;
}

type QueueEvents = { queued: [QueuedLinkEvent] };

export function linkEventKey(event: LinkEvent): string {
  return `${event.type}:${event.sysid}:${event.lastFrameUs}`;
}

export class LinkEventQueue extends EventEmitter<QueueEvents> {
  readonly path: string;
  readonly #fh: FileHandle;
  readonly #pending = new Map<number, QueuedLinkEvent>();
  #nextId: number;
  #total = 0;
  #writes: Promise<void> = Promise.resolve();
  #closed = false;

  private constructor(path: string, fh: FileHandle, nextId: number, pending: QueuedLinkEvent[]) {
    super();
    this.path = path;
    this.#fh = fh;
    this.#nextId = nextId;
    for (const e of pending) this.#pending.set(e.id, e);
  }

  /** Opens (creating) the queue file at `path`, recovering from a torn last line. */
  static async open(path: string): Promise<LinkEventQueue> {
    let text = '';
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    const whole = text.lastIndexOf('\n') + 1;
    if (whole < Buffer.byteLength(text)) {
      // Bytes after the last newline are a line whose write never finished.
      await truncate(path, Buffer.byteLength(text.slice(0, whole)));
      text = text.slice(0, whole);
    }
    const { nextId, pending } = replay(text);
    if (pending.length === 0 && text.length > COMPACT_BYTES) await rewrite(path, nextId);
    const fh = await open(path, 'a');
    return new LinkEventQueue(path, fh, nextId, pending);
  }

  /** Queues an event durably; resolves once it is on disk. */
  async push(event: LinkEvent): Promise<QueuedLinkEvent> {
    const queued: QueuedLinkEvent = { id: this.#nextId++, key: linkEventKey(event), at: new Date().toISOString(), event };
    this.#total++;
    await this.#append({ v: FORMAT_VERSION, kind: 'event', id: queued.id, key: queued.key, at: queued.at, event });
    this.#pending.set(queued.id, queued);
    this.emit('queued', queued);
    return queued;
  }

  /** Events not yet acknowledged, oldest first. */
  pending(): QueuedLinkEvent[] {
    return [...this.#pending.values()];
  }

  /** The uplink has delivered event `id`; durable when the promise resolves. */
  async ack(id: number): Promise<void> {
    if (!this.#pending.has(id)) return;
    await this.#append({ v: FORMAT_VERSION, kind: 'ack', id });
    this.#pending.delete(id);
  }

  stats(): { queued: number; pending: number } {
    return { queued: this.#total, pending: this.#pending.size };
  }

  /** Waits for every write in flight, then closes the file. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writes.catch(() => {});
    await this.#fh.close();
  }

  #append(line: object): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('link event queue is closed'));
    const write = this.#writes.then(async () => {
      await this.#fh.appendFile(JSON.stringify(line) + '\n');
      await this.#fh.datasync();
    });
    this.#writes = write.catch(() => {});
    return write;
  }
}

function replay(text: string): { nextId: number; pending: QueuedLinkEvent[] } {
  let nextId = 1;
  const pending = new Map<number, QueuedLinkEvent>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // damaged in place; the lines around it still count
    }
    if (rec['v'] !== FORMAT_VERSION) throw new Error(`link event queue line has unknown version: ${line.slice(0, 80)}`);
    const id = rec['id'];
    if (rec['kind'] === 'base' && typeof rec['nextId'] === 'number') {
      nextId = Math.max(nextId, rec['nextId']);
    } else if (rec['kind'] === 'event' && typeof id === 'number') {
      pending.set(id, { id, key: String(rec['key']), at: String(rec['at']), event: rec['event'] as LinkEvent });
      nextId = Math.max(nextId, id + 1);
    } else if (rec['kind'] === 'ack' && typeof id === 'number') {
      pending.delete(id);
    }
  }
  return { nextId, pending: [...pending.values()].sort((a, b) => a.id - b.id) };
}

/** Replaces the file with its base line. */
function rewrite(path: string, nextId: number): Promise<void> {
  return writeFileAtomically(path, JSON.stringify({ v: FORMAT_VERSION, kind: 'base', nextId }) + '\n');
}
