/**
 * Importing a vehicle's log file (POST /api/imports/create). The file is the request's body, sent as it
 * is read: a log can be gigabytes, so it is never gathered in memory, here or on the server. With an
 * `onProgress` callback the client reports the upload itself (bytes handed to the connection as they go)
 * and asks the service for its import progress as NDJSON lines (`Accept: application/x-ndjson`).
 */
import { CreateImportResponseSchema, ERROR_STATUS, ErrorEnvelopeSchema, ImportProgressSchema, zodIssuesToDetails } from '@sortie/contracts';
import type { CreateImportResponse, ImportProgress } from '@sortie/contracts';
import type { z } from 'zod';
import { SortieApiError } from './errors.ts';
import { REQUEST_ID_HEADER, type CallOptions, type HttpTransport, type UploadBody } from './http.ts';
import type { InputOf } from './routes.ts';

export type { ImportProgress } from '@sortie/contracts';

const NDJSON = 'application/x-ndjson';

/**
 * The file to import: a Blob or File (a browser's file input; in Node, `fileFromPath` of
 * `@sortie/client/node`), or a stream of its bytes with its size when known (a Node Readable is an
 * async iterable of Buffers). A File's name is the import's `fileName` unless the query gives one.
 */
export type ImportSource = Blob | { stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>; size?: number };

export interface ImportFileOptions extends Omit<CallOptions, 'ackToken'> {
  /**
   * Told how the import goes: phase `upload` with the bytes sent so far (as the body is read), then the
   * service's own lines: `upload` once the whole file has arrived, and `import` with the bytes read and
   * messages stored, about four times a second. `bytes` never goes down within a phase.
   */
  onProgress?: (progress: ImportProgress) => void;
}

/**
 * Browsers send a streamed request body only over HTTP/2 (Chrome) or not at all (Firefox, Safari), and
 * the service speaks HTTP/1.1: there a Blob is handed to fetch whole (it reads the file from disk
 * itself), and upload progress comes only from the service's line once the file has arrived.
 */
function canStreamRequests(): boolean {
  return !('document' in globalThis) && !('WorkerGlobalScope' in globalThis);
}

/** A source as an async iterable's bytes in a ReadableStream, ended (and the iterator closed) when the request ends. */
function readableOf(source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  if (source instanceof ReadableStream) return source;
  const iterator = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await iterator.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    async cancel(reason) {
      await iterator.return?.(reason);
    },
  });
}

/** The stream, telling `onBytes` the running total of bytes as fetch pulls each chunk to send it. */
function counted(stream: ReadableStream<Uint8Array>, onBytes: (bytes: number) => void): ReadableStream<Uint8Array> {
  let bytes = 0;
  return stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        bytes += chunk.byteLength;
        controller.enqueue(chunk);
        onBytes(bytes);
      },
    }),
  );
}

function badAnswer(message: string, status: number, requestId: string | undefined, error?: z.ZodError): SortieApiError {
  const details = error ? zodIssuesToDetails(error) : [];
  const where = details[0] ? ` (${details[0].field || 'body'}: ${details[0].message})` : '';
  return new SortieApiError({ status, code: 'bad_response', message: `createImport: ${message}${where}`, details, requestId });
}

function importAnswer(value: unknown, status: number, requestId: string | undefined): CreateImportResponse {
  const parsed = CreateImportResponseSchema.safeParse(value);
  if (!parsed.success) throw badAnswer('the answer does not match the contract', status, requestId, parsed.error);
  return parsed.data;
}

/** The lines of an NDJSON body as they arrive, each parsed as JSON. */
async function* ndjsonLines(body: ReadableStream<Uint8Array>, status: number, requestId: string | undefined): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let pending = '';
  const parse = (line: string) => {
    try {
      return JSON.parse(line) as unknown;
    } catch {
      throw badAnswer(`a progress line is not JSON: ${line.slice(0, 200)}`, status, requestId);
    }
  };
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    pending += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, end).trim();
      pending = pending.slice(end + 1);
      if (line) yield parse(line);
    }
  }
  pending += decoder.decode();
  if (pending.trim()) yield parse(pending.trim());
}

/**
 * Follow an import's NDJSON answer: progress lines to `onProgress`, then its last line, the import (the
 * answer) or the error envelope (thrown as a SortieApiError with the status its code stands for: the
 * HTTP status was already 200 when the import failed).
 */
async function followProgress(response: Response, onProgress: (progress: ImportProgress) => void): Promise<CreateImportResponse> {
  const requestId = response.headers.get(REQUEST_ID_HEADER) ?? undefined;
  if (!response.body) throw badAnswer('the answer has no body', response.status, requestId);
  for await (const line of ndjsonLines(response.body, response.status, requestId)) {
    if (line && typeof line === 'object' && 'import' in line) return importAnswer(line.import, response.status, requestId);
    const envelope = ErrorEnvelopeSchema.safeParse(line);
    if (envelope.success) {
      const { code, message, details, request_id } = envelope.data.error;
      throw new SortieApiError({ status: ERROR_STATUS[code], code, message, details, requestId: request_id || requestId });
    }
    const progress = ImportProgressSchema.safeParse(line);
    if (!progress.success) throw badAnswer('a progress line does not match the contract', response.status, requestId, progress.error);
    onProgress(progress.data);
  }
  throw badAnswer('the answer ended before the import did (the connection was cut, or the service stopped)', response.status, requestId);
}

/**
 * Send `source` to be imported with `query` (the experiment, and optionally the new dataset's name, the
 * file's name, its format and, for a log without GPS time, its start). Answers the import (201 new, or
 * the earlier import of the same bytes with `duplicate: true`); failures are SortieApiErrors, as for
 * any call. No time-out of its own: a big log takes minutes; `options.signal` can end it.
 */
export async function importFile(
  http: HttpTransport,
  query: InputOf<'createImport'>,
  source: ImportSource,
  options: ImportFileOptions = {},
): Promise<CreateImportResponse> {
  const { onProgress, ...callOptions } = options;
  const fileName = query.fileName ?? (typeof (source as { name?: unknown }).name === 'string' ? (source as File).name : undefined);
  const fullQuery = { ...query, ...(fileName && { fileName }) };
  const size = source.size;
  const tell = (bytes: number) => onProgress?.({ phase: 'upload', bytes, totalBytes: size ?? null, messages: 0 });
  let body: UploadBody;
  if (source instanceof Blob && (!onProgress || !canStreamRequests())) {
    body = source;
  } else {
    const stream = readableOf(source instanceof Blob ? source.stream() : source.stream);
    body = { stream: onProgress ? counted(stream, tell) : stream, ...(size !== undefined && { size }) };
  }
  tell(0);
  const response = await http.upload('createImport', fullQuery, body, { ...callOptions, ...(onProgress && { accept: NDJSON }) });
  const requestId = response.headers.get(REQUEST_ID_HEADER) ?? undefined;
  if (onProgress && (response.headers.get('content-type') ?? '').includes(NDJSON)) return followProgress(response, onProgress);
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw badAnswer(`the answer is not JSON: ${text.slice(0, 200)}`, response.status, requestId);
  }
  return importAnswer(json, response.status, requestId);
}
