import http2 from 'node:http2';
import { fromBinary } from '@bufbuild/protobuf';
import { StreamSubmitResponseSchema, type StreamSubmitResponse } from '@sortie/contracts';
import { varintLength, writeVarint } from '@sortie/contracts';

/**
 * A minimal gRPC client for the benchmarks: StreamSubmit over node:http2 with hand-encoded messages.
 * Encoding 8,000 points with protobuf-es costs the client ~5 ms per batch, CPU the 2-core machine
 * would otherwise give the server and Postgres; writing the few fields of a double point by hand costs
 * a tenth of that. The encoding is checked against protobuf-es in the benchmark before it runs.
 */

/** One row of the benchmark: a timestamp (µs) and one double per channel "0".."N-1". */
export interface BenchRows {
  timesUs: Float64Array;
  values: Float64Array[];
}

/** Encoded length of a Timestamp{seconds, nanos} payload. */
export function timestampLength(seconds: number, nanos: number): number {
  return 1 + varintLength(seconds) + (nanos ? 1 + varintLength(nanos) : 0);
}

/**
 * The buffer of a gRPC-framed StreamSubmitRequest{batch} whose PointBatch is `batchLen` bytes, with
 * the gRPC prefix and the batch field's tag and length written; `pos` is where the points go.
 */
export function allocBatchFrame(batchLen: number): { buf: Buffer; pos: number } {
  const messageLen = 1 + varintLength(batchLen) + batchLen;
  const buf = Buffer.allocUnsafe(5 + messageLen);
  buf[0] = 0;
  buf.writeUInt32BE(messageLen, 1);
  let pos = 5;
  buf[pos++] = 0x1a; // StreamSubmitRequest.batch = 3, LEN
  pos = writeVarint(buf, pos, batchLen);
  return { buf, pos };
}

/** Writes TelemetryPoint.timestamp, whose payload is `tsLength` = timestampLength(seconds, nanos); returns the new position. */
export function writeTimestampField(buf: Buffer, pos: number, tsLength: number, seconds: number, nanos: number): number {
  buf[pos++] = 0x0a; // TelemetryPoint.timestamp = 1
  pos = writeVarint(buf, pos, tsLength);
  buf[pos++] = 0x08; // Timestamp.seconds = 1
  pos = writeVarint(buf, pos, seconds);
  if (nanos) {
    buf[pos++] = 0x10; // Timestamp.nanos = 2
    pos = writeVarint(buf, pos, nanos);
  }
  return pos;
}

/** The frame an encoder filled, once it is checked to end exactly where its lengths said. */
export function filledFrame(buf: Buffer, pos: number): Buffer {
  if (pos !== buf.length) throw new Error(`encoder length mismatch: ${pos} vs ${buf.length}`);
  return buf;
}

/** Encoded length of a TelemetryPoint{timestamp, channel_id, double} payload. */
function pointLength(tsLength: number, idLength: number): number {
  return 1 + varintLength(tsLength) + tsLength + 2 + idLength + 9;
}

/** A gRPC-framed StreamSubmitRequest{batch} holding every cell of `rows`. */
export function encodeBatchFrame(rows: BenchRows): Buffer {
  let batchLen = 0;
  const n = rows.timesUs.length;
  const channels = rows.values.length;
  const ids = Array.from({ length: channels }, (_, c) => String(c));
  for (let r = 0; r < n; r++) {
    const us = rows.timesUs[r]!;
    const seconds = Math.floor(us / 1e6);
    const ts = timestampLength(seconds, (us - seconds * 1e6) * 1000);
    for (let c = 0; c < channels; c++) {
      const point = pointLength(ts, ids[c]!.length);
      batchLen += 1 + varintLength(point) + point;
    }
  }
  const frame = allocBatchFrame(batchLen);
  const buf = frame.buf;
  let pos = frame.pos;
  for (let r = 0; r < n; r++) {
    const us = rows.timesUs[r]!;
    const seconds = Math.floor(us / 1e6);
    const nanos = (us - seconds * 1e6) * 1000;
    const ts = timestampLength(seconds, nanos);
    for (let c = 0; c < channels; c++) {
      const id = ids[c]!;
      buf[pos++] = 0x0a; // PointBatch.points = 1
      pos = writeVarint(buf, pos, pointLength(ts, id.length));
      pos = writeTimestampField(buf, pos, ts, seconds, nanos);
      buf[pos++] = 0x12; // TelemetryPoint.channel_id = 2
      buf[pos++] = id.length;
      pos += buf.write(id, pos, 'latin1');
      buf[pos++] = 0x21; // TelemetryPoint.double = 4, I64
      buf.writeDoubleLE(rows.values[c]![r]!, pos);
      pos += 8;
    }
  }
  return filledFrame(buf, pos);
}

/** A message with the gRPC length prefix (uncompressed). */
export function grpcFrame(message: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** A gRPC-framed StreamSubmitRequest{header}; `format` is left out when empty (the wide format). */
export function encodeHeaderFrame(experimentId: string, datasetId: string, format = ''): Buffer {
  const field = (tag: number, s: string) => Buffer.concat([Buffer.from([tag, Buffer.byteLength(s)]), Buffer.from(s)]);
  const header = Buffer.concat([field(0x0a, experimentId), field(0x12, datasetId), ...(format ? [field(0x1a, format)] : [])]);
  return grpcFrame(Buffer.concat([Buffer.from([0x0a, header.length]), header]));
}

/** An open StreamSubmit call. */
export interface SubmitStream {
  /** Resolves once the frame is handed to HTTP/2 within its flow-control window (backpressure). */
  write(frame: Buffer): Promise<void>;
  /** Half-close and wait for the response. */
  finish(): Promise<StreamSubmitResponse>;
}

export function openStreamSubmit(session: http2.ClientHttp2Session, apiKey: string): SubmitStream {
  const stream = session.request({
    ':method': 'POST',
    ':path': '/sortie.telemetry.v1.TelemetryService/StreamSubmit',
    'content-type': 'application/grpc+proto',
    te: 'trailers',
    'x-api-key': apiKey,
  });
  const chunks: Buffer[] = [];
  let trailers: http2.IncomingHttpHeaders | undefined;
  let headers: http2.IncomingHttpHeaders | undefined;
  stream.on('response', (h) => (headers = h));
  stream.on('trailers', (t) => (trailers = t));
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  return {
    write: (frame) =>
      new Promise<void>((resolve, reject) => {
        if (stream.write(frame)) return resolve();
        const done = (error?: Error) => {
          stream.off('drain', done);
          stream.off('error', done);
          if (error) reject(error);
          else resolve();
        };
        stream.on('drain', done);
        stream.on('error', done);
      }),
    finish: async () => {
      stream.end();
      await ended;
      const status = trailers?.['grpc-status'] ?? headers?.['grpc-status'];
      if (status !== '0') {
        throw new Error(`StreamSubmit failed: grpc-status ${status} ${decodeURIComponent(String(trailers?.['grpc-message'] ?? headers?.['grpc-message'] ?? ''))}`);
      }
      const body = Buffer.concat(chunks);
      return fromBinary(StreamSubmitResponseSchema, body.subarray(5, 5 + body.readUInt32BE(1)));
    },
  };
}
