/** One sample of a Prometheus text exposition. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parse the text format (version 0.0.4) strictly enough for tests: a malformed sample line throws. */
export function parsePrometheusText(text: string): PromSample[] {
  const samples: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, raw] of (match[2] ?? '').matchAll(LABEL)) {
      labels[key!] = raw!.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** Samples of `name` carrying every label in `labels` (others may differ). */
export function samplesOf(samples: readonly PromSample[], name: string, labels: Record<string, string> = {}): PromSample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The sum over `samplesOf`, or undefined when there is no such sample. */
export function valueOf(samples: readonly PromSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samplesOf(samples, name, labels);
  return found.length === 0 ? undefined : found.reduce((sum, s) => sum + s.value, 0);
}
