import { AppendRequestSchema, Timestamp, zodIssuesToDetails } from '@sortie/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { appendBodyInPlace } from './append-body.ts';
import { isoToEpochMicros, isoToEpochMicrosNumber } from './wide/timestamps.ts';

// The in-place check of the append body stands in for AppendRequestSchema on the hot path. These
// properties hold it to the schema: it never takes a body the schema refuses, it takes every ordinary
// body the schema takes (so the flood really skips zod's copies), and what the route answers, in place
// or through the schema, is what the schema alone would answer: the same data and the same details.

const SEED = Number(process.env.SORTIE_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.SORTIE_FUZZ_RUNS ?? 400);
const params = { seed: SEED, numRuns: RUNS };

const EXPERIMENT = '0190f5a2-7c4e-7a1b-8c3d-2e4f6a8b0c1d';
const DATASET = '0190f5a2-7c4e-7a1b-9c3d-2e4f6a8b0c1e';

/** ISO timestamps in and out of the supported years, with 0 to 9 fraction digits and Z or an offset. */
const timestamp = fc
  .tuple(
    fc.date({ min: new Date('1600-01-01T00:00:00Z'), max: new Date('2300-12-31T23:59:59Z'), noInvalidDate: true }),
    fc.stringMatching(/^[0-9]{0,9}$/),
    fc.constantFrom('Z', '+01:00', '-05:30', '+14:00'),
  )
  .map(([d, fraction, zone]) => `${d.toISOString().slice(0, 19)}${fraction ? `.${fraction}` : ''}${zone}`);

// An ordinary channel name: anything but `__proto__`, which the schema drops and the in-place check
// therefore leaves to it (fast-check's strings do produce it; a test below holds that case).
const key = fc.oneof(
  fc.integer({ min: 0, max: 20 }).map((n) => `ch_${n}`),
  fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k !== '__proto__'),
  fc.uuid(),
  fc.constantFrom('constructor', 'toString', 'hasOwnProperty', '0', '10', 'a.b', 'ü'),
);
const value = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.string({ maxLength: 8 }), fc.boolean(), fc.constant(null));
const row = fc.record({ timestamp, values: fc.dictionary(key, value, { maxKeys: 6 }) });
const body = fc.record({ experimentId: fc.constant(EXPERIMENT), datasetId: fc.constant(DATASET), rows: fc.array(row, { minLength: 1, maxLength: 8 }) });

/** Values that break some rule of the schema, or sit at its edge. */
const hostile = fc.oneof(
  fc.constantFrom<unknown>(
    'a\u0000b',
    '\ud800',
    'x\udc00',
    NaN,
    Infinity,
    -Infinity,
    undefined,
    [],
    [1],
    {},
    { a: 1 },
    '',
    'not a uuid',
    '2026-01-01',
    '0000-01-01T00:00:00Z',
    '1600-01-01T00:00:00Z',
    '2300-01-01T00:00:00Z',
    '2026-01-01T00:00:00',
    '2026-13-01T00:00:00Z',
    0,
    true,
    null,
    Array.from({ length: 10_001 }, () => ({ timestamp: '2026-01-01T00:00:00Z', values: {} })),
    Object.create(null),
    new Date(),
  ),
  fc.string({ maxLength: 4 }),
  fc.double(),
);

/** The paths of a body's objects and leaves, for a mutation to pick one. */
function paths(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  const out = [at];
  if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...at, Array.isArray(value) ? Number(k) : k]));
  return out;
}

type Mutation = { kind: 'set' | 'delete' | 'rename' | 'extra'; pick: number; hostile: unknown; name: string };
const mutation = fc.record({
  kind: fc.constantFrom<Mutation['kind']>('set', 'delete', 'rename', 'extra'),
  pick: fc.nat(),
  hostile,
  name: fc.oneof(fc.constantFrom('__proto__', 'a\u0000', '\ud800', 'constructor', 'extra'), fc.string({ maxLength: 4 })),
});

/** The body with one mutation applied at one of its paths (the top level included). */
function mutate(original: unknown, m: Mutation): unknown {
  const copy = structuredClone(original);
  const all = paths(copy);
  const path = all[m.pick % all.length]!;
  if (path.length === 0) return m.kind === 'set' ? m.hostile : copy;
  const parent = path.slice(0, -1).reduce<any>((o, k) => o[k], copy);
  const last = path[path.length - 1]!;
  if (m.kind === 'set') parent[last] = m.hostile;
  else if (m.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else if (m.kind === 'rename' && !Array.isArray(parent)) {
    const v = parent[last];
    delete parent[last];
    Object.defineProperty(parent, m.name, { value: v, enumerable: true, writable: true, configurable: true });
  } else if (m.kind === 'extra') {
    const target = parent[last];
    if (target !== null && typeof target === 'object' && !Array.isArray(target)) {
      Object.defineProperty(target, m.name, { value: m.hostile, enumerable: true, writable: true, configurable: true });
    }
  }
  return copy;
}

/** What the route takes from a body: the in-place body, or the schema's answer. */
function routeAnswer(input: unknown) {
  const inPlace = appendBodyInPlace(input);
  if (inPlace) return { ok: true as const, data: known(inPlace), inPlace: true };
  return schemaAnswer(input);
}

function schemaAnswer(input: unknown) {
  const parsed = AppendRequestSchema.safeParse(input);
  return parsed.success ? { ok: true as const, data: known(parsed.data), inPlace: false } : { ok: false as const, details: zodIssuesToDetails(parsed.error) };
}

/** The fields the append path reads (the schema strips the rest; the in-place body keeps them, unread). */
function known(b: { experimentId: string; datasetId: string; rows: { timestamp: string; values: Record<string, unknown> }[] }) {
  return {
    experimentId: b.experimentId,
    datasetId: b.datasetId,
    rows: b.rows.map((r) => ({ timestamp: r.timestamp, values: Object.entries(r.values) })),
  };
}

function expectSameAnswer(input: unknown) {
  const schema = schemaAnswer(input);
  const route = routeAnswer(input);
  // Never in place what the schema refuses; otherwise the same data, or the schema's own details.
  if (route.ok && route.inPlace) expect(schema.ok, 'the in-place check took a body the schema refuses').toBe(true);
  expect({ ...route, inPlace: undefined }).toEqual({ ...schema, inPlace: undefined });
}

describe('the append body checked in place', () => {
  it(`takes every ordinary body the schema takes, as the schema would read it (seed ${SEED})`, () => {
    fc.assert(
      fc.property(body, (b) => {
        for (const input of [b, JSON.parse(JSON.stringify(b))]) {
          const schema = schemaAnswer(input);
          const route = routeAnswer(input);
          // Taken by the schema → taken in place (the flood's path); refused (a timestamp outside the years) → the schema's details.
          expect(route).toEqual(schema.ok ? { ...schema, inPlace: true } : schema);
        }
      }),
      params,
    );
  });

  it(`answers as the schema does on mutated bodies: accept or refuse, data, and details[].field (seed ${SEED})`, () => {
    let refused = 0;
    let inPlace = 0;
    fc.assert(
      fc.property(body, mutation, (b, m) => {
        const mutated = mutate(b, m);
        expectSameAnswer(mutated);
        // Through JSON too, as bodies really arrive (a duplicated or `__proto__` key included).
        let text: string | undefined;
        try {
          text = JSON.stringify(mutated);
        } catch {
          text = undefined;
        }
        if (text !== undefined) expectSameAnswer(JSON.parse(text));
        if (!schemaAnswer(mutated).ok) refused++;
        if (appendBodyInPlace(mutated)) inPlace++;
      }),
      params,
    );
    // The mutations must really exercise both sides.
    expect(refused).toBeGreaterThan(RUNS / 10);
    expect(inPlace).toBeGreaterThan(RUNS / 10);
  });

  it('leaves a `__proto__` key, which the schema drops, to the schema', () => {
    const input = JSON.parse(`{"experimentId":"${EXPERIMENT}","datasetId":"${DATASET}","rows":[{"timestamp":"2026-01-01T00:00:00Z","values":{"__proto__":1,"ch_0":2}}]}`);
    expect(appendBodyInPlace(input)).toBeUndefined();
    expect(routeAnswer(input)).toMatchObject({ ok: true, data: { rows: [{ values: [['ch_0', 2]] }] } });
  });

  it('takes 1 to 10,000 rows as the schema does, and leaves 0 or 10,001 to it', () => {
    const rows = (n: number) => ({ experimentId: EXPERIMENT, datasetId: DATASET, rows: Array.from({ length: n }, () => ({ timestamp: '2026-01-01T00:00:00Z', values: { a: 1 } })) });
    for (const n of [0, 1, 10_000, 10_001]) {
      const input = rows(n);
      const schema = schemaAnswer(input);
      expect(routeAnswer(input)).toEqual(schema.ok ? { ...schema, inPlace: true } : schema);
    }
    expect(appendBodyInPlace(rows(10_000))).toBeDefined();
    expect(schemaAnswer(rows(10_001)).ok).toBe(false);
  });

  it('refuses what the schema refuses at the edges: NUL and lone surrogates in keys and values, non-finite numbers, years outside 1685–2255', () => {
    const at = (values: Record<string, unknown>, ts = '2026-01-01T00:00:00Z') => ({ experimentId: EXPERIMENT, datasetId: DATASET, rows: [{ timestamp: ts, values }] });
    for (const input of [at({ 'a\u0000': 1 }), at({ '\ud800': 1 }), at({ a: 'x\u0000' }), at({ a: '\udc00' }), at({ a: NaN }), at({ a: Infinity }), at({}, '1600-01-01T00:00:00Z'), at({}, '2300-01-01T00:00:00Z'), at({ a: [] }), at({ a: {} })]) {
      expect(appendBodyInPlace(input)).toBeUndefined();
      expect(AppendRequestSchema.safeParse(input).success).toBe(false);
    }
  });
});

describe('isoToEpochMicrosNumber', () => {
  it(`equals isoToEpochMicros on every timestamp the contract takes (seed ${SEED})`, () => {
    fc.assert(
      fc.property(timestamp, (ts) => {
        if (!Timestamp.safeParse(ts).success) return;
        expect(isoToEpochMicrosNumber(ts)).toBe(Number(isoToEpochMicros(ts)));
      }),
      params,
    );
    expect(isoToEpochMicrosNumber('1969-12-31T23:59:59.9995Z')).toBe(-500);
    expect(isoToEpochMicrosNumber('2026-01-01T01:00:00.5+01:00')).toBe(1767225600500000);
    expect(isoToEpochMicrosNumber('2026-01-01T00:00:00.1234567Z')).toBe(1767225600123456);
  });
});
