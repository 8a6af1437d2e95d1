import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { TelemetryService, type StreamSubmitRequestSchema } from '@sortie/contracts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFrame } from '@sortie/contracts/testing';
import { decodeFrame, frameTime } from './decode.ts';
import { crcExtraOf, messageClassOf } from '@sortie/contracts/mavlink';
import { startTestService, type TestOrg, type TestService } from '../../testing/test-service.ts';
import { fixtureFrames, fixturePoints, framePoint, RAW_CAPTURE_START_US, type FixtureFrame, type PointInit } from './fixture-frames.ts';
import { loadMessageTables, messageRelationSql } from './message-tables.ts';
import { readStoredSamples } from './stored-samples.ts';

type StreamMessage = MessageInitShape<typeof StreamSubmitRequestSchema>;

let t: TestService;
let org: TestOrg;
let client: Client<typeof TelemetryService>;
let experimentId: string;

const headers = () => ({ 'x-api-key': org.key });

async function registerNarrow(name: string): Promise<string> {
  const response = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  expect(response.status).toBeLessThan(300);
  return response.body.datasetId;
}

async function* streamOf(datasetId: string, points: readonly PointInit[], batch = 500): AsyncGenerator<StreamMessage> {
  yield { message: { case: 'header', value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
  for (let i = 0; i < points.length; i += batch) yield { message: { case: 'batch', value: { points: points.slice(i, i + batch) } } };
}

const stream = (datasetId: string, points: readonly PointInit[], batch?: number) => client.streamSubmit(streamOf(datasetId, points, batch), { headers: headers() });

async function grpcError(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected the call to fail');
}

/** Samples stored (one per field of each frame), frames, frames kept as UNKNOWN_<id>, and the earliest raw time. */
async function stored(datasetId: string) {
  const samples = await readStoredSamples(t.service.ctx.db, datasetId);
  const frames = new Set(samples.map((s) => s.frameSeq));
  const unknown = new Set(samples.filter((s) => s.signal.startsWith('mavlink.UNKNOWN_')).map((s) => s.frameSeq));
  const minUs = samples.reduce((m, s) => Math.min(m, s.timeUs), Infinity);
  return { rows: samples.length, frames: frames.size, unknown_frames: unknown.size, min_time: new Date(minUs / 1000) };
}

/** One row per frame: the rows of the dataset's messages (in their tables, or a short flight's shared table). */
async function messageRows(datasetId: string): Promise<number> {
  let n = 0;
  for (const table of (await loadMessageTables(t.service.ctx.db, datasetId)).values()) {
    const result = await sql<{ n: number }>`select count(*)::int as n from ${messageRelationSql(table)} m`.execute(t.service.ctx.db);
    n += result.rows[0]!.n;
  }
  return n;
}

const expectedSamples = (frames: readonly FixtureFrame[]) => frames.reduce((n, f) => n + decodeFrame(f.frame).length, 0);

const CAPTURES = [
  { name: 'arduplane-sitl-vtol.tlog', frames: 23894, unknown: 0 },
  { name: 'ardupilot-v2.mavlink', frames: 1476, unknown: 0 },
  { name: 'px4-mixed-v1v2-junk.bin', frames: 138, unknown: 2 },
] as const;

const datasets = new Map<string, string>();
const tlog = fixtureFrames('arduplane-sitl-vtol.tlog');

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'mavlink' } });
  experimentId = experiment.body.id;
});
afterAll(() => t?.stop());

describe('each capture streamed as mavlink-raw-v1 is accounted for frame by frame', () => {
  for (const capture of CAPTURES) {
    it(`${capture.name}: ${capture.frames} frames, ${capture.unknown} kept as UNKNOWN_<id>`, async () => {
      const frames = capture.name.endsWith('.tlog') ? tlog : fixtureFrames(capture.name);
      expect(frames).toHaveLength(capture.frames);
      const datasetId = await registerNarrow(capture.name);
      datasets.set(capture.name, datasetId);
      const response = await stream(datasetId, fixturePoints(frames));
      expect([response.accepted, response.written, response.duplicates, response.ignored]).toEqual([BigInt(capture.frames), BigInt(capture.frames), 0n, 0n]);

      const s = await stored(datasetId);
      // Decoded frames plus UNKNOWN_<id> frames equal the frames in the file, and every field is a row.
      expect(s.frames).toBe(capture.frames);
      expect(s.unknown_frames).toBe(capture.unknown);
      expect(s.frames - s.unknown_frames).toBe(frames.filter((f) => messageClassOf(f.frame.msgid)).length);
      expect(s.rows).toBe(expectedSamples(frames));
      // Stored as one row per frame.
      expect(await messageRows(datasetId)).toBe(capture.frames);
    });
  }

  it('keeps undecodable payloads as bytes under mavlink.UNKNOWN_<id>.raw', async () => {
    const frames = fixtureFrames('px4-mixed-v1v2-junk.bin');
    const unknown = frames.filter((f) => !messageClassOf(f.frame.msgid));
    const samples = (await readStoredSamples(t.service.ctx.db, datasets.get('px4-mixed-v1v2-junk.bin')!)).filter((s) => s.signal.startsWith('mavlink.UNKNOWN_'));
    expect(samples.map((r) => r.signal)).toEqual(unknown.map((f) => `mavlink.UNKNOWN_${f.frame.msgid}.raw`));
    expect(samples.map((r) => r.value)).toEqual(unknown.map((f) => `\\x${Buffer.from(f.frame.payload).toString('hex')}`));
  });
});

describe('time', () => {
  it('keeps raw time near 1970 where the vehicle had no GPS fix, and names each row\'s clock', async () => {
    const datasetId = datasets.get('ardupilot-v2.mavlink')!;
    expect((await stored(datasetId)).min_time.getUTCFullYear()).toBe(1970);
    const samples = await readStoredSamples(t.service.ctx.db, datasetId);
    // SYSTEM_TIME.time_unix_usec is 0 throughout: no row is on GPS time.
    expect([...new Set(samples.map((s) => s.timeSource))].sort()).toEqual(['agent', 'boot']);
    expect(new Set(samples.map((s) => s.bootSession))).toEqual(new Set([1]));
    expect(samples.filter((s) => s.timeSource === 'boot').every((s) => s.bootUs !== null)).toBe(true);
    expect(samples.filter((s) => s.timeSource === 'agent').every((s) => s.bootUs === null)).toBe(true);
  });

  it('stores SYSTEM_TIME with a fix on GPS time, with its boot time', async () => {
    const first = (await readStoredSamples(t.service.ctx.db, datasets.get('arduplane-sitl-vtol.tlog')!)).find((s) => s.signal === 'mavlink.SYSTEM_TIME.time_unix_usec')!;
    const systemTime = frameTime(tlog.find((f) => f.frame.msgid === 2)!.frame)!;
    expect({ timeUs: first.timeUs, bootUs: first.bootUs, timeSource: first.timeSource }).toEqual({ timeUs: Number(systemTime.timeUnixUsec!), bootUs: systemTime.timeBootMs! * 1000, timeSource: 'gps' });
  });
});

describe('channels', () => {
  it('materialises the signal list from the data, with or without experimentId', async () => {
    const datasetId = datasets.get('arduplane-sitl-vtol.tlog')!;
    const list = (extra = '') => t.call('GET', `/api/datasets/channels?datasetId=${datasetId}${extra}`, { key: org.key });
    // The first listing has no experimentId: a flight full of data still lists every signal.
    const response = await list();
    expect(response.status).toBe(200);
    const roll = response.body.find((c: { hypertableColName: string }) => c.hypertableColName === 'mavlink.ATTITUDE.roll');
    expect(roll).toMatchObject({ name: 'mavlink.ATTITUDE.roll', unit: 'rad', dataType: 'float' });
    const signals = new Set((await readStoredSamples(t.service.ctx.db, datasetId)).map((s) => s.signal));
    expect(response.body).toHaveLength(signals.size);
    expect(response.body.find((c: { name: string }) => c.name === 'mavlink.STATUSTEXT.text')).toMatchObject({ dataType: 'string' });
    // Idempotent, and the same list with experimentId.
    expect((await list(`&experimentId=${experimentId}`)).body).toEqual(response.body);
    expect((await list()).body).toEqual(response.body);
  });
});

describe('Query', () => {
  it('returns mavlink.ATTITUDE.roll on aligned time, on 2018-08-08', async () => {
    const datasetId = datasets.get('arduplane-sitl-vtol.tlog')!;
    const attitudes = tlog.filter((f) => f.frame.msgid === 30);
    const response = await client.query({ experimentId, datasetId, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 200 }, { headers: headers() });
    const series = response.series[0]!;
    expect(series.channelId).toBe('mavlink.ATTITUDE.roll');
    expect(series.rawPoints).toBe(BigInt(attitudes.length));
    expect(response.totalRawPoints).toBe(BigInt(attitudes.length));
    expect(series.points.length).toBeGreaterThan(100);
    expect(series.points.length).toBeLessThanOrEqual(200);
    const times = series.points.map((p) => Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000);
    for (const us of times) expect(new Date(us / 1000).toISOString().slice(0, 10)).toBe('2018-08-08');

    // Aligned = boot time + (time_unix_usec − boot time) of the first SYSTEM_TIME with GPS time.
    const st = frameTime(tlog.find((f) => f.frame.msgid === 2)!.frame)!;
    const offset = Number(st.timeUnixUsec!) - st.timeBootMs! * 1000;
    const first = attitudes[0]!;
    expect(times[0]).toBe(frameTime(first.frame)!.timeBootMs! * 1000 + offset);
    expect(series.points[0]!.value).toBe(decodeFrame(first.frame).find((s) => s.signal === 'mavlink.ATTITUDE.roll')!.value);
    expect(times).toEqual([...times].sort((a, b) => a - b));

    // As columns: the same samples, times in µs and values as two arrays.
    const columns = await client.query({ experimentId, datasetId, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 200, columns: true }, { headers: headers() });
    expect(columns.series[0]).toMatchObject({ channelId: 'mavlink.ATTITUDE.roll', rawPoints: series.rawPoints, points: [], timesUs: times, values: series.points.map((p) => p.value) });
  });

  it('counts raw points exactly in an aligned range and returns every sample when the budget allows', async () => {
    const datasetId = datasets.get('arduplane-sitl-vtol.tlog')!;
    const st = frameTime(tlog.find((f) => f.frame.msgid === 2)!.frame)!;
    const offset = Number(st.timeUnixUsec!) - st.timeBootMs! * 1000;
    const aligned = tlog.filter((f) => f.frame.msgid === 30).map((f) => frameTime(f.frame)!.timeBootMs! * 1000 + offset);
    const from = aligned[100]!;
    const to = aligned[150]!;
    const ts = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
    const response = await client.query(
      { datasetId, channelIds: ['mavlink.ATTITUDE.roll', 'mavlink.ATTITUDE.pitch'], from: ts(from), to: ts(to), maxPointsPerChannel: 1000 },
      { headers: headers() },
    );
    const expected = aligned.filter((us) => us >= from && us < to).length;
    expect(response.series.map((s) => Number(s.rawPoints))).toEqual([expected, expected]);
    expect(response.series[0]!.points).toHaveLength(expected);
    expect(response.totalRawPoints).toBe(BigInt(2 * expected));
  });

  it('aligns a capture without GPS time on the agent\'s receive times', async () => {
    const datasetId = datasets.get('ardupilot-v2.mavlink')!;
    const response = await client.query({ datasetId, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 10 }, { headers: headers() });
    const times = response.series[0]!.points.map((p) => Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000);
    expect(times.length).toBeGreaterThan(0);
    // Receive times run from RAW_CAPTURE_START_US over the capture's ~35 s; raw time is in 1970.
    for (const us of times) {
      expect(us).toBeGreaterThanOrEqual(RAW_CAPTURE_START_US - 1_000_000);
      expect(us).toBeLessThan(RAW_CAPTURE_START_US + 40_000_000);
    }
  });

  it('NOT_FOUND naming a signal the dataset does not hold, whether or not the dialect knows it', async () => {
    const datasetId = datasets.get('arduplane-sitl-vtol.tlog')!;
    const unknown = await grpcError(client.query({ datasetId, channelIds: ['mavlink.ATTITUDE.roll', 'mavlink.FOO.bar'] }, { headers: headers() }));
    expect([unknown.code, unknown.rawMessage]).toEqual([Code.NotFound, expect.stringContaining('channel_ids[1]: signal mavlink.FOO.bar is not in this dataset')]);
    // ADSB_VEHICLE is in the dialect but this flight never sent one.
    const absent = await grpcError(client.query({ datasetId, channelIds: ['mavlink.ADSB_VEHICLE.altitude'] }, { headers: headers() }));
    expect([absent.code, absent.rawMessage]).toEqual([Code.NotFound, expect.stringContaining('no frame of this dataset carried it')]);
  });

  it('INVALID_ARGUMENT for a name that is not a signal, or a signal that holds text', async () => {
    const datasetId = datasets.get('arduplane-sitl-vtol.tlog')!;
    const notSignal = await grpcError(client.query({ datasetId, channelIds: ['0'] }, { headers: headers() }));
    expect([notSignal.code, notSignal.rawMessage]).toEqual([Code.InvalidArgument, expect.stringContaining('channel_ids[0]: "0" is not a signal name')]);
    const text = await grpcError(client.query({ datasetId, channelIds: ['mavlink.ATTITUDE.roll', 'mavlink.STATUSTEXT.text'] }, { headers: headers() }));
    expect([text.code, text.rawMessage]).toEqual([Code.InvalidArgument, expect.stringContaining('channel_ids[1]')]);
  });
});

describe('redelivery', () => {
  it('streaming the same frames again leaves the row count unchanged', async () => {
    const datasetId = datasets.get('arduplane-sitl-vtol.tlog')!;
    const before = await stored(datasetId);
    const response = await stream(datasetId, fixturePoints(tlog));
    expect([response.accepted, response.written, response.duplicates]).toEqual([BigInt(tlog.length), 0n, BigInt(tlog.length)]);
    expect(await stored(datasetId)).toEqual(before);
  });

  it('a stream that overlaps what is stored writes only the new frames', async () => {
    const frames = fixtureFrames('ardupilot-v2.mavlink');
    const datasetId = await registerNarrow('overlap');
    const points = fixturePoints(frames);
    await stream(datasetId, points.slice(0, 1000));
    const response = await stream(datasetId, points.slice(600), 300);
    expect([response.written, response.duplicates]).toEqual([BigInt(frames.length - 1000), 400n]);
    const s = await stored(datasetId);
    expect([s.frames, s.rows]).toEqual([frames.length, expectedSamples(frames)]);
    // The same frames stored once or in overlapping parts end in identical rows.
    expect(await readStoredSamples(t.service.ctx.db, datasetId)).toEqual(await readStoredSamples(t.service.ctx.db, datasets.get('ardupilot-v2.mavlink')!));
  });
});

describe('late frames', () => {
  it('a frame below the highest stored frame_seq that was never stored is written, and joins its boot session', async () => {
    const frames = fixtureFrames('px4-mixed-v1v2-junk.bin');
    const points = fixturePoints(frames);
    const datasetId = await registerNarrow('gap');
    const first = await stream(datasetId, [...points.slice(0, 50), ...points.slice(60)]);
    expect(first.written).toBe(BigInt(frames.length - 10));
    const late = await stream(datasetId, points.slice(45, 65));
    expect([late.written, late.duplicates]).toEqual([10n, 10n]);
    const s = await stored(datasetId);
    expect([s.frames, s.rows]).toEqual([frames.length, expectedSamples(frames)]);
  });
});

describe('invalid points', () => {
  const heartbeat = (sysid: number, seq = 0) => buildFrame({ msgid: 0, payload: new Uint8Array(9), crcExtra: 50, sysid, seq });
  const now = Date.UTC(2025, 0, 1) * 1000;

  it('a frame of another system id fails the message, naming the point', async () => {
    const datasetId = datasets.get('arduplane-sitl-vtol.tlog')!;
    const error = await grpcError(stream(datasetId, [framePoint(heartbeat(2), now, 900_000)]));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toMatch(/^message 1, batch\.points\[0\]: frame of MAVLink system id 2, but this dataset's frames are of system id 1/);

    const fresh = await registerNarrow('mixed-sysids');
    const mixed = await grpcError(stream(fresh, [framePoint(heartbeat(1), now, 1), framePoint(heartbeat(3), now, 2)]));
    expect(mixed.rawMessage).toMatch(/^message 1, batch\.points\[1\]: frame of MAVLink system id 3/);
    expect((await stored(fresh)).rows).toBe(0);
  });

  it('a malformed frame fails its message and nothing of that message is written; earlier messages stay', async () => {
    const datasetId = await registerNarrow('malformed');
    const good = Array.from({ length: 5 }, (_, i) => framePoint(heartbeat(1, i), now + i, i + 1));
    const corrupt = heartbeat(1, 9);
    corrupt[corrupt.length - 1] = corrupt[corrupt.length - 1]! ^ 0xff;
    const bad = [...good.map((p, i) => ({ ...p, frameSeq: BigInt(i + 10) })), framePoint(corrupt, now, 20)];
    const error = await grpcError(stream(datasetId, [...good, ...bad], 5));
    expect([error.code, error.rawMessage]).toEqual([Code.InvalidArgument, 'message 3, batch.points[0]: the bytes member fails its MAVLink CRC']);
    expect((await stored(datasetId)).frames).toBe(10);
  });

  it('rejects points that break the format: another value member, a channel_id, no frame_seq, two frames', async () => {
    const datasetId = await registerNarrow('format-rules');
    const frame = heartbeat(1);
    const cases: Array<[PointInit, string]> = [
      [{ timestamp: { seconds: 1n }, type: { case: 'double', value: 1 }, frameSeq: 1n }, 'no other value'],
      [{ ...framePoint(frame, now, 1), channelId: '0' }, 'channel_id must be empty'],
      [framePoint(frame, now, 0), 'frame_seq must be set'],
      [framePoint(new Uint8Array([...frame, ...frame]), now, 1), 'not exactly one complete MAVLink frame'],
      [framePoint(frame.subarray(1), now, 1), 'start byte'],
    ];
    for (const [point, message] of cases) {
      const error = await grpcError(stream(datasetId, [point]));
      expect([error.code, error.rawMessage]).toEqual([Code.InvalidArgument, expect.stringContaining(message)]);
    }
    expect((await stored(datasetId)).rows).toBe(0);
  });
});

describe('boot sessions across streams', () => {
  // ATTITUDE (30, CRC_EXTRA 39): time_boot_ms then six floats.
  const attitude = (bootMs: number, roll: number, compid = 1) => {
    const payload = new Uint8Array(28);
    const view = new DataView(payload.buffer);
    view.setUint32(0, bootMs, true);
    view.setFloat32(4, roll, true);
    return buildFrame({ msgid: 30, payload, crcExtra: 39, compid });
  };
  const base = Date.UTC(2025, 5, 1) * 1000;

  it('opens a new session when boot time jumps back by more than 30 s, also across streams, and aligns each on its own', async () => {
    const datasetId = await registerNarrow('reboot');
    // Boot 1: 100 s..101 s received at base..; reboot, boot 2: 5 s.. received 60 s later.
    const first = [0, 1, 2].map((i) => framePoint(attitude(100_000 + i * 500, i), base + i * 500_000, i + 1));
    const second = [0, 1, 2].map((i) => framePoint(attitude(5_000 + i * 500, 10 + i), base + 60_000_000 + i * 500_000, i + 4));
    const small = [framePoint(attitude(4_000, 20), base + 62_000_000, 7)]; // 2.5 s back: not a reboot
    await stream(datasetId, first);
    await stream(datasetId, second);
    await stream(datasetId, small);
    // Redelivery of old frames changes nothing.
    const again = await stream(datasetId, [...first, ...second]);
    expect(again.duplicates).toBe(6n);
    const samples = await readStoredSamples(t.service.ctx.db, datasetId);
    const sessionOf = new Map(samples.map((s) => [s.frameSeq, s.bootSession]));
    expect([...sessionOf.keys()]).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect([...sessionOf.values()]).toEqual([1, 1, 1, 2, 2, 2, 2]);

    const response = await client.query({ datasetId, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 1000 }, { headers: headers() });
    const points = response.series[0]!.points.map((p) => [Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000, p.value]);
    // Agent alignment per session: receive − boot is constant within each session here.
    expect(points).toEqual([
      [base, 0],
      [base + 500_000, 1],
      [base + 1_000_000, 2],
      [base + 59_000_000, 20],
      [base + 60_000_000, 10],
      [base + 60_500_000, 11],
      [base + 61_000_000, 12],
    ]);
  });

  it('keeps one boot clock per component', async () => {
    const datasetId = await registerNarrow('components');
    // A companion (compid 191) up for an hour interleaved with the autopilot up for 100 s: no reboots.
    const points = [0, 1, 2, 3].flatMap((i) => [
      framePoint(attitude(100_000 + i * 100, i), base + i * 100_000, 2 * i + 1),
      framePoint(attitude(3_600_000 + i * 100, i, 191), base + i * 100_000, 2 * i + 2),
    ]);
    await stream(datasetId, points);
    const sessions = await sql<{ boot_session: number; compid: number }>`
      select boot_session, compid from narrow_boot_sessions where dataset_id = ${datasetId}::uuid order by 1`.execute(t.service.ctx.db);
    expect(sessions.rows).toEqual([
      { boot_session: 1, compid: 1 },
      { boot_session: 2, compid: 191 },
    ]);
  });
});

describe('column types', () => {
  it('keeps 64-bit integers exact: uint64 beyond 2^63 and negative int64 read back as stored', async () => {
    const datasetId = await registerNarrow('int64');
    const systemTime = new Uint8Array(12);
    const st = new DataView(systemTime.buffer);
    st.setBigUint64(0, 2n ** 64n - 1n, true); // not a clock (beyond year 2255): a value only
    st.setUint32(8, 5_000, true);
    const timesync = new Uint8Array(18);
    const ts = new DataView(timesync.buffer);
    ts.setBigInt64(0, -5n, true);
    ts.setBigInt64(8, 2n ** 63n - 1n, true);
    const now = Date.UTC(2025, 0, 1) * 1000;
    await stream(datasetId, [
      framePoint(buildFrame({ msgid: 2, payload: systemTime, crcExtra: crcExtraOf(2)! }), now, 1),
      framePoint(buildFrame({ msgid: 111, payload: timesync, crcExtra: crcExtraOf(111)! }), now, 2),
    ]);
    const values = Object.fromEntries((await readStoredSamples(t.service.ctx.db, datasetId)).map((s) => [s.signal, s.value]));
    expect(values).toMatchObject({
      'mavlink.SYSTEM_TIME.time_unix_usec': '18446744073709551615',
      'mavlink.SYSTEM_TIME.time_boot_ms': 5000,
      'mavlink.TIMESYNC.tc1': -5,
      'mavlink.TIMESYNC.ts1': '9223372036854775807',
    });
    const query = await client.query({ datasetId, channelIds: ['mavlink.SYSTEM_TIME.time_unix_usec', 'mavlink.TIMESYNC.tc1'] }, { headers: headers() });
    expect(query.series.map((s) => s.points.map((p) => p.value))).toEqual([[2 ** 64], [-5]]);
  });

  it('stores a message with more columns than a function has arguments (FILE_TRANSFER_PROTOCOL: uint8[251]) and reads any element', async () => {
    const datasetId = await registerNarrow('ftp');
    const payload = new Uint8Array(254).map((_, i) => (i * 7) & 0xff);
    const frame = buildFrame({ msgid: 110, payload, crcExtra: crcExtraOf(110)!, seq: 0 });
    const now = Date.UTC(2025, 0, 1) * 1000;
    const response = await stream(datasetId, [framePoint(frame, now, 1), framePoint(frame, now + 1000, 2)]);
    expect(response.written).toBe(2n);
    const samples = await readStoredSamples(t.service.ctx.db, datasetId);
    expect(samples).toHaveLength(2 * (3 + 251));
    const last = await client.query({ datasetId, channelIds: ['mavlink.FILE_TRANSFER_PROTOCOL.payload[250]'] }, { headers: headers() });
    expect(last.series[0]!.points.map((p) => p.value)).toEqual([payload[253], payload[253]]);
  });
});

describe('events', () => {
  it('lists annotations of a narrow dataset on the aligned axis', async () => {
    const datasetId = datasets.get('arduplane-sitl-vtol.tlog')!;
    const at = tlog[5000]!.receivedUs;
    const created = await t.call('POST', '/api/datasets/events', {
      key: org.key,
      body: { experimentId, datasetId, events: [{ timestamp: new Date(at / 1000).toISOString(), kind: 'LINK_LOSS', message: 'no frame for 5 s' }] },
    });
    expect(created.status).toBe(201);
    const listed = await t.call('GET', `/api/datasets/events?datasetId=${datasetId}`, { key: org.key });
    const session = await sql<{ gps: number; agent: number }>`
      select gps_offset_us::float8 as gps, agent_offset_us::float8 as agent from narrow_boot_sessions where dataset_id = ${datasetId}::uuid`.execute(t.service.ctx.db);
    const { gps, agent } = session.rows[0]!;
    expect(listed.body).toHaveLength(1);
    expect(listed.body[0].timestamp).toBe(new Date(Math.round((at + gps - agent) / 1000)).toISOString());
    // The event's data says which clock its timestamp is now on, what was recorded, and the shift.
    expect(listed.body[0].data.timeAlignment).toEqual({ clock: 'gps', recordedTimestamp: new Date(at / 1000).toISOString(), shiftMicroseconds: gps - agent, bootSession: 1 });
    // SITL's GPS clock runs ~15 s behind the recorder's: the shift is real, not zero.
    expect(Math.abs(gps - agent)).toBeGreaterThan(10_000_000);
  });
});
