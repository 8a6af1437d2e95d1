import { createHash } from 'node:crypto';
import { open, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceError } from '../platform/errors.ts';

/** An uploaded file waiting on disk to be imported, with what was learnt while it arrived. */
export interface UploadedFile {
  path: string;
  bytes: number;
  sha256: Buffer;
  /** The file's first bytes (up to HEAD_BYTES), for format detection. */
  head: Uint8Array;
  /** Delete the file (and its directory). */
  remove(): Promise<void>;
}

export const HEAD_BYTES = 64;

/**
 * Write a request body to a new file in `dir` as it arrives, hashing it on the way: the body is never
 * whole in memory (a chunk at a time, the stream's backpressure respected by awaiting each write). More
 * than `maxBytes` stops the upload with payload_too_large and deletes what was written.
 * `onBytes` reports progress.
 */
export async function receiveUpload(
  body: ReadableStream<Uint8Array> | null,
  options: { dir: string | undefined; maxBytes: number; onBytes?: (bytes: number) => void },
): Promise<UploadedFile> {
  if (!body) throw new ServiceError('invalid_request', 'the request has no body: send the log file itself as the body (Content-Type application/octet-stream)');
  const folder = await mkdtemp(join(options.dir ?? tmpdir(), 'sortie-import-'));
  const path = join(folder, 'upload');
  const remove = () => rm(folder, { recursive: true, force: true });
  const hash = createHash('sha256');
  const head = new Uint8Array(HEAD_BYTES);
  let headLength = 0;
  let bytes = 0;
  const file = await open(path, 'w');
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength;
      if (bytes > options.maxBytes) {
        throw new ServiceError('payload_too_large', `the file is larger than this server's import limit of ${options.maxBytes} bytes (SORTIE_IMPORT_MAX_BYTES)`);
      }
      if (headLength < HEAD_BYTES) {
        const take = Math.min(HEAD_BYTES - headLength, chunk.byteLength);
        head.set(chunk.subarray(0, take), headLength);
        headLength += take;
      }
      hash.update(chunk);
      await file.write(chunk);
      options.onBytes?.(bytes);
    }
    await file.close();
  } catch (error) {
    await file.close().catch(() => {});
    await remove();
    throw error;
  }
  return { path, bytes, sha256: hash.digest(), head: head.slice(0, headLength), remove };
}
