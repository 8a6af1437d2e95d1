// One narrow dataset per (sortie × system id), named `<sortie>-sys<id>`, registered over HTTP the
// first time the system id is needed. Registration is idempotent on the name, so this is only a
// cache: the ids are kept in `<spool-dir>/uplink-datasets.json` so that a restarted agent streams at
// once, even while the HTTP API is unreachable and gRPC is not. Entries are keyed by cloud URL,
// experiment and dataset name, so pointing the same spool at another cloud or experiment registers
// afresh.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomically } from '../fs/write-file-atomically.ts';
import type { CloudApi } from './cloud-api.ts';

export const DATASETS_FILE = 'uplink-datasets.json';
const FORMAT = 'sortie-uplink-datasets';
const VERSION = 1;

export interface DatasetKey {
  readonly cloudUrl: string;
  readonly experimentId: string;
}

interface CacheFile {
  format: typeof FORMAT;
  version: typeof VERSION;
  /** `${cloudUrl} ${experimentId} ${datasetName}` → dataset id. */
  datasets: Record<string, string>;
}

export function datasetNameFor(sortie: string, sysid: number): string {
  return `${sortie}-sys${sysid}`;
}

export class DatasetRegistry {
  readonly #api: CloudApi;
  readonly #path: string;
  readonly #key: DatasetKey;
  readonly #sortie: string;
  readonly #cache: Record<string, string>;
  readonly #inFlight = new Map<number, Promise<string>>();
  #writes: Promise<void> = Promise.resolve();

  private constructor(api: CloudApi, path: string, key: DatasetKey, sortie: string, cache: Record<string, string>) {
    this.#api = api;
    this.#path = path;
    this.#key = key;
    this.#sortie = sortie;
    this.#cache = cache;
  }

  /** Loads the cache file in `dir` (a missing or unreadable one is an empty cache). */
  static async open(options: { api: CloudApi; dir: string; key: DatasetKey; sortie: string }): Promise<DatasetRegistry> {
    const path = join(options.dir, DATASETS_FILE);
    let cache: Record<string, string> = {};
    try {
      const parsed = JSON.parse(await readFile(path, 'utf8')) as Partial<CacheFile>;
      if (parsed.format === FORMAT && parsed.version === VERSION && parsed.datasets && typeof parsed.datasets === 'object') {
        cache = Object.fromEntries(Object.entries(parsed.datasets).filter(([, v]) => typeof v === 'string'));
      }
    } catch {
      // none yet, or torn: registering again is harmless
    }
    return new DatasetRegistry(options.api, path, options.key, options.sortie, cache);
  }

  datasetName(sysid: number): string {
    return datasetNameFor(this.#sortie, sysid);
  }

  /** The id known without asking the cloud, if any. */
  cached(sysid: number): string | undefined {
    return this.#cache[this.#entry(sysid)];
  }

  /** The dataset of `sysid`, registering it if this spool has not yet. */
  datasetId(sysid: number, signal?: AbortSignal): Promise<string> {
    const known = this.cached(sysid);
    if (known) return Promise.resolve(known);
    let pending = this.#inFlight.get(sysid);
    if (!pending) {
      pending = (async () => {
        const id = await this.#api.registerNarrowDataset(this.datasetName(sysid), signal);
        this.#cache[this.#entry(sysid)] = id;
        // Only a cache: a disk that refuses it costs a registration call on the next start.
        await this.#persist().catch(() => {});
        return id;
      })();
      this.#inFlight.set(sysid, pending);
      void pending.finally(() => this.#inFlight.delete(sysid)).catch(() => {});
    }
    return pending;
  }

  /** The cloud no longer knows the cached id (NOT_FOUND): register again next time. */
  async forget(sysid: number): Promise<void> {
    if (!(this.#entry(sysid) in this.#cache)) return;
    delete this.#cache[this.#entry(sysid)];
    await this.#persist().catch(() => {});
  }

  #entry(sysid: number): string {
    return `${this.#key.cloudUrl} ${this.#key.experimentId} ${this.datasetName(sysid)}`;
  }

  /** Temp file, fsync, rename, directory fsync; one write at a time. */
  #persist(): Promise<void> {
    const snapshot: CacheFile = { format: FORMAT, version: VERSION, datasets: { ...this.#cache } };
    const write = this.#writes.then(() => writeFileAtomically(this.#path, JSON.stringify(snapshot, null, 1) + '\n'));
    this.#writes = write.catch(() => {});
    return write;
  }
}

