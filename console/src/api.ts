// Every call the console makes to the service, in one module, typed as @sortie/client types them (the
// same inputs and answers, failures as SortieApiError with the envelope's code, fields and request id),
// over the console's own zod-free transport (service.ts says why). The pages never build a URL or a
// header themselves, so the key has one way out: the x-api-key header.
import { createTelemetryClient, SortieApiError, type FollowRequestInit, type InputOf } from '@sortie/client';
import { API_KEY_HEADER, type ConsoleSession, type CreateImportResponse, type ImportProgress } from '@sortie/contracts';
import { ndjsonLines } from './import-logic.ts';
import { answerSeconds } from './live.ts';
import { apiError, createTransport } from './service.ts';

export { SortieApiError };

/** One series of a Query answer, times in Unix seconds (uPlot's unit) as float64. */
export interface QuerySeries {
  channelId: string;
  times: Float64Array;
  values: Float64Array;
  rawPoints: number;
}

export interface QueryWindow {
  /** Unix seconds, inclusive. */
  from?: number;
  /** Unix seconds, exclusive. */
  to?: number;
}

/** A window edge (Unix seconds) to whole milliseconds, the precision the page's URL keeps. */
function wholeMs(seconds: number): number {
  return Math.round(seconds * 1000);
}

function rfc3339(seconds: number): string {
  return new Date(wholeMs(seconds)).toISOString();
}

/** An ndjson line of an import's answer that tells its progress (the others are the import, or its error). */
function isProgress(line: unknown): line is ImportProgress {
  const p = line as Partial<ImportProgress> | null;
  return typeof p === 'object' && p !== null && (p.phase === 'upload' || p.phase === 'import') && typeof p.bytes === 'number' && typeof p.messages === 'number';
}

/** An upload under way: its answer, and how to stop it. */
export interface ImportUpload {
  done: Promise<CreateImportResponse>;
  abort: () => void;
}

export type ConsoleApi = ReturnType<typeof createConsoleApi>;

export function createConsoleApi(apiKey: string, baseUrl = globalThis.location.origin) {
  // Never a cookie or the HTTP cache: the key is the only credential and every answer is live data.
  const fetchLive: typeof fetch = (input, init) => fetch(input, { ...init, credentials: 'omit', cache: 'no-store' });
  const http = createTransport(baseUrl, apiKey, fetchLive);
  // Query and Follow are the client's own: its telemetry module loads no zod.
  const telemetry = createTelemetryClient({ baseUrl: `${baseUrl}/api/rpc`, apiKey, fetch: fetchLive });
  const call = async <Op extends Parameters<typeof http.call>[0]>(operationId: Op, input: InputOf<Op>) => (await http.call(operationId, input)).data;

  return {
    /** GET /console/session: the console's own route (not in the API's route table), typed by its contract. */
    async session(): Promise<ConsoleSession> {
      const response = await fetchLive(`${baseUrl}/console/session`, { headers: { [API_KEY_HEADER]: apiKey, accept: 'application/json' } });
      const body: unknown = await response.json().catch(() => undefined);
      if (!response.ok) throw apiError(response.status, body, response.headers.get('x-request-id') ?? undefined);
      const session = body as Partial<ConsoleSession> | undefined;
      if (typeof session?.organization?.id !== 'string' || !Array.isArray(session.scopes)) {
        throw new SortieApiError({ status: response.status, code: 'bad_response', message: 'the service answered no console session' });
      }
      return session as ConsoleSession;
    },
    experiments: () => call('listExperiments', undefined),
    createExperiment: (body: InputOf<'createExperiment'>) => call('createExperiment', body),
    /**
     * The experiments with the service's clock when it answered (its Date header, else ours): a dataset is
     * live by `lastDataAt` on that clock, so a browser whose clock is off still marks the right flights.
     */
    async experimentsAt() {
      const answer = await http.call('listExperiments', undefined);
      // The header has whole seconds: its middle is the best guess, and a second or two is no skew worth correcting.
      const skew = Date.parse(answer.headers.get('date') ?? '') + 500 - Date.now();
      return { experiments: answer.data, serverSkewMs: Number.isFinite(skew) && Math.abs(skew) > 2000 ? skew : 0 };
    },
    channels: (experimentId: string, datasetId: string) => call('listChannels', { experimentId, datasetId }),
    events: (experimentId: string, datasetId: string) => call('listEvents', { experimentId, datasetId }),
    /** The dataset's first and last sample as stored, over all its channels (RFC 3339 with µs; null when it holds none). */
    span: (experimentId: string, datasetId: string) => call('getDatasetSpan', { experimentId, datasetId }),
    summary: (experimentId: string, datasetId: string) => call('getDatasetSummary', { experimentId, datasetId }),
    commands: (experimentId: string, datasetId: string) => call('listCommands', { experimentId, datasetId }),
    templates: () => call('listCommandTemplates', undefined),
    createCommand: (body: InputOf<'createCommand'>) => call('createCommand', body),
    retractCommand: (commandId: string, reason: string) => call('retractCommand', { commandId, reason }),
    dispatchCommand: (commandId: string, ackTimeoutSeconds: number) => call('dispatchCommand', { commandId, ackTimeoutSeconds }),
    arming: (experimentId: string, datasetId: string) => call('getArming', { experimentId, datasetId }),
    arm: (body: InputOf<'armDataset'>) => call('armDataset', body),
    disarm: (experimentId: string, datasetId: string) => call('disarmDataset', { experimentId, datasetId }),
    deliveries: (commandId: string) => call('listDeliveries', { commandId }),
    webhooks: () => call('listWebhooks', undefined),
    createWebhook: (body: InputOf<'createWebhook'>) => call('createWebhook', body),
    rotateWebhook: (body: InputOf<'rotateWebhook'>) => call('rotateWebhook', body),
    deleteWebhook: (id: string) => call('deleteWebhook', { id }),
    testWebhook: (endpointId: string) => call('testWebhook', { endpointId }),
    notifications: () => call('listNotifications', undefined),

    /** The log imports of an experiment or of one dataset, with the log's metadata and the import's report. */
    imports: (query: { experimentId?: string; datasetId?: string }) => call('listImports', query),
    /** A flight's parameters: initial and final values and every change. */
    parameters: (experimentId: string, datasetId: string) => call('getFlightParameters', { experimentId, datasetId }),
    /** Flight b's parameters against flight a's, as each started or ended. */
    parameterDiff: (a: string, b: string, at: 'initial' | 'final') => call('diffFlightParameters', { a, b, at }),

    /**
     * POST /api/imports/create with the file as the body, by XMLHttpRequest: a browser's fetch cannot
     * report an upload's progress (the client's importFile counts bytes only where it streams the body
     * itself, in Node). `onProgress` hears the upload's bytes as they leave, then the service's ndjson
     * lines while it reads the log (bytes read, messages stored); the answer is its last line.
     */
    importLog(experimentId: string, file: File, onProgress: (progress: ImportProgress) => void): ImportUpload {
      const xhr = new XMLHttpRequest();
      const done = new Promise<CreateImportResponse>((resolve, reject) => {
        const query = new URLSearchParams({ experimentId, fileName: file.name });
        xhr.open('POST', `${baseUrl}/api/imports/create?${query}`);
        xhr.setRequestHeader(API_KEY_HEADER, apiKey);
        xhr.setRequestHeader('accept', 'application/x-ndjson');
        xhr.setRequestHeader('content-type', 'application/octet-stream');
        xhr.upload.onprogress = (e) => onProgress({ phase: 'upload', bytes: e.loaded, totalBytes: e.lengthComputable ? e.total : file.size, messages: 0 });
        let read = 0;
        let rest = '';
        let answer: unknown;
        // Lines so far of the streamed answer (responseText grows while it arrives).
        const take = () => {
          const text = xhr.responseText;
          const { lines, partial } = ndjsonLines(rest, text.slice(read));
          read = text.length;
          rest = partial;
          for (const line of lines) {
            if (isProgress(line)) onProgress(line);
            else answer = line;
          }
        };
        xhr.onprogress = take;
        xhr.onload = () => {
          if (xhr.status !== 200) {
            let body: unknown;
            try {
              body = JSON.parse(xhr.responseText);
            } catch {
              body = undefined;
            }
            reject(apiError(xhr.status, body, xhr.getResponseHeader('x-request-id') ?? undefined));
            return;
          }
          try {
            take();
            if (rest.trim()) answer = JSON.parse(rest);
            const last = answer as { import?: unknown; error?: unknown } | undefined;
            // The last line is the import, or the error envelope's member when reading the log failed.
            if (last?.import) resolve(last.import as CreateImportResponse);
            else reject(apiError(xhr.status, last, xhr.getResponseHeader('x-request-id') ?? undefined));
          } catch (e) {
            reject(e instanceof Error ? e : new Error(String(e)));
          }
        };
        xhr.onerror = () => reject(new Error('the upload failed: the service could not be reached'));
        xhr.onabort = () => reject(new DOMException('the upload was cancelled', 'AbortError'));
        xhr.send(file);
      });
      return { done, abort: () => xhr.abort() };
    },

    /**
     * TelemetryService.Query over Connect (binary) on the HTTP port: the server's M4/LTTB downsampling,
     * at most `maxPointsPerChannel` points per channel, times as Unix seconds in float64 arrays for uPlot.
     * Asked for as columns: two packed arrays per series instead of a message and a timestamp text per sample.
     */
    async query(input: { experimentId: string; datasetId: string; channelIds: string[]; window?: QueryWindow; maxPointsPerChannel: number }) {
      const answer = await telemetry.query({
        experimentId: input.experimentId,
        datasetId: input.datasetId,
        channelIds: input.channelIds,
        maxPointsPerChannel: Math.max(1, Math.floor(input.maxPointsPerChannel)),
        columns: true,
        ...(input.window?.from !== undefined && { from: rfc3339(input.window.from) }),
        ...(input.window?.to !== undefined && { to: rfc3339(input.window.to) }),
      });
      const series: QuerySeries[] = answer.series.map((s) => {
        if (s.timesUs && s.values) {
          const times = new Float64Array(s.timesUs.length);
          for (let i = 0; i < times.length; i++) times[i] = s.timesUs[i]! / 1e6;
          return { channelId: s.channelId, times, values: Float64Array.from(s.values), rawPoints: s.rawPoints };
        }
        // A server that predates the columns layout answers points.
        const times = new Float64Array(s.points.length);
        const values = new Float64Array(s.points.length);
        for (let i = 0; i < s.points.length; i++) {
          const p = s.points[i]!;
          times[i] = answerSeconds(p.timestamp);
          values[i] = p.value;
        }
        return { channelId: s.channelId, times, values, rawPoints: s.rawPoints };
      });
      return { series, totalRawPoints: answer.totalRawPoints };
    },

    /** TelemetryService.Follow: the dataset's window, then what each commit adds, its events and command changes, until `signal` aborts. */
    follow: (request: FollowRequestInit, signal: AbortSignal) => telemetry.follow(request, { signal }),

    /** The export route's CSV of `channels` over the window, raw rows; fetched (the key travels in a header, never a URL). */
    async exportCsv(input: { experimentId: string; datasetId: string; channels: string[]; window?: QueryWindow }): Promise<Blob> {
      const response = await http.stream('exportDataset', {
        datasetId: input.datasetId,
        experimentId: input.experimentId,
        format: 'csv',
        channel: input.channels,
        ...(input.window?.from !== undefined && { start: rfc3339(input.window.from) }),
        ...(input.window?.to !== undefined && { end: rfc3339(input.window.to) }),
      });
      return response.blob();
    },
  };
}
