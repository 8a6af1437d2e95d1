import {
  CreateImportQuerySchema,
  GetImportQuerySchema,
  ListImportsQuerySchema,
  ParameterDiffQuerySchema,
  ParametersQuerySchema,
  type CreateImportResponse,
  type ErrorEnvelope,
  type ImportProgress,
} from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import { requireDataset } from '../datasets/queries.ts';
import { ServiceError, clientFacingError } from '../platform/errors.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readQuery } from '../http/validation.ts';
import type { AppContext } from '../platform/context.ts';
import { importFile, toLogImport } from './import.ts';
import { listImports, requireImport } from './queries.ts';
import { diffParameters, flightParameters } from './parameters.ts';
import { receiveUpload } from './upload.ts';

/** The route that takes a whole file as its body: app.ts exempts it from the JSON body limits (it streams to disk, with its own limit). */
export const IMPORT_UPLOAD_PATH = '/api/imports/create';

/** Progress lines of an ndjson answer: at most this often. */
const PROGRESS_EVERY_MS = 250;

/**
 * /api/imports/{create,list,get} and /api/datasets/parameters{,/diff}. Importing makes a dataset and
 * writes telemetry, so it takes telemetry:write (as StreamSubmit does); reading, datasets:read.
 *
 * create answers 201 with the import when it is done (200 and `duplicate: true` when the same file was
 * imported before). With `Accept: application/x-ndjson` it answers 200 at once and streams one
 * ImportProgress line per quarter second while the file is read, then one line with `import` (the
 * answer) or `error` (the error envelope's member): for a CLI's or a console's progress bar on a
 * multi-GB log, whose import takes minutes.
 */
export function importsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .post('/imports/create', requireScope(ctx, 'telemetry:write'), async (c) => {
      const query = readQuery(c, CreateImportQuerySchema);
      const organizationId = c.get('principal').organizationId;
      const total = Number(c.req.header('content-length'));
      const totalBytes = Number.isSafeInteger(total) ? total : null;
      const upload = await receiveUpload(c.req.raw.body, { dir: ctx.config.imports.dir, maxBytes: ctx.config.imports.maxBytes });
      const answer = (result: Awaited<ReturnType<typeof importFile>>): CreateImportResponse => ({ ...toLogImport(result.row), duplicate: result.duplicate });
      if (!(c.req.header('accept') ?? '').includes('application/x-ndjson')) {
        try {
          const result = await importFile(ctx, organizationId, query, upload);
          return c.json(answer(result), result.duplicate ? 200 : 201);
        } finally {
          await upload.remove();
        }
      }
      const encoder = new TextEncoder();
      const requestId = (c.get('requestId') as string | undefined) ?? '';
      // The client may leave while the import runs (a Ctrl-C): the import still finishes and is kept, and
      // the lines nobody reads are dropped rather than written to a closed stream.
      let open = true;
      const body = new ReadableStream<Uint8Array>({
        cancel() {
          open = false;
        },
        start(controller) {
          const line = (value: unknown) => {
            if (open) controller.enqueue(encoder.encode(`${JSON.stringify(value)}\n`));
          };
          let last = 0;
          const progress = (bytes: number, messages: number) => {
            const now = Date.now();
            if (now - last < PROGRESS_EVERY_MS) return;
            last = now;
            line({ phase: 'import', bytes, totalBytes: totalBytes ?? upload.bytes, messages } satisfies ImportProgress);
          };
          line({ phase: 'upload', bytes: upload.bytes, totalBytes: totalBytes ?? upload.bytes, messages: 0 } satisfies ImportProgress);
          importFile(ctx, organizationId, query, upload, progress)
            .then((result) => line({ import: answer(result) }))
            .catch((error: unknown) => {
              const known = clientFacingError(error) ?? new ServiceError('internal_error', 'internal error; quote the request id when reporting it');
              if (!clientFacingError(error)) ctx.logger.error({ err: error, requestId }, 'import failed');
              const envelope: ErrorEnvelope = { error: { code: known.code, message: known.message, details: known.details, request_id: requestId } };
              line(envelope);
            })
            .finally(() => {
              void upload.remove();
              if (open) controller.close();
              open = false;
            });
        },
      });
      return new Response(body, { status: 200, headers: { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' } });
    })
    .get('/imports/list', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, ListImportsQuerySchema);
      return c.json((await listImports(ctx.db, c.get('principal').organizationId, query)).map(toLogImport));
    })
    .get('/imports/get', requireScope(ctx, 'datasets:read'), async (c) => {
      const { id } = readQuery(c, GetImportQuerySchema);
      return c.json(toLogImport(await requireImport(ctx.db, c.get('principal').organizationId, id)));
    })
    .get('/datasets/parameters', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, ParametersQuerySchema);
      const dataset = await requireDataset(ctx.db, c.get('principal').organizationId, query.datasetId, query.experimentId);
      return c.json(await flightParameters(ctx.db, dataset));
    })
    .get('/datasets/parameters/diff', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, ParameterDiffQuerySchema);
      const organizationId = c.get('principal').organizationId;
      const [a, b] = await Promise.all([requireDataset(ctx.db, organizationId, query.a), requireDataset(ctx.db, organizationId, query.b)]);
      const [pa, pb] = await Promise.all([flightParameters(ctx.db, a), flightParameters(ctx.db, b)]);
      return c.json(diffParameters(pa, pb, query.at));
    });
}
