import type { DescField, DescMessage, DescService } from '@bufbuild/protobuf';
import { ScalarType } from '@bufbuild/protobuf';
import { API_KEY_HEADER, file_sortie_telemetry_v1_telemetry, TelemetryService, type ErrorCode } from '@sortie/contracts';
import { Code } from '@connectrpc/connect';
import { codeToHttpStatus, codeToString } from '@connectrpc/connect/protocol-connect';
import { ERROR_CODE_TRAILER, GRPC_CODE, GRPC_LIMITS, RPC_PREFIX, RPC_SCOPES } from '../grpc/catalogue.ts';
import { esc, guidePage, inline } from './html.ts';

/** What each RPC does, in a sentence (the proto's comments, which the generated descriptor does not carry). */
const METHOD_SUMMARY: Record<string, string> = {
  submit: 'One batch of points to one dataset, written all or nothing. Wide datasets address channels by index (`channelId` "0" for `ch_0`).',
  streamSubmit:
    'A session header (dataset and `format`: empty for TelemetryPoint values, `mavlink-raw-v1` for raw MAVLink frames), then points or batches; ' +
    'the answer counts what the whole stream wrote. gRPC port only.',
  query:
    'Per channel, at most `maxPointsPerChannel` samples over `[from, to)` keeping the chart’s shape (M4 then LTTB), and the exact raw count. ' +
    'When the budget holds every sample in range, every raw sample is returned. MAVLink datasets are addressed by signal name and answer on aligned time.',
};

/** An example of the Connect JSON form, run as written by the docs test (placeholders in angle brackets). */
export interface ConnectExample {
  method: 'Submit' | 'Query';
  request: Record<string, unknown>;
  response: Record<string, unknown>;
}

/**
 * The walk-through of the page: a wide dataset with one double channel (`ch_0`), two points submitted,
 * then read back. The responses are what the service answers (the docs test compares them exactly):
 * zero counters and empty lists are written out, 64-bit integers are strings, times RFC 3339.
 */
export const CONNECT_EXAMPLES: readonly ConnectExample[] = [
  {
    method: 'Submit',
    request: {
      experimentId: '<experimentId>',
      datasetId: '<datasetId>',
      points: [
        { channelId: '0', timestamp: '2026-04-01T12:00:00Z', double: 12.5 },
        { channelId: '0', timestamp: '2026-04-01T12:00:01Z', double: 13 },
      ],
    },
    response: { accepted: '2', written: '2', ignored: '0', ignoredChannelIds: [] },
  },
  {
    method: 'Query',
    request: { experimentId: '<experimentId>', datasetId: '<datasetId>', channelIds: ['0'], from: '2026-04-01T12:00:00Z', to: '2026-04-01T13:00:00Z', maxPointsPerChannel: 1000 },
    response: {
      series: [
        {
          channelId: '0',
          points: [
            { timestamp: '2026-04-01T12:00:00Z', value: 12.5 },
            { timestamp: '2026-04-01T12:00:01Z', value: 13 },
          ],
          rawPoints: '2',
          timesUs: [],
          values: [],
        },
      ],
      totalRawPoints: '2',
    },
  },
];

const SERVICE = TelemetryService.typeName;

function curl(base: string, example: ConnectExample): string {
  return [
    `curl -sS ${base}/${SERVICE}/${example.method} \\`,
    `  -H 'content-type: application/json' -H "${API_KEY_HEADER}: $SORTIE_API_KEY" \\`,
    `  -d '${JSON.stringify(example.request)}'`,
  ].join('\n');
}

function typeOf(field: DescField): string {
  const base = (f: DescField): string => {
    if (f.fieldKind === 'message') return f.message.typeName.replace(/^sortie\.telemetry\.v1\./, '');
    if (f.fieldKind === 'enum') return f.enum.typeName;
    if (f.fieldKind === 'scalar') return ScalarType[f.scalar].toLowerCase();
    if (f.fieldKind === 'list') return `repeated ${f.listKind === 'message' ? f.message.typeName.replace(/^sortie\.telemetry\.v1\./, '') : f.listKind === 'enum' ? f.enum.typeName : ScalarType[f.scalar].toLowerCase()}`;
    return 'map';
  };
  return base(field);
}

/** The JSON form's spelling of a type where it differs from the obvious (proto3 JSON mapping). */
function jsonNote(field: DescField): string {
  const scalar = field.fieldKind === 'scalar' || field.fieldKind === 'list' ? field.scalar : undefined;
  if (scalar === ScalarType.INT64 || scalar === ScalarType.UINT64) return 'a decimal string in JSON';
  if (scalar === ScalarType.BYTES) return 'base64 in JSON';
  const name = field.fieldKind === 'message' || (field.fieldKind === 'list' && field.listKind === 'message') ? field.message?.typeName : undefined;
  if (name === 'google.protobuf.Timestamp') return 'RFC 3339 in JSON (`2026-04-01T12:00:00.5Z`)';
  if (name === 'google.protobuf.Empty') return '`{}` in JSON';
  return '';
}

function messageTable(message: DescMessage): string {
  const rows = message.fields
    .map((f) => {
      const oneof = f.oneof ? `one of <code>${esc(f.oneof.name)}</code>` : '';
      const note = [oneof, inline(jsonNote(f))].filter(Boolean).join('; ');
      return `<tr><td><code>${esc(f.jsonName)}</code></td><td><code>${esc(f.name)}</code> = ${f.number}</td><td>${esc(typeOf(f))}</td><td>${note}</td></tr>`;
    })
    .join('');
  return `<h3 id="msg-${esc(message.name)}"><code>${esc(message.name)}</code></h3>
<table><thead><tr><th>JSON name</th><th>proto field</th><th>type</th><th>notes</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function allMessages(messages: readonly DescMessage[]): DescMessage[] {
  return messages.flatMap((m) => [m, ...allMessages(m.nestedMessages)]);
}

function methodRows(service: DescService): string {
  return service.methods
    .map((m) => {
      const kind = m.methodKind === 'unary' ? 'unary' : m.methodKind.replace('_', ' ');
      const http = m.localName === 'streamSubmit' ? 'no (gRPC port only)' : `<code>POST ${RPC_PREFIX}/${SERVICE}/${m.name}</code>`;
      return `<tr><td><code>${esc(m.name)}</code></td><td>${kind}</td><td><a href="#msg-${esc(m.input.name)}"><code>${esc(m.input.name)}</code></a> → <a href="#msg-${esc(m.output.name)}"><code>${esc(m.output.name)}</code></a></td><td><code>${esc(RPC_SCOPES[m.localName] ?? '?')}</code></td><td>${http}</td><td>${inline(METHOD_SUMMARY[m.localName] ?? '')}</td></tr>`;
    })
    .join('');
}

function statusRows(): string {
  return (Object.keys(GRPC_CODE) as ErrorCode[])
    .map((code) => {
      const grpc = GRPC_CODE[code];
      const name = codeToString(grpc);
      return `<tr><td><code>${esc(code)}</code></td><td><code>${esc(name.toUpperCase())}</code> (${grpc})</td><td><code>${esc(name)}</code></td><td>${codeToHttpStatus(grpc)}</td></tr>`;
    })
    .join('');
}

/** /docs/grpc: TelemetryService, its messages, how errors look, and the Connect JSON form usable with curl. */
export function renderGrpcPage(urls: { http: string; grpc: string }): string {
  const service = TelemetryService;
  const messages = allMessages(file_sortie_telemetry_v1_telemetry.messages);
  const body = `
<p>Telemetry is written and read through <code>${esc(SERVICE)}</code> (<code>proto/sortie/telemetry/v1/telemetry.proto</code>; generated
TypeScript in <code>@sortie/contracts</code>). It is served on the <strong>gRPC port</strong> (<code>${esc(urls.grpc)}</code>,
<code>SORTIE_GRPC_HOST</code>/<code>SORTIE_GRPC_PORT</code>) in three protocols: gRPC over HTTP/2 without TLS, gRPC-Web and Connect
(HTTP/1.1 and HTTP/2 on the same port). <code>Query</code> and <code>Submit</code> are also on the <strong>HTTP port</strong> under
<code>${esc(urls.http)}${RPC_PREFIX}</code> in the Connect protocol (JSON and binary), so a browser, <code>curl</code> or the typed client
reads and writes telemetry where the HTTP API is, behind the same TLS front.</p>
<p>Every call sends the API key in the <code>${API_KEY_HEADER}</code> header (gRPC metadata) and may send <code>x-request-id</code>;
the answer carries the request id. Messages are at most ${GRPC_LIMITS.readMaxBytes / 1024 / 1024} MiB (larger: <code>RESOURCE_EXHAUSTED</code>).</p>

<h2>Methods</h2>
<table><thead><tr><th>method</th><th>kind</th><th>request → response</th><th>scope</th><th>on the HTTP port</th><th>what it does</th></tr></thead>
<tbody>${methodRows(service)}</tbody></table>

<h2 id="connect-json">The Connect JSON form, with curl</h2>
<p>A Connect unary call is a plain HTTP POST of the request message as JSON (proto3 JSON mapping: camelCase names,
64-bit integers as strings, timestamps as RFC 3339) to <code>/&lt;service&gt;/&lt;method&gt;</code>; the answer is the response message
as JSON, with zero counters and empty lists written out. A dataset with one double channel <code>ch_0</code>, two points, then read back:</p>
${CONNECT_EXAMPLES.map(
  (e) => `<h3>${esc(e.method)}</h3>
<pre>${esc(curl(`${urls.http}${RPC_PREFIX}`, e))}</pre>
<p>answers</p>
<pre>${esc(JSON.stringify(e.response))}</pre>`,
).join('\n')}
<p>The same call on the gRPC port: <code>curl ${esc(urls.grpc)}/${esc(SERVICE)}/Query …</code> with the same headers and body.
Binary Connect uses <code>content-type: application/proto</code>; gRPC clients are built from <code>telemetry.proto</code> (the server
offers no reflection).</p>

<h2 id="errors">Errors</h2>
<p>Every error carries the spec’s code in <code>${ERROR_CODE_TRAILER}</code> (a trailer in gRPC, a header in gRPC-Web and Connect), so a
client branches on the same codes as over HTTP. In the Connect protocol the body is <code>{"code":"invalid_argument","message":"…"}</code>
with the HTTP status below. Messages name the proto field they are about (<code>dataset_id</code>, <code>points[3]</code>).</p>
<table><thead><tr><th>x-sortie-error-code</th><th>gRPC status</th><th>Connect code</th><th>Connect HTTP status</th></tr></thead>
<tbody>${statusRows()}</tbody></table>
<p class="note">A method the service does not have is <code>NOT_FOUND</code> with the envelope; bytes that are not the message, or a
stream cut mid-message, are <code>INVALID_ARGUMENT</code>.</p>

<h2 id="messages">Messages</h2>
${messages.map(messageTable).join('\n')}
`;
  return guidePage('Telemetry over gRPC and Connect', body);
}
