// What the list of flights says of each dataset beside its name, so a flight is found without opening it:
// when it ran, for how long, on what vehicle and autopilot, and how much it holds (GET /api/datasets/summary,
// read once per dataset and again only when its telemetry moves on).
import type { DatasetSummary, Experiment } from '@sortie/contracts';
import type { VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ConsoleApi } from './api.ts';
import { formatDuration } from './format.ts';

/** Summaries read at once: a list of many flights does not open a request per flight in one go. */
const PARALLEL = 4;
/**
 * A flight that is streaming is summarised again at most this often: each summary of a dataset written
 * since the last one scans its tables (telemetry/summary.ts), and its facts lagging half a minute behind a
 * flight marked LIVE mislead nobody.
 */
const LIVE_REREAD_MS = 30_000;

/** `2018-08-08 14:05 UTC`: the day and minute a flight began. */
export function formatStart(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** `23,894 frames`, `1 frame`, `27 samples`, `14,604 messages`. */
export function formatCount(n: number, unit: 'frame' | 'sample' | 'message'): string {
  return `${n.toLocaleString('en-US')} ${unit}${n === 1 ? '' : 's'}`;
}

/**
 * The facts of one summary, in the order the list shows them; a fact not known yet is left out. A flight
 * imported from a vehicle's own log (`log`) stored log messages, not MAVLink frames, as its rows.
 */
export function factsOf(
  s: DatasetSummary,
  log = false,
): Array<{ fact: 'date' | 'duration' | 'vehicle' | 'autopilot' | 'frames' | 'samples'; text: string; title: string }> {
  const facts: ReturnType<typeof factsOf> = [];
  if (s.first && s.last) {
    facts.push({ fact: 'date', text: formatStart(s.first), title: `first sample ${s.first}` });
    facts.push({ fact: 'duration', text: formatDuration((Date.parse(s.last) - Date.parse(s.first)) / 1000), title: `first to last sample, until ${s.last}` });
  }
  if (s.vehicle) {
    facts.push({ fact: 'vehicle', text: s.vehicle.type, title: `MAV_TYPE ${s.vehicle.mavType}` });
    facts.push({ fact: 'autopilot', text: s.vehicle.autopilot, title: `MAV_AUTOPILOT ${s.vehicle.mavAutopilot}` });
  }
  if (s.frames !== null)
    facts.push({ fact: 'frames', text: formatCount(s.frames, log ? 'message' : 'frame'), title: log ? 'log messages stored' : 'MAVLink frames stored' });
  if (s.samples !== null) facts.push({ fact: 'samples', text: formatCount(s.samples, 'sample'), title: 'numeric samples stored' });
  return facts;
}

export function DatasetFacts(props: { summary: DatasetSummary | undefined; log?: boolean }): VNode<any> | null {
  const { summary } = props;
  if (!summary) return null;
  const facts = factsOf(summary, props.log);
  if (facts.length === 0) return <div class="dataset-facts muted">no data yet</div>;
  // Two lines that each read whole in a narrow list: when (date, duration), then what (vehicle, autopilot, size).
  const line = (kinds: readonly string[]) =>
    facts
      .filter((f) => kinds.includes(f.fact))
      .map((f) => (
        <span key={f.fact} data-fact={f.fact} title={f.title}>
          {f.text}
        </span>
      ));
  return (
    <div class="dataset-facts">
      <div class="facts-line">{line(['date', 'duration'])}</div>
      <div class="facts-line">{line(['vehicle', 'autopilot', 'frames', 'samples'])}</div>
    </div>
  );
}

const NONE_FINISHED: ReadonlySet<string> = new Set();

/**
 * The summaries of every listed dataset, by id. Each is read once, and again when the list reports newer
 * telemetry for it (its `lastDataAt`, set while it streams; at most every LIVE_REREAD_MS), so a finished
 * flight costs one request per page. `finished` names flights whose import this page saw end: one listed
 * while its log was still being read is read again then.
 */
export function useSummaries(
  api: ConsoleApi,
  experiments: readonly Experiment[] | undefined,
  finished: ReadonlySet<string> = NONE_FINISHED,
): ReadonlyMap<string, DatasetSummary> {
  const [summaries, setSummaries] = useState<ReadonlyMap<string, DatasetSummary>>(new Map());
  // What was asked for each dataset (its lastDataAt when asked, and when, and whether it was known
  // finished), so nothing is read twice for one state, and a streaming flight at most every LIVE_REREAD_MS.
  const asked = useRef(new Map<string, { stamp: string; at: number; finished: boolean }>());
  useEffect(() => {
    const wanted: Array<{ experimentId: string; datasetId: string; stamp: string }> = [];
    const now = Date.now();
    for (const e of experiments ?? []) {
      for (const d of e.datasets) {
        const stamp = d.lastDataAt ?? '';
        const before = asked.current.get(d.id);
        const done = finished.has(d.id);
        if (before && (before.stamp === stamp || now - before.at < LIVE_REREAD_MS) && (before.finished || !done)) continue;
        asked.current.set(d.id, { stamp, at: now, finished: done });
        wanted.push({ experimentId: e.id, datasetId: d.id, stamp });
      }
    }
    if (wanted.length === 0) return;
    let next = 0;
    const worker = async () => {
      while (next < wanted.length) {
        const w = wanted[next++]!;
        try {
          const summary = await api.summary(w.experimentId, w.datasetId);
          setSummaries((held) => new Map(held).set(w.datasetId, summary));
        } catch {
          // Shown without its facts; asked again when the list next changes for it.
          asked.current.delete(w.datasetId);
        }
      }
    };
    for (let i = 0; i < Math.min(PARALLEL, wanted.length); i++) void worker();
  }, [api, experiments, finished]);
  return summaries;
}
