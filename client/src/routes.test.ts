import { API_ROUTES } from '@sortie/contracts';
import type {
  CommandRecord,
  CreateCommandResponseSchema,
  CreateImportResponse,
  DeliveryAttempt,
  Experiment,
  FlightParameters,
  LogImport,
  ParameterDiff,
  RegisterStreamRequest,
  WebhookEndpointWithSecret,
} from '@sortie/contracts';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type { Method } from './index.ts';
import { queryString } from './http.ts';
import { OPERATIONS, STREAMED_OPERATIONS, type InputOf, type OutputOf } from './routes.ts';

describe('the client covers the route table', () => {
  it('every route is one method of the client, and no method names a route that is gone', () => {
    const methods = Object.values(OPERATIONS).flatMap((group) => Object.values(group) as string[]);
    const covered = [...methods, ...STREAMED_OPERATIONS].sort();
    expect(covered).toEqual(API_ROUTES.map((r) => r.operationId).sort());
    expect(new Set(covered).size).toBe(covered.length);
  });

  it('streamed routes are exactly those whose answer or body is a file', () => {
    const files = API_ROUTES.filter((r) => r.success.some((s) => s.media) || r.rawBody).map((r) => r.operationId);
    expect(files.sort()).toEqual([...STREAMED_OPERATIONS].sort());
  });
});

describe('types derived from the table (checked by the type-checker, so an `any` fails the build)', () => {
  it('answers are the response schemas, inputs the request schemas', () => {
    expectTypeOf<OutputOf<'listExperiments'>>().toEqualTypeOf<Experiment[]>();
    expectTypeOf<OutputOf<'createCommand'>>().toEqualTypeOf<z.output<typeof CreateCommandResponseSchema>>();
    expectTypeOf<OutputOf<'createCommand'>>().toExtend<CommandRecord>();
    expectTypeOf<OutputOf<'rotateWebhook'>>().toEqualTypeOf<WebhookEndpointWithSecret>();
    expectTypeOf<OutputOf<'testWebhook'>>().toEqualTypeOf<DeliveryAttempt>();
    expectTypeOf<OutputOf<'getCommand'>>().toEqualTypeOf<CommandRecord>();
    expectTypeOf<InputOf<'getCommand'>>().toEqualTypeOf<{ commandId: string }>();
    // Inputs are the schema's input side: a defaulted field is optional for the caller.
    expectTypeOf<InputOf<'registerStream'>>().not.toEqualTypeOf<RegisterStreamRequest>();
    const minimal: InputOf<'registerStream'> = { experimentId: '00000000-0000-4000-8000-000000000000', datasetName: 'stand' };
    expect(minimal.storageShape).toBeUndefined();
    expectTypeOf<InputOf<'listChannels'>>().toEqualTypeOf<{ datasetId: string; experimentId?: string | undefined }>();
    expectTypeOf<InputOf<'listExperiments'>>().toEqualTypeOf<void>();
    expectTypeOf<OutputOf<'listImports'>>().toEqualTypeOf<LogImport[]>();
    expectTypeOf<OutputOf<'createImport'>>().toEqualTypeOf<CreateImportResponse>();
    expectTypeOf<OutputOf<'getFlightParameters'>>().toEqualTypeOf<FlightParameters>();
    expectTypeOf<OutputOf<'diffFlightParameters'>>().toEqualTypeOf<ParameterDiff>();
    // `at` has a default: the caller may leave it out.
    expectTypeOf<InputOf<'diffFlightParameters'>>().toEqualTypeOf<{ a: string; b: string; at?: 'initial' | 'final' | undefined }>();
    expectTypeOf<Method<'listExperiments'>>().parameters.toEqualTypeOf<[input?: undefined, options?: import('./http.ts').CallOptions]>();
  });
});

describe('queryString', () => {
  it('repeats array keys, leaves out undefined, writes dates as RFC 3339', () => {
    expect(queryString({ a: 'x y', channel: ['p', 'q'], skip: undefined, at: new Date('2026-01-02T03:04:05.000Z'), n: 3 })).toBe(
      '?a=x+y&channel=p&channel=q&at=2026-01-02T03%3A04%3A05.000Z&n=3',
    );
    expect(queryString({})).toBe('');
  });
});
